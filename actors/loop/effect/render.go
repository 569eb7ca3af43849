package effect

import (
	"math"

	"github.com/hapticd/hapticd/hw"
)

// Input is what a tick renders from: the loop's clock and the cursor's
// last reported state, in the device frame.
type Input struct {
	NowNs       int64
	DtNs        int64
	PositionM   hw.Vec3
	VelocityMps hw.Vec3
}

// state is one effect's rendering state, owned by the loop's tick.
type state struct {
	sp *Spec // the effect as declared (in the Set in force, or the one it was removed from)
	// tgt is where cur is heading; mid and cur are the two smoothing
	// stages (see SmoothNs). settled: cur == tgt, skip the smoothing.
	mid, cur Params
	settled  bool
	removing bool
	// weight fades the effect in (0 → 1) and out (→ 0) over its FadeNs.
	weight float64
	// A wall-like effect's proxy: contact says the cursor went through
	// the surface and the proxy stays on it; trapped says the surface
	// came over the cursor (or the cursor was behind it when the effect
	// started), so it pushes nothing until the cursor is free again.
	contact, trapped bool
	proxyM           hw.Vec3
	phaseRad         float64
	forceN           hw.Vec3
	energyJ          float64
}

// Renderer renders one arm's effects, tick by tick. It is the loop's: one
// goroutine at a time, no allocation, no lock. Its zero value is ready.
type Renderer struct {
	set *Set
	n   int
	// Removed effects fade out in the slots after the live ones, so there
	// is room for a whole Set beside a whole fading one.
	st       [2 * MaxEffects]state
	prevM    hw.Vec3
	havePrev bool
}

// Render advances every effect of set by one tick and returns the sum of
// their forces (N), each × gain. A set other than the last one adopts it:
// effects with the same ID keep their state and move smoothly to the new
// parameters, new ones fade in, missing ones fade out. A nil set fades
// everything out.
func (r *Renderer) Render(set *Set, in *Input, gain float64) hw.Vec3 {
	if set != r.set {
		r.adopt(set)
	}
	dtS := float64(in.DtNs) * 1e-9
	alpha := 1 - math.Exp(-float64(in.DtNs)/float64(SmoothNs))
	var sum hw.Vec3
	for i := 0; i < r.n; {
		s := &r.st[i]
		// The energy the effect absorbed from the arm (package passivity's
		// convention): the work of last tick's force over the tick that
		// ended, −F·v·dt, positive while it takes energy out.
		s.energyJ -= s.forceN.Dot(in.VelocityMps) * dtS
		s.advance(in, dtS, alpha)
		f := s.render(in, dtS, r.prevM, r.havePrev).Scale(s.weight * gain)
		if !f.Finite() {
			f = hw.Vec3{}
		}
		s.forceN = f
		if s.removing && s.weight == 0 {
			r.n--
			r.st[i], r.st[r.n] = r.st[r.n], state{}
			continue
		}
		sum = sum.Add(f)
		i++
	}
	r.prevM, r.havePrev = in.PositionM, true
	return sum
}

// Pause says the effects are not rendered this tick (nobody's lease holds
// them). Their walls forget their contacts, so when rendering resumes a
// cursor behind a surface is let out rather than pushed out, and their
// fades start again from zero.
func (r *Renderer) Pause() {
	for i := range r.n {
		s := &r.st[i]
		s.contact, s.trapped, s.weight, s.forceN, s.energyJ = false, false, 0, hw.Vec3{}, 0
	}
	r.havePrev = false
}

// Reset forgets every effect at once (a halted device: its output is zero
// anyway).
func (r *Renderer) Reset() { *r = Renderer{} }

// Len is the number of effects rendered, including those fading out.
func (r *Renderer) Len() int { return r.n }

// Rendered describes one effect after a tick.
type Rendered struct {
	ID     string
	Kind   Kind
	Source Source
	// ForceN is the effect's force this tick (after its fade and the
	// gain, before the loop's passivity stage, clamp and ramp).
	ForceN hw.Vec3
	// ProxyM is a wall's proxy point: on the surface while the cursor is
	// through it (Contact), at the cursor otherwise. Other kinds: the cursor.
	ProxyM  hw.Vec3
	Contact bool
	// Weight is the fade, 0..1; Removing says the effect is fading out
	// because it left its Set.
	Weight   float64
	Removing bool
	// EnergyJ is the energy the effect absorbed from the arm so far
	// (−Σ F·v·dt, package passivity's convention): positive is passive,
	// negative means it drove the arm.
	EnergyJ float64
}

// Rendered fills dst with effect i (0 <= i < Len) as of the last tick.
func (r *Renderer) Rendered(i int, dst *Rendered) {
	s := &r.st[i]
	*dst = Rendered{ID: s.sp.ID, Kind: s.sp.Kind, Source: s.sp.Source, ForceN: s.forceN, ProxyM: s.proxyM,
		Contact: s.contact, Weight: s.weight, Removing: s.removing, EnergyJ: s.energyJ}
}

