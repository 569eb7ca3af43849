package effect

import (
	"errors"
	"fmt"
	"math"

	"github.com/hapticd/hapticd/hw"
)

// The vendor's SDF effect (MODULES.md §2.2) is a force along the gradient
// of a shape's signed distance d (negative inside), whose size is a curve of
// d over a band of RangeM:
//
//	F = ForceScaleN · g(u) · s · n,  n = ∇d / |∇d| (the outward normal)
//
// where u = clamp(1 − d/RangeM, 0, 1) for SDFSingle and clamp(1 − |d|/RangeM,
// 0, 1) for SDFMirror and SDFAlign, g the Ease (or its mirror image with
// Reverse), and s = −1 only for SDFMirror inside the shape. Because F is a
// function of d times ∇d, it is the gradient of a potential of d: a fixed
// shape is a conservative field and gives back exactly the energy a hand
// puts in. What can inject energy is a change, so every number glides to its
// new value (the Params smoothing), the effect fades in when it appears, an
// update that would change the force at the cursor by more than a quarter
// of its scale (a shape jumping onto the cursor) cross-fades over the fade
// instead of gliding (sdfJumps), and the force is bounded by ForceScaleN.
//
// Effective stiffness: in the band the force changes by ForceScaleN·g'(u)/
// RangeM per metre, a spring rate the loop samples like any other; keep it
// under the arm's 2b/T (see docs/effects.md) or the passivity controller
// will add damping.

// SDFEase is the curve g(u) of an SDF effect's force, u in [0, 1] from the
// edge of the band (0) to the surface (1). Every curve has g(0) = 0 and
// g(1) = 1, so force_scale is the force at the surface.
type SDFEase uint8

const (
	// SDFLinear: g = u.
	SDFLinear SDFEase = iota
	// SDFQuadratic: g = u².
	SDFQuadratic
	// SDFCubic: g = u³.
	SDFCubic
	// SDFSmoothstep: g = 3u² − 2u³ (flat at both ends).
	SDFSmoothstep
	// SDFExponential: g = (2^(10u) − 1)/1023, the easing libraries'
	// exponential made exact at both ends: almost nothing until the last
	// fifth of the band, then steep.
	SDFExponential
)

var sdfEaseNames = [...]string{"linear", "quadratic", "cubic", "smoothstep", "exponential"}

func (e SDFEase) String() string {
	if int(e) < len(sdfEaseNames) {
		return sdfEaseNames[e]
	}
	return fmt.Sprintf("ease(%d)", uint8(e))
}

// ParseSDFEase maps an ease's wire name to an SDFEase.
func ParseSDFEase(name string) (SDFEase, bool) {
	for i, n := range sdfEaseNames {
		if n == name {
			return SDFEase(i), true
		}
	}
	return 0, false
}

// SDFSymmetry says how an SDF effect treats the inside of its shape.
type SDFSymmetry uint8

const (
	// SDFSingle pushes out along the normal: the curve over the band
	// outside, the full ForceScaleN everywhere inside (a soft solid).
	SDFSingle SDFSymmetry = iota
	// SDFMirror mirrors the curve onto the inside and pushes away from the
	// surface on both sides: a membrane felt from either side.
	SDFMirror
	// SDFAlign mirrors the curve onto the inside but pushes along the
	// outward normal on both sides: the surface is a ridge the cursor is
	// pushed out over.
	SDFAlign
)

var sdfSymmetryNames = [...]string{"single", "mirror", "align"}

func (s SDFSymmetry) String() string {
	if int(s) < len(sdfSymmetryNames) {
		return sdfSymmetryNames[s]
	}
	return fmt.Sprintf("symmetry(%d)", uint8(s))
}

// ParseSDFSymmetry maps a symmetry's wire name to an SDFSymmetry.
func ParseSDFSymmetry(name string) (SDFSymmetry, bool) {
	for i, n := range sdfSymmetryNames {
		if n == name {
			return SDFSymmetry(i), true
		}
	}
	return 0, false
}

// SDFCurve is an SDF effect's force against distance.
type SDFCurve struct {
	Ease SDFEase
	// Reverse uses the curve's mirror image 1 − g(1 − u) (ease-out for
	// ease-in); the ends stay where they are.
	Reverse  bool
	Symmetry SDFSymmetry
}

// Magnitude is the signed size of the force at distance dM (device metres,
// negative inside) for a band of rangeM, as a fraction of ForceScaleN along
// the outward normal: in [−1, 1], 0 beyond the band.
func (c SDFCurve) Magnitude(dM, rangeM float64) float64 {
	d := dM
	if c.Symmetry != SDFSingle {
		d = math.Abs(dM)
	}
	u := clamp01(1 - d/rangeM)
	if u == 0 {
		return 0
	}
	var g float64
	if c.Reverse {
		g = 1 - c.Ease.of(1-u)
	} else {
		g = c.Ease.of(u)
	}
	if c.Symmetry == SDFMirror && dM < 0 {
		return -g
	}
	return g
}

