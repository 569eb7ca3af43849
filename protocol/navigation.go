package protocol

import (
	"math"

	"github.com/hapticd/hapticd/protocol/space"
)

// Navigation is the session-scoped "navigation" entry (the vendor's 3.5
// Bubble Navigation, MODULES 1): the cursor drives the session's workspace.
// Inside the bubble (an SDF shape around Center, in mount space) it moves
// freely with light damping; in the velocity zone, between the bubble's
// surface and VelocityZoneWidthM beyond it, its depth d becomes a velocity
// that slides the workspace,
//
//	speed = min(MaxSpeedMps, SpeedGainPerS · width · ease(d / width))
//
// along the bubble's outward normal (ease(u) = u, u² or u³; with "linear"
// the speed is SpeedGainPerS·d), and a light spring
// (VelocityZoneStiffnessNPerM·d) tells the hand how deep it is; beyond the
// zone is a wall (WallStiffnessNPerM, WallDampingNsPerM). Zone changes
// need the cursor to cross a boundary by Hysteresis. The vendor names mode,
// bubble, center.position, shape and collision_detection; every other
// field is hapticd's (the vendor's are not public).
type Navigation struct {
	Mode   string // NavigationOff or NavigationBubble
	Bubble BubbleNavigation
}

// Navigation modes.
const (
	NavigationOff    = "off"
	NavigationBubble = "bubble"
)

var navigationModes = []string{NavigationOff, NavigationBubble}

// Center modes: "fixed" keeps the centre at PositionM; "drift" starts it
// there and moves it toward the cursor at DriftRateMps while the cursor is
// in the dead zone; "cursor" puts it where the cursor is when the
// navigation starts, PositionM being an offset from there, so that turning
// the bubble on never finds the hand out in its wall. A shape whose centre
// is outside it (a torus) drifts its core to the cursor, and starts with
// the cursor in the middle of its core. A center without a position
// defaults to "cursor", one with a position to "fixed".
const (
	CenterFixed  = "fixed"
	CenterDrift  = "drift"
	CenterCursor = "cursor"
)

var centerModes = []string{CenterFixed, CenterDrift, CenterCursor}

// navigationEasings are the velocity laws.
var navigationEasings = []string{"linear", "quadratic", "cubic"}

// NavigationModes, NavigationCenterModes and NavigationEasings list the
// accepted values (copies).
func NavigationModes() []string       { return append([]string(nil), navigationModes...) }
func NavigationCenterModes() []string { return append([]string(nil), centerModes...) }
func NavigationEasings() []string     { return append([]string(nil), navigationEasings...) }

// BubbleCenter places the bubble: PositionM in mount space (device frame
// through basis and mount, before the workspace transform), an offset from
// the cursor's position at the navigation's start in mode "cursor".
type BubbleCenter struct {
	PositionM    Vec3
	Mode         string
	DriftRateMps float64
}

// BubbleNavigation is the bubble's configuration.
type BubbleNavigation struct {
	Center                     BubbleCenter
	Shape                      SDFShape
	VelocityZoneWidthM         float64
	SpeedGainPerS              float64
	MaxSpeedMps                float64
	Easing                     string
	DeadZoneDampingNsPerM      float64
	VelocityZoneStiffnessNPerM float64
	WallStiffnessNPerM         float64
	WallDampingNsPerM          float64
	HysteresisM                float64 // collision_detection.hysteresis

	// ShapeFromArm and ZoneWidthFromArm mark Shape and VelocityZoneWidthM
	// as defaults no client gave: the device sizes them from its arm's
	// workspace (SizedFor) before they are in force, stored or answered, so
	// the default bubble fits a small arm too. Never encoded.
	ShapeFromArm, ZoneWidthFromArm bool
}

// Ranges of the navigation entry.
const (
	NavCenterMax          = 1.0   // m, each component of center.position
	NavShapeMax           = 0.5   // m, every length of the bubble's shape
	NavZoneWidthMin       = 0.001 // m
	NavZoneWidthMax       = 0.5   // m
	NavSpeedGainMax       = 100.0 // 1/s
	NavMaxSpeedMax        = 10.0  // m/s
	NavDriftRateMax       = 1.0   // m/s
	NavZoneStiffnessMax   = 2000.0
	NavHysteresisMax      = 0.05 // m
	navWallStiffnessLimit = EffectStiffnessMax
)

