package hid

// DeviceInfo describes a RawHID interface found by Enumerate.
type DeviceInfo struct {
	Path             string
	VID, PID         uint16
	Serial, Product  string
	UsagePage, Usage uint16 // 0 where the platform does not report them (Linux)
	Interface        int
}

// TeensyRawHID is the USB id of a Teensy in RawHID mode; on Linux, where
// usage pages are not reported, it is what Enumerate matches.
const (
	TeensyRawHIDVID = 0x16c0
	TeensyRawHIDPID = 0x0486
)

// matches says whether d is a RawHID interface of this layout: by usage
// where the platform reports it, else by the Teensy RawHID id.
func (d *DeviceInfo) matches() bool {
	if d.UsagePage != 0 || d.Usage != 0 {
		return d.UsagePage == UsagePage && d.Usage == Usage
	}
	return d.VID == TeensyRawHIDVID && d.PID == TeensyRawHIDPID
}
