package protocol

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/hapticd/hapticd/protocol/space"
)

// Wire value types, shared with protocol/space so that both packages speak
// the same vectors.
type (
	Vec3      = space.Vec3
	Quat      = space.Quat
	Angles3   = space.Angles3
	Transform = space.Transform
)

// DeviceType is a device family as the service tells devices apart (PROTOCOL
// 1.3). Its wire names come from the naming table (TypeTable), not from it.
type DeviceType uint8

const (
	TypeArm  DeviceType = iota + 1 // a 3-DOF force-feedback arm
	TypeGrip                       // a handheld grip
)

// typeKeys is indexed by DeviceType; never written. These are the
// reference's names: logs, stored file names and error texts use them
// whatever names the wire carries.
var typeKeys = [...]string{TypeArm: "arm3", TypeGrip: "grip"}

// Key is the type's reference name ("arm3", "grip"), for logs, file names
// and messages. Frames, events and HTTP answers write TypeTable.Name.
func (t DeviceType) Key() string {
	if int(t) < len(typeKeys) {
		return typeKeys[t]
	}
	return ""
}

func (t DeviceType) String() string {
	if k := t.Key(); k != "" {
		return k
	}
	return fmt.Sprintf("DeviceType(%d)", uint8(t))
}

// Family is the product family a device belongs to: "inverse" for arms,
// "verse_grip" for grips (events' device_family, and the HTTP family
// selectors "*inverse" and "*verse_grip").
func (t DeviceType) Family() string {
	switch t {
	case TypeArm:
		return "inverse"
	case TypeGrip:
		return "verse_grip"
	}
	return ""
}

// deviceTypes lists the types in wire order; never written.
var deviceTypes = [...]DeviceType{TypeArm, TypeGrip}

// Link is how a grip reaches the host. The product names tell wired and
// wireless grips apart; the reference's names do not. Arms have LinkAny.
type Link uint8

const (
	LinkAny      Link = iota // an arm; as a name's filter: any link
	LinkWireless             // through a radio dongle (and simulated grips)
	LinkWired                // a cable to the host
)

// admits reports whether a name that filters on l covers a device with
// link dev. A grip whose link is unknown (LinkAny) counts as wireless, the
// common product.
func (l Link) admits(dev Link) bool {
	if dev == LinkAny {
		dev = LinkWireless
	}
	return l == LinkAny || l == dev
}

// Naming chooses the names the service writes (--type-names): in frames,
// inventories, GET /devices, events and HTTP answers. Input accepts every
// known name whatever the naming.
type Naming uint8

const (
	// NamingHaply writes the product names existing clients look for:
	// inverse3, verse_grip (wired grips), wireless_verse_grip.
	NamingHaply Naming = iota
	// NamingReference writes the reference's names: arm3 and grip.
	NamingReference
)

// namingNames is indexed by Naming; never written.
var namingNames = [...]string{NamingHaply: "haply", NamingReference: "reference"}

func (n Naming) String() string {
	if int(n) < len(namingNames) {
		return namingNames[n]
	}
	return fmt.Sprintf("Naming(%d)", uint8(n))
}

// ParseNaming parses the --type-names flag: "haply" or "reference".
func ParseNaming(s string) (Naming, error) {
	for n, name := range namingNames {
		if s == name {
			return Naming(n), nil
		}
	}
	return 0, fmt.Errorf("protocol: type names %q: use haply (inverse3, verse_grip, wireless_verse_grip) or reference (arm3, grip)", s)
}

// Collection is one device array a frame carries: its key and the devices
// it holds.
type Collection struct {
	Key  string
	Type DeviceType
	Link Link // grips only: which grips; LinkAny for every one
}

// Holds reports whether a device of type dt and link belongs in c.
func (c Collection) Holds(dt DeviceType, link Link) bool {
	return c.Type == dt && c.Link.admits(link)
}

// The naming table: one place decides every name on the wire.
var (
	// outputs is indexed by Naming: the collections a frame carries, in
	// order, each device in exactly one of them. Never written.
	outputs = [...][]Collection{
		NamingHaply: {
			{"inverse3", TypeArm, LinkAny},
			{"verse_grip", TypeGrip, LinkWired},
			{"wireless_verse_grip", TypeGrip, LinkWireless},
		},
		NamingReference: {
			{"arm3", TypeArm, LinkAny},
			{"grip", TypeGrip, LinkAny},
		},
	}
	// knownNames are accepted as type keys under either naming. A name
	// with a link filter selects only such grips where an index counts
	// devices (HTTP paths); ids match any grip, since clients send one
	// grip's entry under several names. Never written.
	knownNames = [...]Collection{
		{"arm3", TypeArm, LinkAny},
		{"inverse3", TypeArm, LinkAny},
		{"grip", TypeGrip, LinkAny},
		{"verse_grip", TypeGrip, LinkWired},
		{"wireless_verse_grip", TypeGrip, LinkWireless},
		{"custom_verse_grip", TypeGrip, LinkAny},
	}
)

// TypeTable is the naming table: it resolves every known type name and the
// aliases given with --type-alias, and names what the service writes. It is
// immutable after NewTypeTable and safe for concurrent use. A nil
// *TypeTable behaves as NewTypeTable(nil): product names, no aliases.
type TypeTable struct {
	naming  Naming
	resolve map[string]Collection          // every accepted name
	keys    [len(deviceTypes) + 1][]string // indexed by DeviceType: accepted names, sorted
}

// defaultTable is the table a nil *TypeTable stands for (product names, no
// aliases); never written. NewTypeTable cannot fail without aliases.
var defaultTable, _ = NewTypeTable(nil)