func (e SDFEase) of(u float64) float64 {
	switch e {
	case SDFQuadratic:
		return u * u
	case SDFCubic:
		return u * u * u
	case SDFSmoothstep:
		return u * u * (3 - 2*u)
	case SDFExponential:
		return (math.Exp2(10*u) - 1) / 1023
	}
	return u
}

// sdfRenders says whether an SDF effect renders p: the eight of the
// vendor's SDF module notes and the ellipsoid, torus, box frame and link of
// its catalogue.
func sdfRenders(p Primitive) bool {
	switch p {
	case PrimSphere, PrimEllipsoid, PrimBox, PrimRoundedBox, PrimPlane, PrimCapsule, PrimCappedCylinder,
		PrimCapsuleVertical, PrimCappedCylinderVertical, PrimTorus, PrimBoxFrame, PrimLink:
		return true
	}
	return false
}

// validateSDF checks an SDF effect's shape, frame and force.
func (sp *Spec) validateSDF() error {
	p := &sp.Params
	if !sdfRenders(sp.Primitive) {
		return fmt.Errorf("unknown primitive %d", sp.Primitive)
	}
	if err := sp.validateShape(); err != nil {
		return err
	}
	if int(sp.Curve.Ease) >= len(sdfEaseNames) || int(sp.Curve.Symmetry) >= len(sdfSymmetryNames) {
		return errors.New("unknown ease or symmetry")
	}
	if !(p.ForceScaleN >= 0 && p.ForceScaleN <= MaxForceN) {
		return fmt.Errorf("force_scale_n = %v, want 0..%v", p.ForceScaleN, MaxForceN)
	}
	if !(p.RangeM > 0 && p.RangeM <= MaxLengthM) {
		return fmt.Errorf("range_m = %v, want above 0 and at most %v", p.RangeM, MaxLengthM)
	}
	switch CheckSDFFrame(p) {
	case SDFFrameScale:
		return fmt.Errorf("dev_m_per_local_m = %v and to_local %v, want a local metre %v..%v m and an invertible frame", p.DevMPerLocalM, p.ToLocal, SDFMinDevMPerLocalM, SDFMaxDevMPerLocalM)
	case SDFFramePlace:
		return fmt.Errorf("local_offset_m = %v, want finite within ±%v", p.LocalOffsetM, SDFMaxLocal)
	}
	return nil
}

// The SDF frames the tick renders: a local metre between a micrometre and
// a kilometre of handle motion (anything else is a unit mistake), and
// local coordinates within ±SDFMaxLocal, which keeps the tick's numbers
// finite.
const (
	SDFMinDevMPerLocalM = 1e-6
	SDFMaxDevMPerLocalM = 1e3
	SDFMaxLocal         = 1e6
)

// SDFFrameFault is what CheckSDFFrame finds wrong with an SDF effect's
// frame, in terms a caller can put in the words of its own declaration.
type SDFFrameFault uint8

const (
	SDFFrameOK SDFFrameFault = iota
	// SDFFrameScale: the frame's scale (DevMPerLocalM, or ToLocal
	// stretched or flattened) is past what the tick renders.
	SDFFrameScale
	// SDFFramePlace: LocalOffsetM puts the device's origin too many
	// local metres from the shape's (a far position at a small scale).
	SDFFramePlace
)

// CheckSDFFrame says whether the tick renders an SDF effect in the frame
// of p (ToLocal, LocalOffsetM, DevMPerLocalM); NewSet refuses what it
// does not.
func CheckSDFFrame(p *Params) SDFFrameFault {
	if !(p.DevMPerLocalM >= SDFMinDevMPerLocalM && p.DevMPerLocalM <= SDFMaxDevMPerLocalM) {
		return SDFFrameScale
	}
	m := &p.ToLocal
	for _, row := range m {
		for _, x := range row {
			if !(math.Abs(x) <= SDFMaxLocal) {
				return SDFFrameScale
			}
		}
	}
	// A frame that flattens space has no distance.
	det := m[0][0]*(m[1][1]*m[2][2]-m[1][2]*m[2][1]) - m[0][1]*(m[1][0]*m[2][2]-m[1][2]*m[2][0]) + m[0][2]*(m[1][0]*m[2][1]-m[1][1]*m[2][0])
	if !(math.Abs(det) > 1e-12) {
		return SDFFrameScale
	}
	if o := p.LocalOffsetM; !o.Finite() || math.Abs(o.X) > SDFMaxLocal || math.Abs(o.Y) > SDFMaxLocal || math.Abs(o.Z) > SDFMaxLocal {
		return SDFFramePlace
	}
	return SDFFrameOK
}

