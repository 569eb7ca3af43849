package protocol

// Device families: the products the vendor ships, as frames name them. The
// vendor's clients find a Minverse and an Inverse3x in the "inverse3" array
// and tell them apart by config.type (its tutorials pick a 0.04 m radius
// when config.type is "minverse"); a wired and a wireless VerseGrip each
// have their own array.

// Family is one product family on the wire.
type Family struct {
	// Name is config.type under the product names ("minverse").
	Name string
	Type DeviceType
	Link Link // grips: wired or wireless; arms: LinkAny
	// Collection is the array of the product names that holds the family.
	Collection string
	// DeviceType is config.device_info.device_type. 4 (Inverse3) is the
	// vendor's; the others are not public and are hapticd's choice
	// (docs/protocol.md, "Device families"). hw.Info.Model carries it.
	DeviceType int
	// Product is the name a person knows the device by, as the vendor
	// writes it ("Minverse"): the dashboard titles a device's card with it,
	// where the wire's names say "inverse3" for every arm.
	Product string
}

// families is never written; the first of each device type is its
// default.
var families = [...]Family{
	{"inverse3", TypeArm, LinkAny, "inverse3", 4, "Inverse3"},
	{"inverse3x", TypeArm, LinkAny, "inverse3", 5, "Inverse3x"},
	{"minverse", TypeArm, LinkAny, "inverse3", 6, "Minverse"},
	{"wireless_verse_grip", TypeGrip, LinkWireless, "wireless_verse_grip", 8, "Wireless VerseGrip"},
	{"verse_grip", TypeGrip, LinkWired, "verse_grip", 7, "VerseGrip"},
}

// Families lists every family (a copy).
func Families() []Family {
	out := make([]Family, len(families))
	copy(out, families[:])
	return out
}

// FamilyOf is the family of a device: an arm's by its device type number
// (an unknown number is an Inverse3, what every arm answered as before
// families), a grip's by its link (unknown counts as wireless).
func FamilyOf(dt DeviceType, link Link, model int) Family {
	switch dt {
	case TypeArm:
		for _, f := range families {
			if f.Type == TypeArm && f.DeviceType == model {
				return f
			}
		}
		return families[0]
	case TypeGrip:
		if link == LinkWired {
			return families[4]
		}
		return families[3]
	}
	return Family{}
}

// ConfigTypes lists the values config.type takes in the collection key:
// the families it holds under the product names, else the key itself.
func ConfigTypes(key string) []string {
	var out []string
	for _, f := range families {
		if f.Collection == key {
			out = append(out, f.Name)
		}
	}
	if out == nil {
		out = []string{key}
	}
	return out
}

// configType is config.type of a device of family in the collection key:
// the family's name where the collection holds it, else the key (the
// reference's names, "arm3" and "grip", say no family).
func configType(key, family string) string {
	for i := range families {
		if families[i].Name == family && families[i].Collection == key {
			return family
		}
	}
	return key
}

// StreamingMode is config.streaming_mode, how the device streams to the
// service: "USB", what the vendor's 3.5 inventories show for an Inverse3.
// Simulated arms report it too, so clients that check it see a device.
const StreamingMode = "USB"

// Calibration states (state.calibration_state). Only "2 or more means
// calibrated" is public (a client's fallback for status.calibrated); the
// other values are hapticd's choice.
const (
	CalibrationNone       = 0 // not calibrated
	CalibrationInProgress = 1 // calibrating
	CalibrationDone       = 2 // calibrated
)