// The default bubble's size as shares of the arm's workspace radius: a
// sphere of half of it with a velocity zone of 0.3 of it (5 cm and 3 cm on
// an Inverse3's 0.1 m, 2.5 cm and 1.5 cm on a Minverse's 0.05 m), so the
// hand reaches the velocity zone and the wall inside any arm's workspace.
const (
	DefaultBubbleRadiusShare    = 0.5
	DefaultBubbleZoneWidthShare = 0.3
)

// DefaultNavigation is navigation off, with the bubble's defaults: a sphere
// centred where the cursor is when the navigation starts, a velocity zone,
// 4 m/s per m up to 0.5 m/s, 1 N·s/m in the dead zone, 50 N/m in the
// velocity zone and an 800 N/m, 4 N·s/m wall. The sphere and the zone are
// an Inverse3's (5 cm, 3 cm) until SizedFor fits them to the arm.
func DefaultNavigation() Navigation {
	return Navigation{Mode: NavigationOff, Bubble: BubbleNavigation{
		ShapeFromArm:               true,
		ZoneWidthFromArm:           true,
		Center:                     BubbleCenter{Mode: CenterCursor},
		Shape:                      SDFShape{Primitive: "sphere", Params: SDFParams{R: 0.05}},
		VelocityZoneWidthM:         0.03,
		SpeedGainPerS:              4,
		MaxSpeedMps:                0.5,
		Easing:                     "linear",
		DeadZoneDampingNsPerM:      1,
		VelocityZoneStiffnessNPerM: 50,
		WallStiffnessNPerM:         800,
		WallDampingNsPerM:          4,
		HysteresisM:                0.002,
	}}
}

// SizedFor is n with the sizes no client gave (ShapeFromArm,
// ZoneWidthFromArm) fitted to an arm whose workspace sphere has radius
// workspaceRadiusM: a sphere of DefaultBubbleRadiusShare of it and a zone
// of DefaultBubbleZoneWidthShare, to 0.1 mm, within the entry's ranges.
// Sizes a client gave are kept. Without a radius (not positive or not
// finite) the Inverse3's defaults stay. The result marks nothing.
func (n Navigation) SizedFor(workspaceRadiusM float64) Navigation {
	b := &n.Bubble
	known := workspaceRadiusM > 0 && !math.IsInf(workspaceRadiusM, 1)
	if b.ShapeFromArm && known {
		r := math.Min(roundToTenthMM(DefaultBubbleRadiusShare*workspaceRadiusM), NavShapeMax)
		b.Shape = SDFShape{Primitive: "sphere", Params: SDFParams{R: r}}
	}
	if b.ZoneWidthFromArm && known {
		w := roundToTenthMM(DefaultBubbleZoneWidthShare * workspaceRadiusM)
		b.VelocityZoneWidthM = math.Max(NavZoneWidthMin, math.Min(w, NavZoneWidthMax))
	}
	b.ShapeFromArm, b.ZoneWidthFromArm = false, false
	return n
}

// roundToTenthMM rounds a length in metres to 0.1 mm, so a share of 0.1 m
// reads 0.03, not 0.030000000000000002.
func roundToTenthMM(m float64) float64 { return math.Round(m*1e4) / 1e4 }

// Enabled reports whether the bubble acts.
func (n Navigation) Enabled() bool { return n.Mode == NavigationBubble }

func (Navigation) Key() Key { return KeyNavigation }
func (Navigation) entry()   {}

