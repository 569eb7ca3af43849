package sim

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/hapticd/hapticd/hw"
)

// Family is a product family the simulator builds: three arms and two
// grips, as the vendor ships them. Its figures (FamilySpec) decide the
// simulated device's identity, force limit and workspace.
type Family uint8

const (
	FamilyInverse3          Family = iota + 1 // the Inverse3 arm
	FamilyMinverse                            // the smaller Minverse arm
	FamilyInverse3x                           // the Inverse3x arm
	FamilyVerseGrip                           // the wired VerseGrip (a cable to the host)
	FamilyWirelessVerseGrip                   // the wireless VerseGrip (through a radio dongle)
)

// FamilySpec is what a family is: its wire name, kind and link, the
// vendor's device type number, and the figures a simulated device of it is
// built to. Where the vendor publishes no figure the value is hapticd's
// documented choice (docs/protocol.md, "Device families").
type FamilySpec struct {
	Family Family
	// Name is the family's wire name: config.type for arms, the device
	// array (and config.type) for grips.
	Name string
	Kind hw.Kind
	Link hw.Link // grips: wired or wireless; arms: LinkUnknown
	// Model is the vendor's device type number (device_info.device_type),
	// reported as hw.Info.Model.
	Model uint8
	// MaxForceN is the force limit (0 for grips: no actuator).
	MaxForceN float64
	// WorkspaceRadiusM and WorkspaceCenterM are the workspace sphere in
	// the device frame (arms only).
	WorkspaceRadiusM float64
	WorkspaceCenterM hw.Vec3
	// IndexBase is where the family's indices start in the id space of
	// its kind (ArmID, GripID): each family owns a quarter of the 16-bit
	// space, so two families never share an id or a UUID.
	IndexBase int
	// FirmwareVersion and HardwareVersion are what a simulated or
	// emulated device of the family reports (device_info.major_version and
	// minor_version).
	FirmwareVersion, HardwareVersion uint8
}

// FamilyIndexSpan is how many devices of one family get distinct ids: a
// quarter of the 16-bit id space.
const FamilyIndexSpan = 1 << 14

// OtherIndexBase starts the last quarter of the index space, which no
// family uses for either kind: devices that must never share an id with a
// simulated one (hw/emulator's) take their ids from indices from there on.
const OtherIndexBase = 3 * FamilyIndexSpan

// Device type numbers. 4 (Inverse3) is the vendor's, seen in its 3.5
// inventories; the others are not public and are hapticd's choice. The
// arms' are hw's, which the serial driver reads its figures by.
const (
	ModelInverse3          = hw.ModelInverse3
	ModelInverse3x         = hw.ModelInverse3x
	ModelMinverse          = hw.ModelMinverse
	ModelVerseGrip         = 7
	ModelWirelessVerseGrip = 8
)

// The versions simulated and emulated devices report: the vendor's 3.5
// inventory shows an Inverse3 at major_version 7, minor_version 4, and
// clients (sawHaplyService) read them. No other family's are public; they
// report the same.
const (
	SimFirmwareVersion = 7
	SimHardwareVersion = 4
)

// Minverse figures (hw's, where they are explained), so that a simulated
// Minverse and a real one have the same.
const (
	MinverseWorkspaceRadiusM = hw.MinverseWorkspaceRadiusM
	MinverseMaxForceN        = hw.MinverseMaxForceN
)

// MinverseWorkspaceCenterM is the Minverse's workspace centre in its device
// frame.
func MinverseWorkspaceCenterM() hw.Vec3 { return hw.MinverseWorkspaceCenterM() }