// adopt makes set the one in force (see Render).
func (r *Renderer) adopt(set *Set) {
	r.set = set
	for i := range r.n {
		r.st[i].removing = true
	}
	for j := range set.Len() {
		sp := &set.specs[j]
		if i := r.find(sp.ID, sp.Kind, sp.Primitive); i >= 0 {
			s := &r.st[i]
			s.sp, s.removing = sp, false
			if s.cur != sp.Params {
				s.settled = false
			}
			continue
		}
		if r.n == len(r.st) {
			r.dropFading()
		}
		r.st[r.n] = state{sp: sp, mid: sp.Params, cur: sp.Params, settled: true}
		r.n++
	}
}

// find returns the slot of a live or fading effect with this id, kind and
// primitive (an ID reused for another kind is a new effect), or -1.
func (r *Renderer) find(id string, k Kind, p Primitive) int {
	for i := range r.n {
		if sp := r.st[i].sp; sp.ID == id && sp.Kind == k && sp.Primitive == p {
			return i
		}
	}
	return -1
}

// dropFading makes room by ending the faintest effect still fading out.
// Only a Set replaced while the previous one's removals still fade can
// fill the slots.
func (r *Renderer) dropFading() {
	k := -1
	for i := range r.n {
		if s := &r.st[i]; s.removing && (k < 0 || s.weight < r.st[k].weight) {
			k = i
		}
	}
	if k < 0 {
		k = r.n - 1 // cannot happen: live effects never exceed MaxEffects
	}
	r.n--
	r.st[k], r.st[r.n] = r.st[r.n], state{}
}

// advance moves the fade weight and the smoothed parameters one tick on.
func (s *state) advance(in *Input, dtS, alpha float64) {
	fade := s.sp.FadeNs
	if fade <= 0 {
		fade = DefaultFadeNs
	}
	step := float64(in.DtNs) / float64(fade)
	target := 1.0
	if s.removing || (s.sp.ExpiresNs > 0 && in.NowNs >= s.sp.ExpiresNs) {
		target = 0
	}
	switch {
	case s.weight < target:
		s.weight = math.Min(target, s.weight+step)
	case s.weight > target:
		s.weight = math.Max(target, s.weight-step)
	}
	if !s.settled {
		s.settled = smooth(&s.mid, &s.cur, &s.sp.Params, alpha)
		if s.sp.Kind == Wall || s.sp.Kind == SpringLine || s.sp.Kind == SpringPlane || s.sp.Kind == Vibration ||
			(s.sp.Kind == Shape && s.sp.Primitive == PrimPlane) {
			// A direction blended component-wise is no longer unit.
			if l := s.cur.AxisUnit.Norm(); l > 1e-9 {
				s.cur.AxisUnit = s.cur.AxisUnit.Scale(1 / l)
			}
		}
	}
}

// render is the effect's force this tick (before weight and gain).
func (s *state) render(in *Input, dtS float64, prevM hw.Vec3, havePrev bool) hw.Vec3 {
	p := &s.cur
	x, v := in.PositionM, in.VelocityMps
	s.proxyM = x
	switch s.sp.Kind {
	case SpringPoint:
		return p.PointM.Sub(x).Scale(p.StiffnessNPerM).Sub(v.Scale(p.DampingNsPerM))
	case SpringLine:
		a := p.AxisUnit
		d := x.Sub(p.PointM)
		d = d.Sub(a.Scale(d.Dot(a)))
		vp := v.Sub(a.Scale(v.Dot(a)))
		return d.Scale(-p.StiffnessNPerM).Sub(vp.Scale(p.DampingNsPerM))
	case SpringPlane:
		n := p.AxisUnit
		return n.Scale(-p.StiffnessNPerM*n.Dot(x.Sub(p.PointM)) - p.DampingNsPerM*n.Dot(v))
	case Damper:
		b := p.DampingPerAxisNsPerM
		return hw.Vec3{
			X: -(p.DampingNsPerM + b.X) * v.X,
			Y: -(p.DampingNsPerM + b.Y) * v.Y,
			Z: -(p.DampingNsPerM + b.Z) * v.Z,
		}
	case Friction:
		stick := p.StickMps
		if stick <= 0 {
			stick = DefaultStickMps
		}
		return v.Scale(-p.CoulombN / math.Max(v.Norm(), stick))
	case Field:
		d := x.Sub(p.PointM)
		r := d.Norm()
		edge := clamp01((p.RadiusM - r) / (0.1 * p.RadiusM))
		if edge == 0 {
			return hw.Vec3{}
		}
		J := &p.JacobianNPerM
		f := hw.Vec3{
			X: p.ForceN.X + J[0][0]*d.X + J[0][1]*d.Y + J[0][2]*d.Z,
			Y: p.ForceN.Y + J[1][0]*d.X + J[1][1]*d.Y + J[1][2]*d.Z,
			Z: p.ForceN.Z + J[2][0]*d.X + J[2][1]*d.Y + J[2][2]*d.Z,
		}
		return f.Scale(edge)
	case Vibration:
		s.phaseRad = math.Mod(s.phaseRad+2*math.Pi*p.FrequencyHz*dtS, 2*math.Pi)
		return p.AxisUnit.Scale(p.AmplitudeN * math.Sin(s.phaseRad))
	case Wall, LimitSphere, LimitBox, Shape:
		return s.wall(x, v, prevM, havePrev)
	}
	return hw.Vec3{}
}