// AppendJSON appends the whole entry, every field given. The zero
// Navigation (a config built without DefaultSessionConfig) appends the
// default.
func (n Navigation) AppendJSON(dst []byte) []byte {
	if n.Mode == "" {
		n = DefaultNavigation()
	}
	b := &n.Bubble
	dst = append(dst, `{"mode":`...)
	dst = AppendString(dst, n.Mode)
	dst = append(dst, `,"bubble":{"center":{"position":`...)
	dst = appendVec3(dst, exact, b.Center.PositionM)
	dst = append(dst, `,"mode":`...)
	dst = AppendString(dst, b.Center.Mode)
	dst = append(dst, `,"drift_rate":`...)
	dst = AppendFloat(dst, b.Center.DriftRateMps)
	dst = append(dst, `},"shape":`...)
	dst = b.Shape.AppendJSON(dst)
	for _, f := range [...]struct {
		name string
		v    float64
	}{
		{"velocity_zone_width", b.VelocityZoneWidthM},
		{"speed_gain", b.SpeedGainPerS},
		{"max_speed", b.MaxSpeedMps},
	} {
		dst = append(append(append(dst, ",\""...), f.name...), "\":"...)
		dst = AppendFloat(dst, f.v)
	}
	dst = append(dst, `,"easing":`...)
	dst = AppendString(dst, b.Easing)
	for _, f := range [...]struct {
		name string
		v    float64
	}{
		{"dead_zone_damping", b.DeadZoneDampingNsPerM},
		{"velocity_zone_stiffness", b.VelocityZoneStiffnessNPerM},
		{"wall_stiffness", b.WallStiffnessNPerM},
		{"wall_damping", b.WallDampingNsPerM},
	} {
		dst = append(append(append(dst, ",\""...), f.name...), "\":"...)
		dst = AppendFloat(dst, f.v)
	}
	dst = append(dst, `,"collision_detection":{"hysteresis":`...)
	dst = AppendFloat(dst, b.HysteresisM)
	return append(dst, "}}}"...)
}

// MarshalJSON is AppendJSON.
func (n Navigation) MarshalJSON() ([]byte, error) { return n.AppendJSON(nil), nil }

// decodeNavigation decodes the entry. Members left out take their defaults
// (DefaultNavigation), so {"mode": "bubble"} turns the default bubble on;
// but a body with neither mode nor bubble is refused: it says nothing of
// the navigation (a wrapper such as {"navigation": {...}}, a misspelling),
// and taking it as the defaults would turn navigation off unasked. DELETE
// is the way to the defaults.
func decodeNavigation(v Value, at *pathSeg, w warnings) (Navigation, *Error) {
	out := DefaultNavigation()
	if err := expectObject(v, at, `{"mode": "bubble", "bubble": {"shape": {"primitive": "sphere", "parameters": {"r": 0.05}}}}`); err != nil {
		return out, err
	}
	if c := v.Member("config"); c.Exists() && !v.Member("mode").Exists() && !v.Member("bubble").Exists() {
		// What GET answers ({"config", "state", "status"}) posted back
		// after an edit: its config is the entry, the rest is read-only.
		cat := at.child("config")
		return decodeNavigation(c, &cat, w)
	}
	said := false
	for it := v.Members(); it.Next(); {
		val := it.Value()
		switch {
		case (it.KeyIs("mode") || it.KeyIs("bubble")) && it.Superseded():
			// Given again later: the last occurrence counts (a later null
			// is an absent member), so an earlier bubble is not merged
			// into a later one and an earlier bad mode is not refused.
		case it.KeyIs("mode"):
			if !val.Exists() {
				continue
			}
			said = true
			c := at.child("mode")
			m, known, err := readEnum(val, &c, navigationModes)
			if err != nil {
				return out, err
			}
			if !known {
				return out, errAt(CodeInvalidValue, &c, "navigation mode %q is not one of %s", m, nameList(navigationModes))
			}
			out.Mode = m
		case it.KeyIs("bubble"):
			if !val.Exists() {
				continue
			}
			said = true
			c := at.child("bubble")
			if err := decodeBubble(val, &c, w, &out.Bubble); err != nil {
				return out, err
			}
		default:
			w.unknownField(at, &it)
		}
	}
	if !said {
		return out, errAt(CodeInvalidValue, at, `navigation needs "mode" or "bubble", e.g. {"mode": "bubble"} (DELETE turns it off)`)
	}
	return out, nil
}