// sdfJumpFraction is how much of its force scale an update may change an
// SDF effect's force at the cursor by and still glide there (see sdfJumps).
const sdfJumpFraction = 0.25

// sdfJumps says whether an update of s to sp would change its force at the
// cursor x by more than sdfJumpFraction of its force scale: a shape moved,
// grown or turned onto the cursor. Gliding through such a change (about
// 24 ms) would push as hard as a step; the Renderer cross-fades it over the
// effect's fade instead, so the force changes by at most 2·ForceScaleN·dt/
// FadeNs a tick. An engine that moves a shape a little every frame glides.
func sdfJumps(s *state, sp *Spec, x hw.Vec3) bool {
	if s.cur == sp.Params {
		return false
	}
	before := sdfForce(s.prim, sp.Curve, &s.cur, x)
	after := sdfForce(s.prim, sp.Curve, &sp.Params, x)
	return before.Sub(after).Norm() > sdfJumpFraction*math.Max(s.cur.ForceScaleN, sp.Params.ForceScaleN)
}

// sdf renders an SDF effect at x (device frame).
func (s *state) sdf(x hw.Vec3) hw.Vec3 { return sdfForce(s.prim, s.sp.Curve, &s.cur, x) }

// sdfForce is an SDF effect's force at x (device frame). Beyond the band it
// costs one distance; in it, six more for the gradient (central
// differences) on every shape but the sphere, the plane and the boxes.
func sdfForce(prim Primitive, c SDFCurve, p *Params, x hw.Vec3) hw.Vec3 {
	xl := mulMat(&p.ToLocal, x).Add(p.LocalOffsetM)
	d := shapeDistance(prim, p, xl)
	g := c.Magnitude(d*p.DevMPerLocalM, p.RangeM)
	if g == 0 || !(p.ForceScaleN > 0) {
		return hw.Vec3{}
	}
	n := mulMatT(&p.ToLocal, sdfLocalGradient(prim, p, xl))
	l := n.Norm()
	if !(l > 0) {
		// The centre of a sphere, or a point where the gradient vanishes:
		// any way out will do, and it is a single point.
		return hw.Vec3{Z: p.ForceScaleN * g}
	}
	return n.Scale(p.ForceScaleN * g / l)
}

// boxGradient is the gradient of sdBox at q (box-centred), in closed
// form: outside, from the nearest point of the surface; inside, along the
// axis of the nearest face.
func boxGradient(q, b hw.Vec3) hw.Vec3 {
	d := hw.Vec3{X: math.Abs(q.X) - b.X, Y: math.Abs(q.Y) - b.Y, Z: math.Abs(q.Z) - b.Z}
	if d.X > 0 || d.Y > 0 || d.Z > 0 {
		return hw.Vec3{X: math.Copysign(math.Max(d.X, 0), q.X), Y: math.Copysign(math.Max(d.Y, 0), q.Y), Z: math.Copysign(math.Max(d.Z, 0), q.Z)}
	}
	switch {
	case d.X >= d.Y && d.X >= d.Z:
		return hw.Vec3{X: math.Copysign(1, q.X)}
	case d.Y >= d.Z:
		return hw.Vec3{Y: math.Copysign(1, q.Y)}
	}
	return hw.Vec3{Z: math.Copysign(1, q.Z)}
}

// sdfLocalGradient is the gradient of the primitive's distance at xl
// (local frame), not normalised.
func sdfLocalGradient(prim Primitive, p *Params, xl hw.Vec3) hw.Vec3 {
	switch prim {
	case PrimSphere:
		return xl.Sub(p.PointM)
	case PrimPlane:
		return p.AxisUnit
	case PrimBox, PrimRoundedBox:
		return boxGradient(xl.Sub(p.PointM), p.HalfExtentsM)
	}
	// A micrometre of the local frame: far below any encoder's step, far
	// above float64's resolution at desk scale.
	const h = 1e-6
	return hw.Vec3{
		X: shapeDistance(prim, p, hw.Vec3{X: xl.X + h, Y: xl.Y, Z: xl.Z}) - shapeDistance(prim, p, hw.Vec3{X: xl.X - h, Y: xl.Y, Z: xl.Z}),
		Y: shapeDistance(prim, p, hw.Vec3{X: xl.X, Y: xl.Y + h, Z: xl.Z}) - shapeDistance(prim, p, hw.Vec3{X: xl.X, Y: xl.Y - h, Z: xl.Z}),
		Z: shapeDistance(prim, p, hw.Vec3{X: xl.X, Y: xl.Y, Z: xl.Z + h}) - shapeDistance(prim, p, hw.Vec3{X: xl.X, Y: xl.Y, Z: xl.Z - h}),
	}
}