// orDefault is t, or defaultTable when t is nil.
func (t *TypeTable) orDefault() *TypeTable {
	if t == nil {
		return defaultTable
	}
	return t
}

// ParseTypeAliases parses the --type-alias flag: comma-separated
// alias=type pairs ("haptic=arm3,handle=grip"). An empty flag gives an
// empty map. Targets are checked by NewTypeTable.
func ParseTypeAliases(flag string) (map[string]string, error) {
	out := map[string]string{}
	flag = strings.TrimSpace(flag)
	if flag == "" {
		return out, nil
	}
	for _, pair := range strings.Split(flag, ",") {
		pair = strings.TrimSpace(pair)
		if pair == "" {
			continue
		}
		alias, target, ok := strings.Cut(pair, "=")
		alias, target = strings.TrimSpace(alias), strings.TrimSpace(target)
		if !ok || alias == "" || target == "" {
			return nil, fmt.Errorf("protocol: type alias %q is not alias=type: write e.g. haptic=arm3", pair)
		}
		if prev, dup := out[alias]; dup && prev != target {
			return nil, fmt.Errorf("protocol: type alias %q is given twice (%s and %s): keep one", alias, prev, target)
		}
		out[alias] = target
	}
	return out, nil
}

// NewTypeTable is NewNamedTypeTable with the default naming (NamingHaply).
func NewTypeTable(aliases map[string]string) (*TypeTable, error) {
	return NewNamedTypeTable(NamingHaply, aliases)
}

// NewNamedTypeTable builds the naming table: naming decides what is written;
// aliases (alias → type name) add accepted input names. An alias must name
// a type (arm3, grip or any known name), must not shadow another name or
// "session", and must be a plain key (letters, digits, '_', '-', '.'). An
// alias that repeats a known name of the same type adds nothing.
func NewNamedTypeTable(naming Naming, aliases map[string]string) (*TypeTable, error) {
	if int(naming) >= len(outputs) {
		return nil, fmt.Errorf("protocol: unknown naming %v", naming)
	}
	t := &TypeTable{naming: naming, resolve: map[string]Collection{}}
	for _, n := range knownNames {
		t.resolve[n.Key] = n
	}
	names := make([]string, 0, len(aliases))
	for a := range aliases {
		names = append(names, a)
	}
	sort.Strings(names)
	var errs []error
	for _, alias := range names {
		target := aliases[alias]
		dt, ok := baseType(target)
		prev, shadow := t.resolve[alias]
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("protocol: type alias %s=%s: target must be a type name such as arm3 or grip", alias, target))
		case alias == "session" || alias == keepAlive:
			errs = append(errs, fmt.Errorf("protocol: type alias %q would shadow the %s part of messages: pick another name", alias, alias))
		case !validAliasName(alias):
			errs = append(errs, fmt.Errorf("protocol: type alias %q: use letters, digits, '_', '-' or '.'", alias))
		case shadow && prev.Type == dt:
			// Already known (inverse3=arm3 from before names were built in).
		case shadow:
			errs = append(errs, fmt.Errorf("protocol: type alias %q would shadow a device type: pick another name", alias))
		default:
			t.resolve[alias] = Collection{Key: alias, Type: dt, Link: LinkAny}
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	for key, c := range t.resolve {
		t.keys[c.Type] = append(t.keys[c.Type], key)
	}
	for _, dt := range deviceTypes {
		sort.Strings(t.keys[dt])
	}
	return t, nil
}

// baseType resolves an alias target: a type's reference name or any known
// name of it.
func baseType(key string) (DeviceType, bool) {
	for _, n := range knownNames {
		if n.Key == key {
			return n.Type, true
		}
	}
	return 0, false
}

func validAliasName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// Resolve maps an accepted type name to its device type.
func (t *TypeTable) Resolve(key string) (DeviceType, bool) {
	r, ok := t.orDefault().resolve[key]
	return r.Type, ok
}

// ResolveName is Resolve with the name's link filter (see Collection).
func (t *TypeTable) ResolveName(key string) (Collection, bool) {
	r, ok := t.orDefault().resolve[key]
	return r, ok
}

// Lookup is Resolve for a key held in bytes (as a decoder sees it); it also
// returns the interned key string, so that decoders do not allocate one per
// message.
func (t *TypeTable) Lookup(key []byte) (DeviceType, string, bool) {
	r, ok := t.orDefault().resolve[string(key)] // no allocation: map index by converted bytes
	return r.Type, r.Key, ok
}

// Keys lists every name accepted for dt, sorted. The slice is shared: do
// not modify it.
func (t *TypeTable) Keys(dt DeviceType) []string {
	if int(dt) >= len(typeKeys) {
		return nil
	}
	return t.orDefault().keys[dt]
}

// Types lists the device types in wire order (a copy).
func (t *TypeTable) Types() []DeviceType {
	out := make([]DeviceType, len(deviceTypes))
	copy(out, deviceTypes[:])
	return out
}

// Naming is the naming the table writes.
func (t *TypeTable) Naming() Naming { return t.orDefault().naming }

// Collections lists the device arrays a frame carries, in order; every
// device belongs to exactly one. The slice is shared: do not modify it.
func (t *TypeTable) Collections() []Collection { return outputs[t.orDefault().naming] }

// Name is the name the service writes for a device of type dt and link: its
// collection's key, also config.type, events' device_type and HTTP answers'.
func (t *TypeTable) Name(dt DeviceType, link Link) string {
	for _, c := range t.Collections() {
		if c.Holds(dt, link) {
			return c.Key
		}
	}
	return dt.Key()
}