// wall renders a wall-like effect with a proxy (god object). The proxy
// follows the cursor in free space; when the cursor passes through the
// surface the proxy stays on it and a spring-damper pulls the cursor to
// it, never into the wall. If the surface came over the cursor instead
// (the effect appeared, was moved, or grew, with the cursor behind it),
// the proxy stays with the cursor on the side it was, and the wall pushes
// nothing until the cursor is out: a wall never fires a hand out of it.
func (s *state) wall(x, v, prevM hw.Vec3, havePrev bool) hw.Vec3 {
	p := &s.cur
	phi := freeDistance(s.sp, p, x)
	if phi >= 0 {
		s.contact, s.trapped = false, false
		return hw.Vec3{}
	}
	if !s.contact && !s.trapped {
		// Entering this tick. It is a contact only if the cursor moved
		// in: where it was last tick is free under today's surface.
		if havePrev && freeDistance(s.sp, p, prevM) >= 0 {
			s.contact = true
		} else {
			s.trapped = true
		}
	}
	if s.trapped {
		return hw.Vec3{}
	}
	n := freeNormal(s.sp, p, x)
	s.proxyM = x.Sub(n.Scale(phi))
	// Pushes out only: the damper never pulls a cursor that leaves.
	fn := -p.StiffnessNPerM*phi - p.DampingNsPerM*n.Dot(v)
	if fn <= 0 {
		return hw.Vec3{}
	}
	return n.Scale(fn)
}

// smooth moves mid toward tgt and cur toward mid by alpha of the way (two
// first-order stages, so a step starts with zero slope), and reports
// whether cur has arrived (then it is set to tgt exactly).
func smooth(mid, cur, tgt *Params, alpha float64) bool {
	a := alpha
	var err float64
	f := func(m, c *float64, t float64) {
		*m += (t - *m) * a
		*c += (*m - *c) * a
		err = math.Max(err, math.Abs(t-*c))
	}
	vec := func(m, c *hw.Vec3, t hw.Vec3) {
		f(&m.X, &c.X, t.X)
		f(&m.Y, &c.Y, t.Y)
		f(&m.Z, &c.Z, t.Z)
	}
	f(&mid.StiffnessNPerM, &cur.StiffnessNPerM, tgt.StiffnessNPerM)
	f(&mid.DampingNsPerM, &cur.DampingNsPerM, tgt.DampingNsPerM)
	vec(&mid.DampingPerAxisNsPerM, &cur.DampingPerAxisNsPerM, tgt.DampingPerAxisNsPerM)
	vec(&mid.PointM, &cur.PointM, tgt.PointM)
	vec(&mid.AxisUnit, &cur.AxisUnit, tgt.AxisUnit)
	vec(&mid.EndM, &cur.EndM, tgt.EndM)
	vec(&mid.HalfExtentsM, &cur.HalfExtentsM, tgt.HalfExtentsM)
	f(&mid.RadiusM, &cur.RadiusM, tgt.RadiusM)
	f(&mid.MinorRadiusM, &cur.MinorRadiusM, tgt.MinorRadiusM)
	f(&mid.HeightM, &cur.HeightM, tgt.HeightM)
	f(&mid.CoulombN, &cur.CoulombN, tgt.CoulombN)
	f(&mid.StickMps, &cur.StickMps, tgt.StickMps)
	vec(&mid.ForceN, &cur.ForceN, tgt.ForceN)
	for i := range 3 {
		for j := range 3 {
			f(&mid.JacobianNPerM[i][j], &cur.JacobianNPerM[i][j], tgt.JacobianNPerM[i][j])
		}
	}
	f(&mid.FrequencyHz, &cur.FrequencyHz, tgt.FrequencyHz)
	f(&mid.AmplitudeN, &cur.AmplitudeN, tgt.AmplitudeN)
	// 1e-9 of SI units: a nanometre, a nanonewton; below any device's
	// resolution, so snapping the rest of the way moves nothing.
	if err < 1e-9 {
		*mid, *cur = *tgt, *tgt
		return true
	}
	return false
}