func decodeBubble(v Value, at *pathSeg, w warnings, b *BubbleNavigation) *Error {
	if err := expectObject(v, at, `{"center": {"position": {"x": 0, "y": 0, "z": 0}}, "shape": {...}}`); err != nil {
		return err
	}
members:
	for it := v.Members(); it.Next(); {
		if bubbleMember(&it) && it.Superseded() {
			// Given again later: the last occurrence counts.
			continue
		}
		val := it.Value()
		if !val.Exists() {
			continue
		}
		// The numeric members, by table: a table of field pointers would
		// move the decoded value to the heap on every decode.
		for i, s := range bubbleScalars {
			if it.KeyIs(s.name) {
				c := at.child(s.name)
				f, err := readRange(val, &c, s.lo, s.hi)
				if err != nil {
					return err
				}
				b.setScalar(i, f)
				if s.name == "velocity_zone_width" {
					b.ZoneWidthFromArm = false
				}
				continue members
			}
		}
		switch {
		case it.KeyIs("center"):
			c := at.child("center")
			if err := decodeBubbleCenter(val, &c, w, &b.Center); err != nil {
				return err
			}
		case it.KeyIs("shape"):
			c := at.child("shape")
			s, err := decodeSDFShape(val, &c, w, bubbleShapeBound)
			if err != nil {
				return err
			}
			if err := checkBubbleShape(s, &c); err != nil {
				return err
			}
			b.Shape, b.ShapeFromArm = s, false
		case it.KeyIs("easing"):
			c := at.child("easing")
			e, known, err := readEnum(val, &c, navigationEasings)
			if err != nil {
				return err
			}
			if !known {
				return errAt(CodeInvalidValue, &c, "easing %q is not one of %s", e, nameList(navigationEasings))
			}
			b.Easing = e
		case it.KeyIs("collision_detection"):
			c := at.child("collision_detection")
			h, hc, err := soleMember(val, &c, w, "hysteresis", `{"hysteresis": 0.002}`)
			if err != nil {
				return err
			}
			if h.Exists() {
				f, err := readRange(h, &hc, 0, NavHysteresisMax)
				if err != nil {
					return err
				}
				b.HysteresisM = f
			}
		default:
			w.unknownField(at, &it)
		}
	}
	return nil
}

// bubbleShapeBound bounds a bubble's shape as it is decoded.
var bubbleShapeBound = sdfBound{maxM: NavShapeMax, why: " (a bubble lies inside the workspace)"}

// checkBubbleShape bounds the bubble to the workspace: every length and
// coordinate at most NavShapeMax. A plane is no bubble (it has no inside
// to navigate from).
func checkBubbleShape(s SDFShape, at *pathSeg) *Error {
	known := false
	for _, p := range bubbleShapes {
		known = known || p == s.Primitive
	}
	if !known {
		c := at.child("primitive")
		return errAt(CodeInvalidValue, &c, "a bubble must enclose the cursor in a shape the loop renders: one of %s, not %s", nameList(bubbleShapes), s.Primitive)
	}
	// Each parameter the primitive reads, named as the client sent it.
	pc := at.child("parameters")
	prim := findSDFPrimitive([]byte(s.Primitive))
	if prim == nil {
		return errAt(CodeInvalidValue, at, "unknown SDF primitive %q", s.Primitive)
	}
	for _, q := range prim.params {
		c := pc.child(q.name)
		switch q.kind {
		case sdfLength, sdfOffset:
			p := s.Params
			if f := *sdfScalar(&p, q.name); math.Abs(f) > NavShapeMax {
				return errAt(CodeOutOfRange, &c, "a bubble's lengths are at most %g m (the workspace is smaller), got %s %g", NavShapeMax, q.name, f)
			}
		case sdfPoint, sdfExtents:
			p := s.Params
			v := *sdfVector(&p, q.name)
			for i, f := range [3]float64{v.X, v.Y, v.Z} {
				if math.Abs(f) > NavShapeMax {
					cc := c.child(vec3Names[i])
					return errAt(CodeOutOfRange, &cc, "a bubble's lengths are at most %g m (the workspace is smaller), got %s.%s %g", NavShapeMax, q.name, vec3Names[i], f)
				}
			}
		}
	}
	return nil
}

// bubbleShapes are the primitives a bubble may take: the closed shapes of
// the catalogue that the loop renders; never written.
var bubbleShapes = []string{"sphere", "ellipsoid", "box", "rounded_box", "capsule", "capped_cylinder",
	"capsule_vertical", "capped_cylinder_vertical", "torus"}

// BubbleShapes lists the primitives a bubble may take (a copy).
func BubbleShapes() []string { return append([]string(nil), bubbleShapes...) }

// bubbleScalars are the bubble's numeric members with their ranges, in the
// order setScalar numbers them; never written.
var bubbleScalars = [...]struct {
	name   string
	lo, hi float64
}{
	{"velocity_zone_width", NavZoneWidthMin, NavZoneWidthMax},
	{"speed_gain", 0, NavSpeedGainMax},
	{"max_speed", 0, NavMaxSpeedMax},
	{"dead_zone_damping", 0, DampingMax},
	{"velocity_zone_stiffness", 0, NavZoneStiffnessMax},
	{"wall_stiffness", 0, navWallStiffnessLimit},
	{"wall_damping", 0, DampingMax},
}

