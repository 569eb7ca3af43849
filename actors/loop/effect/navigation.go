package effect

import (
	"errors"
	"math"

	"github.com/hapticd/hapticd/actors/loop/passivity"
	"github.com/hapticd/hapticd/hw"
)

// Bubble is a session's bubble navigation on one arm (the vendor's 3.5
// Bubble Navigation), ready for the tick: the bubble is an SDF shape
// centred on the origin of its local frame (mount space less the centre),
//
//	x_local = ToLocal·x_dev + LocalOffset,
//
// and a local metre is DevMPerLocalM metres of handle motion. Inside the
// bubble (d ≤ 0, d the shape's distance) is the dead zone; up to WidthM
// beyond its surface the velocity zone, where the workspace slides along
// the outward normal at
//
//	speed = min(MaxSpeedMps, SpeedGainPerS·WidthM·ease(d/WidthM))
//
// (local metres per second, carried to application space by ToApp); beyond
// it the wall. Build one with NewBubble; never modify it after.
type Bubble struct {
	Primitive Primitive
	// Shape holds the primitive's sizes (RadiusM, HalfExtentsM, HeightM,
	// MinorRadiusM; a capsule's or capped cylinder's ends PointM and EndM),
	// in local metres.
	Shape         Params
	ToLocal       [3][3]float64
	LocalOffset   hw.Vec3
	DevMPerLocalM float64
	// CenterM is the centre in mount space, as reported.
	CenterM hw.Vec3
	// ToApp is the linear part of the session's workspace transform
	// (mount → application): the velocity and offset are reported there.
	ToApp [3][3]float64
	// WidthM and HysteresisM are local metres.
	WidthM, HysteresisM float64
	SpeedGainPerS       float64
	MaxSpeedMps         float64
	Ease                Ease
	// DriftRateMps > 0 moves the centre toward the cursor while it is in
	// the dead zone (local metres per second).
	DriftRateMps float64
	// AtCursor centres the bubble on the cursor's mount-space position
	// when the navigation starts, CenterM being an offset from there (the
	// centre mode "cursor"), or, for a shape whose centre is outside it,
	// puts the cursor in the middle of its core (cursorStart); the
	// Navigator keeps that anchor while the bubbles it steps keep AtCursor
	// set.
	AtCursor bool
	// Forces act on the handle: N/m and N·s/m of handle motion.
	DeadDampingNsPerM  float64
	ZoneStiffnessNPerM float64
	WallStiffnessNPerM float64
	WallDampingNsPerM  float64
	// centre is whether the local origin (the centre) is inside the
	// shape, found once by NewBubble: a drifting centre asked it every
	// tick. A Bubble not built by NewBubble leaves it centreUnknown and
	// asks the shape each time.
	centre centrePlace
}

// centrePlace says where a bubble's centre lies relative to its shape.
type centrePlace uint8

const (
	centreUnknown centrePlace = iota
	centreInside
	centreOutside
)

// centreInside reports whether b's centre is inside its shape, where a
// centred cursor starts and a drifting centre settles on the cursor.
func (b *Bubble) centreInside() bool {
	switch b.centre {
	case centreInside:
		return true
	case centreOutside:
		return false
	}
	return bubbleDistance(b, hw.Vec3{}) < 0
}

// Ease is the velocity law's shape over the zone's depth u = d/width.
type Ease uint8

const (
	EaseLinear    Ease = iota // u
	EaseQuadratic             // u²
	EaseCubic                 // u³
)

// Zone is where the cursor is relative to the bubble.
type Zone uint8

const (
	ZoneDead Zone = iota
	ZoneVelocity
	ZoneWall
)