// familySpecs is indexed by Family; never written. The Inverse3 keeps index
// base 0 and the wireless grip too, so devices made before families existed
// keep their ids (and their stored configuration).
var familySpecs = [...]FamilySpec{
	FamilyInverse3: {FamilyInverse3, "inverse3", hw.KindArm, hw.LinkUnknown, ModelInverse3,
		hw.ArmMaxForceN, hw.ArmWorkspaceRadiusM, hw.ArmWorkspaceCenterM(), 0, SimFirmwareVersion, SimHardwareVersion},
	FamilyMinverse: {FamilyMinverse, "minverse", hw.KindArm, hw.LinkUnknown, ModelMinverse,
		MinverseMaxForceN, MinverseWorkspaceRadiusM, MinverseWorkspaceCenterM(), 2 * FamilyIndexSpan, SimFirmwareVersion, SimHardwareVersion},
	// The vendor's tutorials give the Inverse3x the Inverse3's 0.10 m
	// radius; nothing public says its force differs.
	FamilyInverse3x: {FamilyInverse3x, "inverse3x", hw.KindArm, hw.LinkUnknown, ModelInverse3x,
		hw.ArmMaxForceN, hw.ArmWorkspaceRadiusM, hw.ArmWorkspaceCenterM(), FamilyIndexSpan, SimFirmwareVersion, SimHardwareVersion},
	FamilyVerseGrip: {FamilyVerseGrip, "verse_grip", hw.KindGrip, hw.LinkWired, ModelVerseGrip,
		0, 0, hw.Vec3{}, 2 * FamilyIndexSpan, SimFirmwareVersion, SimHardwareVersion},
	FamilyWirelessVerseGrip: {FamilyWirelessVerseGrip, "wireless_verse_grip", hw.KindGrip, hw.LinkWireless, ModelWirelessVerseGrip,
		0, 0, hw.Vec3{}, 0, SimFirmwareVersion, SimHardwareVersion},
}

// Families lists every family's spec in Family order (a copy).
func Families() []FamilySpec {
	out := make([]FamilySpec, 0, len(familySpecs)-1)
	for _, s := range familySpecs[1:] {
		out = append(out, s)
	}
	return out
}

// Spec is f's figures; an unknown family gets the Inverse3's.
func (f Family) Spec() FamilySpec {
	if f == 0 || int(f) >= len(familySpecs) {
		return familySpecs[FamilyInverse3]
	}
	return familySpecs[f]
}

// Known reports whether f is one of the families (not zero, not past the
// last).
func (f Family) Known() bool { return f != 0 && int(f) < len(familySpecs) }

func (f Family) String() string {
	if f == 0 || int(f) >= len(familySpecs) {
		return fmt.Sprintf("family(%d)", uint8(f))
	}
	return familySpecs[f].Name
}

// FamilyOf is the family of kind whose device type number is model, as a
// firmware's wake-up or grip info names it. A number no family of kind has
// (0: not reported) is the kind's common product: the Inverse3, or the
// wireless VerseGrip.
func FamilyOf(kind hw.Kind, model uint8) Family {
	for f := FamilyInverse3; int(f) < len(familySpecs); f++ {
		if s := familySpecs[f]; s.Kind == kind && s.Model == model {
			return f
		}
	}
	if kind == hw.KindGrip {
		return FamilyWirelessVerseGrip
	}
	return FamilyInverse3
}

// ParseFamily parses a family's wire name ("minverse").
func ParseFamily(s string) (Family, error) {
	for f := FamilyInverse3; int(f) < len(familySpecs); f++ {
		if familySpecs[f].Name == s {
			return f, nil
		}
	}
	return 0, fmt.Errorf("hw/sim: unknown device family %q; use %s", s, strings.Join(familyNames(), ", "))
}

func familyNames() []string {
	var names []string
	for _, s := range familySpecs[1:] {
		names = append(names, s.Name)
	}
	return names
}

// FleetEntry is how many devices of one family to simulate.
type FleetEntry struct {
	Family Family
	Count  int
}

// Fleet is what to simulate: a count per family, in the order given. It is
// a flag.Value: "inverse3=2,minverse=1,verse_grip=1" (the --sim flag).
type Fleet []FleetEntry

// String is the flag spelling, "inverse3=2,minverse=1".
func (fl Fleet) String() string {
	parts := make([]string, 0, len(fl))
	for _, e := range fl {
		parts = append(parts, e.Family.String()+"="+strconv.Itoa(e.Count))
	}
	return strings.Join(parts, ",")
}