// NumberRange is a numeric member's name and its accepted range, lo..hi
// inclusive.
type NumberRange struct {
	Name   string
	Lo, Hi float64
}

// BubbleNumbers lists the bubble's numeric members with the ranges
// decodeBubble accepts (a copy of its table), for the schema.
func BubbleNumbers() []NumberRange {
	out := make([]NumberRange, len(bubbleScalars))
	for i, s := range bubbleScalars {
		out[i] = NumberRange{Name: s.name, Lo: s.lo, Hi: s.hi}
	}
	return out
}

// bubbleMember reports whether the member is one decodeBubble reads (the
// names whose repeats it must resolve; an unknown name is only warned of).
func bubbleMember(it *MemberIter) bool {
	for _, s := range bubbleScalars {
		if it.KeyIs(s.name) {
			return true
		}
	}
	return it.KeyIs("center") || it.KeyIs("shape") || it.KeyIs("easing") || it.KeyIs("collision_detection")
}

func (b *BubbleNavigation) setScalar(i int, f float64) {
	switch i {
	case 0:
		b.VelocityZoneWidthM = f
	case 1:
		b.SpeedGainPerS = f
	case 2:
		b.MaxSpeedMps = f
	case 3:
		b.DeadZoneDampingNsPerM = f
	case 4:
		b.VelocityZoneStiffnessNPerM = f
	case 5:
		b.WallStiffnessNPerM = f
	case 6:
		b.WallDampingNsPerM = f
	}
}

func decodeBubbleCenter(v Value, at *pathSeg, w warnings, c *BubbleCenter) *Error {
	if err := expectObject(v, at, `{"position": {"x": 0, "y": 0, "z": 0}, "mode": "fixed"}`); err != nil {
		return err
	}
	positioned, moded := false, false
	for it := v.Members(); it.Next(); {
		if (it.KeyIs("position") || it.KeyIs("mode") || it.KeyIs("drift_rate")) && it.Superseded() {
			// Given again later: the last occurrence counts.
			continue
		}
		val := it.Value()
		if !val.Exists() {
			continue
		}
		switch {
		case it.KeyIs("position"):
			pc := at.child("position")
			p, err := readVec3(val, &pc, w)
			if err != nil {
				return err
			}
			for i, comp := range [3]float64{p.X, p.Y, p.Z} {
				if math.Abs(comp) > NavCenterMax {
					cc := pc.child(vec3Names[i])
					return errAt(CodeOutOfRange, &cc, "center.position.%s %g is out of range -%g..%g m (mount space)", vec3Names[i], comp, NavCenterMax, NavCenterMax)
				}
			}
			c.PositionM, positioned = p, true
		case it.KeyIs("mode"):
			mc := at.child("mode")
			m, known, err := readEnum(val, &mc, centerModes)
			if err != nil {
				return err
			}
			if !known {
				return errAt(CodeInvalidValue, &mc, "center mode %q is not one of %s", m, nameList(centerModes))
			}
			c.Mode, moded = m, true
		case it.KeyIs("drift_rate"):
			dc := at.child("drift_rate")
			f, err := readRange(val, &dc, 0, NavDriftRateMax)
			if err != nil {
				return err
			}
			c.DriftRateMps = f
		default:
			w.unknownField(at, &it)
		}
	}
	if positioned && !moded {
		// A position without a mode is where the client wants the
		// bubble: "fixed", not an offset from the cursor.
		c.Mode = CenterFixed
	}
	return nil
}

// NavigationZone is where the cursor is relative to the bubble.
type NavigationZone uint8

const (
	ZoneDead NavigationZone = iota
	ZoneVelocity
	ZoneWall
)

var zoneNames = []string{"dead", "velocity", "wall"}

func (z NavigationZone) String() string {
	if int(z) < len(zoneNames) {
		return zoneNames[z]
	}
	return ""
}

// NavigationZoneNames lists the zones' wire names (a copy).
func NavigationZoneNames() []string { return append([]string(nil), zoneNames...) }