// NewBubble checks b for the tick: a primitive the tick renders, a
// positive zone width, an invertible local frame and finite numbers.
func NewBubble(b Bubble) (*Bubble, error) {
	switch b.Primitive {
	case PrimSphere, PrimEllipsoid, PrimBox, PrimRoundedBox, PrimCapsule, PrimCappedCylinder,
		PrimCapsuleVertical, PrimCappedCylinderVertical, PrimTorus:
	default:
		return nil, errors.New("effect: a bubble must be a closed primitive the loop renders (sphere, ellipsoid, box, rounded_box, capsule, capped_cylinder, capsule_vertical, capped_cylinder_vertical, torus)")
	}
	if err := checkScalars(&b.Shape); err != nil {
		return nil, err
	}
	sp := Spec{ID: "bubble", Kind: Shape, Primitive: b.Primitive, Params: b.Shape}
	if err := sp.validateShape(); err != nil {
		return nil, err
	}
	nums := [...]float64{b.DevMPerLocalM, b.WidthM, b.HysteresisM, b.SpeedGainPerS, b.MaxSpeedMps,
		b.DriftRateMps, b.DeadDampingNsPerM, b.ZoneStiffnessNPerM, b.WallStiffnessNPerM, b.WallDampingNsPerM}
	for _, x := range nums {
		if !(x >= 0) || math.IsInf(x, 0) {
			return nil, errors.New("effect: a bubble's numbers must be finite and not negative")
		}
	}
	if !(b.WidthM > 0) || !(b.DevMPerLocalM > 0) {
		return nil, errors.New("effect: a bubble needs a positive zone width and scale")
	}
	if !b.LocalOffset.Finite() || !b.CenterM.Finite() {
		return nil, errors.New("effect: a bubble's centre must be finite")
	}
	b.centre = centreOutside
	if bubbleDistance(&b, hw.Vec3{}) < 0 {
		b.centre = centreInside
	}
	return &b, nil
}

// Navigator is one session's navigation state on one arm, owned by the
// loop's tick: the zone, the workspace offset it integrated and its
// velocity (application space), and the centre's drift (local).
type Navigator struct {
	Zone        Zone
	OffsetM     hw.Vec3
	VelocityMps hw.Vec3
	DriftM      hw.Vec3
	// DepthM is the cursor's distance outside the bubble's surface this
	// tick (local metres; negative inside).
	DepthM float64
	// ForceN is the navigation's force this tick (device frame, after
	// the fade-in, before the loop's gain, passivity stage, clamp and
	// ramp).
	ForceN hw.Vec3
	// anchorM is the cursor's mount-space position where an AtCursor
	// bubble started (anchored set); fadedNs how long the force has been
	// rendered since it last started, up to DefaultFadeNs.
	anchorM  hw.Vec3
	anchored bool
	fadedNs  int64
	// startM is the cursor's mount-space position when the anchor was
	// taken and coreM the point of the shape it was put on (cursorStart):
	// a new shape whose core point differs re-anchors from startM, so the
	// hand is where the docs say it starts ("the cursor's position at
	// the start … less the core point").
	startM, coreM hw.Vec3
	// driftFrom is the configured centre DriftM drifted from: a new centre
	// starts the drift again from there, and a centre that does not drift
	// ("fixed") has none.
	driftFrom hw.Vec3
}