// Set parses s with ParseFleet and adds it to fl; a family given twice
// (here or in an earlier Set) is an error.
func (fl *Fleet) Set(s string) error {
	add, err := ParseFleet(s)
	if err != nil {
		return err
	}
	for _, e := range add {
		if fl.has(e.Family) {
			return fmt.Errorf("hw/sim: family %s is given twice; give each family once", e.Family)
		}
		*fl = append(*fl, e)
	}
	return nil
}

func (fl Fleet) has(f Family) bool {
	for _, e := range fl {
		if e.Family == f {
			return true
		}
	}
	return false
}

// Count is how many devices of f the fleet holds.
func (fl Fleet) Count(f Family) int {
	n := 0
	for _, e := range fl {
		if e.Family == f {
			n += e.Count
		}
	}
	return n
}

// ParseFleet parses comma-separated family=count pairs
// ("inverse3=2,minverse=1"). Counts are 0..FamilyIndexSpan; each family
// once. The empty string is an empty fleet.
func ParseFleet(s string) (Fleet, error) {
	var fl Fleet
	for _, pair := range strings.Split(s, ",") {
		pair = strings.TrimSpace(pair)
		if pair == "" {
			continue
		}
		name, count, ok := strings.Cut(pair, "=")
		name, count = strings.TrimSpace(name), strings.TrimSpace(count)
		if !ok {
			return nil, fmt.Errorf("hw/sim: %q is not family=count; write e.g. minverse=1", pair)
		}
		f, err := ParseFamily(name)
		if err != nil {
			return nil, err
		}
		n, err := strconv.Atoi(count)
		if err != nil || n < 0 || n > FamilyIndexSpan {
			return nil, fmt.Errorf("hw/sim: count %q for %s must be a whole number in 0..%d", count, name, FamilyIndexSpan)
		}
		if fl.has(f) {
			return nil, fmt.Errorf("hw/sim: family %s is given twice; give each family once", name)
		}
		fl = append(fl, FleetEntry{Family: f, Count: n})
	}
	return fl, nil
}

// Sorted is the fleet in Family order (arms first, then grips), the order
// devices are created in, so the same flag gives the same device order
// however it is written.
func (fl Fleet) Sorted() Fleet {
	out := append(Fleet(nil), fl...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Family < out[j].Family })
	return out
}

// NewDevice makes the index-th simulated device of family f (index counts
// within the family, from 0). Arms get ArmOptions, grips GripOptions, built
// from o: Index is replaced, everything else is kept.
func NewDevice(f Family, index int, o ArmOptions) hw.Driver {
	spec := f.Spec()
	if spec.Kind == hw.KindGrip {
		return NewGrip(GripOptions{Family: f, Index: index, PeriodS: o.PeriodS, Motion: o.Motion, Seed: o.Seed})
	}
	o.Family, o.Index = f, index
	return NewArm(o)
}

// idIndex is the index in the kind's id space of the index-th device of a
// family: its base plus the index. Families' ids are distinct while each
// has fewer than FamilyIndexSpan devices (counting --sim-index-base).
func idIndex(spec FamilySpec, index int) int { return spec.IndexBase + index }

// armFamily is f's spec when f is an arm family, else the Inverse3's.
func armFamily(f Family) FamilySpec {
	if s := f.Spec(); s.Kind == hw.KindArm {
		return s
	}
	return familySpecs[FamilyInverse3]
}

// gripFamily is f's spec when f is a grip family; otherwise link decides
// (GripOptions.Link, from before families): wired or, by default, wireless.
func gripFamily(f Family, link hw.Link) FamilySpec {
	if f != 0 && int(f) < len(familySpecs) && familySpecs[f].Kind == hw.KindGrip {
		return familySpecs[f]
	}
	if link == hw.LinkWired {
		return familySpecs[FamilyVerseGrip]
	}
	return familySpecs[FamilyWirelessVerseGrip]
}