// NavigationState is the navigation's state: the vendor's bubble fields
// (centre, in mount space; the velocity zone's width; the extra inflation of
// the collision boundary that hysteresis adds now), then hapticd's: the
// zone, the workspace offset the navigation accumulated and its velocity
// (application space; the offset is also part of state.transform).
type NavigationState struct {
	CenterM               Vec3
	VelocityZoneWidthM    float64
	CollisionExtraInflate float64 // m
	Zone                  NavigationZone
	WorkspaceOffsetM      Vec3
	VelocityMps           Vec3
}

// AppendJSON appends {"bubble": {"center", "velocity_zone_width",
// "collision_extra_inflate"}, "zone", "workspace_offset", "velocity"}:
// measured values at float32 precision, but the centre, the width and the
// workspace offset exact.
func (s *NavigationState) AppendJSON(dst []byte) []byte {
	// The centre and the width are the config's own numbers (a fixed
	// centre is center.position to the bit): a client that compares them
	// with what it configured finds them equal, not off at the 8th digit
	// as float32 would have them (0.0123456789012 read 0.012345679).
	dst = append(dst, `{"bubble":{"center":`...)
	dst = appendVec3(dst, exact, s.CenterM)
	dst = append(dst, `,"velocity_zone_width":`...)
	dst = appendNumber(dst, s.VelocityZoneWidthM, exact)
	dst = append(dst, `,"collision_extra_inflate":`...)
	dst = appendNumber(dst, s.CollisionExtraInflate, measured)
	dst = append(dst, `},"zone":`...)
	dst = AppendString(dst, s.Zone.String())
	// The offset at full precision, as state.transform's position, to
	// which the frame adds it: a client that checks the one against the
	// other sees them agree to the bit, not by a float32's rounding.
	dst = append(dst, `,"workspace_offset":`...)
	dst = appendVec3(dst, exact, s.WorkspaceOffsetM)
	dst = append(dst, `,"velocity":`...)
	dst = appendVec3(dst, measured, s.VelocityMps)
	return append(dst, '}')
}

// NavigationView is what GET /{type}/{id}/config/navigation answers: the
// configuration, the state (nil while navigation is off or the device has
// not rendered it yet: "state" is null) and the status {"mode"}.
type NavigationView struct {
	Config Navigation
	State  *NavigationState
}

// AppendJSON appends {"config": {...}, "state": {...}|null, "status":
// {"mode"}}.
func (v *NavigationView) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"config":`...)
	dst = v.Config.AppendJSON(dst)
	dst = append(dst, `,"state":`...)
	if v.State == nil {
		dst = append(dst, "null"...)
	} else {
		dst = v.State.AppendJSON(dst)
	}
	dst = append(dst, `,"status":{"mode":`...)
	dst = AppendString(dst, v.Config.Mode)
	return append(dst, "}}"...)
}

// MarshalJSON is AppendJSON.
func (v NavigationView) MarshalJSON() ([]byte, error) { return v.AppendJSON(nil), nil }

// DeviceBubble is the bubble in the device frame, for the loop: the centre
// and the SDF's local frame (x_local = ToLocal·x_dev + LocalOffset, local
// metres times DevMPerLocalM are metres of handle motion).
type DeviceBubble struct {
	CenterM         Vec3
	ToLocal         Mat3
	LocalOffset     Vec3
	DevMPerLocalM   float64
	VelocityZoneM   float64
	HysteresisM     float64
	WorkspacePerDev float64 // application metres per device metre, for the velocity
}

// ToDevice converts the bubble from mount space to the device frame; mount
// is the View of the session's basis and mount only (without the workspace
// transform, which navigation itself moves).
func (n Navigation) ToDevice(mount *space.View) DeviceBubble {
	m := newDeviceMap(mount)
	c := m.point(n.Bubble.Center.PositionM)
	// The shape is centred on the centre, axis-aligned in mount space:
	// x_local = x_mount − centre = F·x_dev + origin − centre.
	return DeviceBubble{
		CenterM:         c,
		ToLocal:         m.f,
		LocalOffset:     sub3(m.origin, n.Bubble.Center.PositionM),
		DevMPerLocalM:   1 / m.appPerDev,
		VelocityZoneM:   m.length(n.Bubble.VelocityZoneWidthM),
		HysteresisM:     m.length(n.Bubble.HysteresisM),
		WorkspacePerDev: m.appPerDev,
	}
}