// Step renders one tick: it classifies the cursor (with hysteresis),
// returns the navigation's force in the device frame and, when integrate is
// set (the session's lease holds), slides the workspace offset by the
// velocity law over the tick. Without integrate the velocity is zero and
// the offset stays. It does not allocate.
//
// The force fades in over DefaultFadeNs whenever it starts (the first
// step, and the first after Stop), as a declared effect does: a bubble
// turned on with the hand outside it, or a lease that comes back with the
// hand in the wall, never steps the handle at the wall's full force.
func (n *Navigator) Step(b *Bubble, in *Input, integrate bool) hw.Vec3 {
	dtS := float64(in.DtNs) * 1e-9
	x := mulMat(&b.ToLocal, in.PositionM).Add(b.LocalOffset)
	if b.AtCursor {
		// x is the cursor in mount space less CenterM. The anchor is where
		// the cursor starts, less the point of the shape it starts at
		// (cursorStart), and the centre sits CenterM from the anchor, so
		// the cursor less the centre is x less the anchor.
		if !n.anchored && x.Finite() {
			n.startM, n.coreM = x.Add(b.CenterM), cursorStart(b)
			n.anchorM, n.anchored = n.startM.Sub(n.coreM), true
		} else if core := cursorStart(b); n.anchored && core != n.coreM {
			n.coreM, n.anchorM = core, n.startM.Sub(core)
		}
		x = x.Sub(n.anchorM)
		n.DriftM = hw.Vec3{} // a later "drift" bubble starts at its centre
	} else {
		n.anchored = false // a later "cursor" bubble anchors afresh
		if b.DriftRateMps == 0 || b.CenterM != n.driftFrom {
			n.DriftM, n.driftFrom = hw.Vec3{}, b.CenterM
		}
		x = x.Sub(n.DriftM)
	}
	d := bubbleDistance(b, x)
	if !(math.Abs(d) < 1e6) {
		n.ForceN, n.VelocityMps = hw.Vec3{}, hw.Vec3{}
		return hw.Vec3{}
	}
	n.DepthM = d
	h, w := b.HysteresisM, b.WidthM
	switch n.Zone {
	case ZoneDead:
		if d > w+h {
			n.Zone = ZoneWall
		} else if d > h {
			n.Zone = ZoneVelocity
		}
	case ZoneVelocity:
		if d < -h {
			n.Zone = ZoneDead
		} else if d > w+h {
			n.Zone = ZoneWall
		}
	case ZoneWall:
		if d < -h {
			n.Zone = ZoneDead
		} else if d < w-h {
			n.Zone = ZoneVelocity
		}
	}
	v := in.VelocityMps
	if v.Dot(v) > passivity.MaxSpeedMps*passivity.MaxSpeedMps {
		// A bad reading (as in Renderer.Render): the damping renders
		// nothing from it, or the next tick counts its work.
		v = hw.Vec3{}
	}
	var f hw.Vec3
	n.VelocityMps = hw.Vec3{}
	if n.Zone == ZoneDead {
		// Light damping, and the centre's drift toward the cursor.
		f = v.Scale(-b.DeadDampingNsPerM)
		if integrate && b.DriftRateMps > 0 {
			to := x.Sub(driftTarget(b, x))
			if l := to.Norm(); l > 0 {
				n.DriftM = n.DriftM.Add(to.Scale(math.Min(l, b.DriftRateMps*dtS) / l))
			}
		}
	}
	if d > 0 {
		nl := bubbleNormal(b, x)
		// The force acts along the gradient in the device frame
		// (ToLocalᵀ·∇), on depths in metres of handle motion: a spring
		// over the whole zone, then the wall on the outer boundary. Both
		// are potentials of d, so they are passive; they push inward only.
		nd := mulMatT(&b.ToLocal, nl)
		if l := nd.Norm(); l > 0 {
			nd = nd.Scale(1 / l)
		}
		dDev := d * b.DevMPerLocalM
		wDev := w * b.DevMPerLocalM
		fn := b.ZoneStiffnessNPerM * math.Min(dDev, wDev)
		if dDev > wDev {
			fn += b.WallStiffnessNPerM*(dDev-wDev) + b.WallDampingNsPerM*math.Max(nd.Dot(v), 0)
		}
		f = f.Add(nd.Scale(-fn))
		if integrate && n.Zone != ZoneDead {
			u := math.Min(d/w, 1)
			switch b.Ease {
			case EaseQuadratic:
				u *= u
			case EaseCubic:
				u *= u * u
			}
			speed := math.Min(b.MaxSpeedMps, b.SpeedGainPerS*w*u)
			n.VelocityMps = mulMat(&b.ToApp, nl.Scale(speed))
			n.OffsetM = n.OffsetM.Add(n.VelocityMps.Scale(dtS))
		}
	}
	if !f.Finite() {
		f = hw.Vec3{}
	}
	if n.fadedNs < DefaultFadeNs {
		n.fadedNs = min(n.fadedNs+in.DtNs, DefaultFadeNs)
		f = f.Scale(float64(n.fadedNs) / float64(DefaultFadeNs))
	}
	n.ForceN = f
	return f
}

// Stop says the navigation is not rendered (no lease holds it): the
// workspace stops where it is and the force is zero; it fades in again
// when the next Step renders it.
func (n *Navigator) Stop() { n.VelocityMps, n.ForceN, n.fadedNs = hw.Vec3{}, hw.Vec3{}, 0 }

// CenterM is the bubble's centre in mount space: drift included, or for an
// AtCursor bubble, CenterM from where the cursor was when it started (less
// cursorStart).
func (n *Navigator) CenterM(b *Bubble) hw.Vec3 {
	if b.AtCursor {
		if !n.anchored {
			return b.CenterM // not stepped yet: no anchor taken
		}
		return n.anchorM.Add(b.CenterM)
	}
	if n.DriftM == (hw.Vec3{}) {
		return b.CenterM
	}
	// The drift is local (mount metres less the centre): mount space.
	return b.CenterM.Add(n.DriftM)
}

// cursorStart is the point of b's local frame where a bubble centred at
// the cursor (AtCursor) puts the cursor when it starts: the centre, unless
// the centre is outside the shape (a torus's hole, a capsule whose ends
// are both off the centre), where the hand would start in the velocity
// zone or the wall and the workspace would slide at once. Then it is the
// middle of the shape's core: the point of a torus's core circle on +X, the
// midpoint of a capsule's or capped cylinder's axis.
func cursorStart(b *Bubble) hw.Vec3 {
	if b.centreInside() {
		return hw.Vec3{}
	}
	switch b.Primitive {
	case PrimTorus:
		return b.Shape.PointM.Add(hw.Vec3{X: b.Shape.RadiusM})
	case PrimCapsule, PrimCappedCylinder:
		return b.Shape.PointM.Add(b.Shape.EndM).Scale(0.5)
	}
	return hw.Vec3{}
}

// driftTarget is the point of b's local frame that a drifting centre
// brings onto the cursor at x (local): the centre, unless the centre is
// outside the shape (cursorStart), where bringing it onto the cursor would
// put the hand out of the dead zone and slide the workspace with the hand
// at rest. Then it is the point of the shape's core nearest the cursor: on
// a torus's core circle, on a capsule's or capped cylinder's axis.
func driftTarget(b *Bubble, x hw.Vec3) hw.Vec3 {
	if b.centreInside() {
		return hw.Vec3{}
	}
	p := &b.Shape
	switch b.Primitive {
	case PrimTorus:
		q := x.Sub(p.PointM)
		rho := math.Hypot(q.X, q.Z)
		if !(rho > 0) {
			return cursorStart(b)
		}
		return p.PointM.Add(hw.Vec3{X: q.X, Z: q.Z}.Scale(p.RadiusM / rho))
	case PrimCapsule, PrimCappedCylinder:
		ab := p.EndM.Sub(p.PointM)
		h := 0.0
		if l2 := ab.Dot(ab); l2 > 0 {
			h = clamp01(x.Sub(p.PointM).Dot(ab) / l2)
		}
		return p.PointM.Add(ab.Scale(h))
	}
	return hw.Vec3{}
}

// bubbleDistance is the bubble's SDF at x (local metres, negative inside).
func bubbleDistance(b *Bubble, x hw.Vec3) float64 {
	return shapeDistance(b.Primitive, &b.Shape, x)
}

// bubbleNormal is the bubble's outward unit normal at x (local).
func bubbleNormal(b *Bubble, x hw.Vec3) hw.Vec3 {
	var g hw.Vec3
	if b.Primitive == PrimSphere {
		g = x.Sub(b.Shape.PointM)
	} else {
		const e = 1e-6
		g = hw.Vec3{
			X: bubbleDistance(b, hw.Vec3{X: x.X + e, Y: x.Y, Z: x.Z}) - bubbleDistance(b, hw.Vec3{X: x.X - e, Y: x.Y, Z: x.Z}),
			Y: bubbleDistance(b, hw.Vec3{X: x.X, Y: x.Y + e, Z: x.Z}) - bubbleDistance(b, hw.Vec3{X: x.X, Y: x.Y - e, Z: x.Z}),
			Z: bubbleDistance(b, hw.Vec3{X: x.X, Y: x.Y, Z: x.Z + e}) - bubbleDistance(b, hw.Vec3{X: x.X, Y: x.Y, Z: x.Z - e}),
		}
	}
	l := g.Norm()
	if !(l > 0) {
		return hw.Vec3{Z: 1}
	}
	return g.Scale(1 / l)
}

func mulMat(m *[3][3]float64, v hw.Vec3) hw.Vec3 {
	return hw.Vec3{
		X: m[0][0]*v.X + m[0][1]*v.Y + m[0][2]*v.Z,
		Y: m[1][0]*v.X + m[1][1]*v.Y + m[1][2]*v.Z,
		Z: m[2][0]*v.X + m[2][1]*v.Y + m[2][2]*v.Z,
	}
}

func mulMatT(m *[3][3]float64, v hw.Vec3) hw.Vec3 {
	return hw.Vec3{
		X: m[0][0]*v.X + m[1][0]*v.Y + m[2][0]*v.Z,
		Y: m[0][1]*v.X + m[1][1]*v.Y + m[2][1]*v.Z,
		Z: m[0][2]*v.X + m[1][2]*v.Y + m[2][2]*v.Z,
	}
}
