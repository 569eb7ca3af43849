package effect

import (
	"math"
	"sync/atomic"
	"unsafe"

	"github.com/hapticd/hapticd/actors/loop/passivity"
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

// state is one effect's rendering state, owned by the loop's tick. A tick
// of a settled spring, damper or wall reads and writes its first
// InlineHotBytes only (the flags, fade, force, proxy point and kind word,
// then cur's first fields); with 10,000 arms rendering, the lines a tick
// touches are its cost.
type state struct {
	kind     Kind
	prim     Primitive
	keepIn   bool
	removing bool
	settled  bool
	// A wall-like effect's proxy: contact says the cursor went through
	// the surface and the proxy stays on it; trapped says the surface
	// came over the cursor (or the cursor was behind it when the effect
	// started), so it pushes nothing until the cursor is free again.
	contact, trapped bool
	// weight fades the effect in (0 → 1) and out (→ 0) over fadeNs.
	weight    float64
	expiresNs int64
	forceN    hw.Vec3
	energyJ   float64
	// proxyM and kindWord, which every wall tick stores, sit between the
	// force and cur's first fields, so that what a settled spring, damper
	// or wall touches is one span (InlineHotBytes): with the proxy after
	// cur, a wall's tick read a line more of each effect.
	proxyM hw.Vec3
	// kindWord is the one number an effect's kind carries from tick to
	// tick besides its parameters: a vibration's phase (rad); a wall's
	// contact depth (m), how deep the cursor's own motion took it through
	// the surface, never more than the surface's own depth, so a surface
	// moved over a cursor in contact adds no force (wall); while a closed
	// shape's cursor is trapped, the way it was last pushed out, packed
	// (packDirection). An effect keeps its kind for its life (find), and
	// one word keeps the state's size.
	kindWord float64
	// cur is where the parameters are this tick (Params puts the fields
	// springs, dampers and walls read first); mid the first of the two
	// smoothing stages toward sp.Params (see SmoothNs).
	cur    Params
	fadeNs int64
	sp     *Spec // the effect as declared (in the Set in force, or the one it left)
	mid    Params
}

// Slots is room for a Renderer's effects, allocated off the tick and
// handed to it (Renderer.UseSlots).
type Slots struct{ st []state }

// NewSlots returns room for n effects.
func NewSlots(n int) *Slots { return &Slots{st: make([]state, n)} }

// Cap is how many effects s has room for.
func (s *Slots) Cap() int { return len(s.st) }

// Where an Inline keeps what a tick of a settled spring, damper or wall
// reads and writes: InlineSlotBytes apart, each effect's first
// InlineHotBytes (its flags, fade, force, proxy point, kind word and the
// parameters those kinds read). A loop stepping thousands of arms may
// prefetch them ahead of rendering.
const (
	InlineSlotBytes = unsafe.Sizeof(state{})
	InlineHotBytes  = unsafe.Offsetof(state{}.cur) + unsafe.Offsetof(Params{}.EndM)
)

// Inline is room for two effects (a wall and a damper, say) inside the
// struct that holds the Renderer, so that rendering them reads memory next
// to the Renderer's own: with thousands of arms, separately allocated
// slots cost a tick several times more in cache misses.
type Inline struct{ st [2]state }

// UseInline makes in the Renderer's room, if it has less. Call it before
// the first Render, on the goroutine that renders.
func (r *Renderer) UseInline(in *Inline) {
	if len(r.st) < len(in.st) {
		copy(in.st[:], r.st[:r.n])
		r.st = in.st[:]
	}
}

// Renderer renders one arm's effects, tick by tick. It is the loop's: one
// goroutine at a time, no allocation, no lock. It holds as many effects as
// its slots (Reserve, UseSlots): a Set's effects plus those of the Set
// before it that still fade out. Its zero value has none.
type Renderer struct {
	set *Set
	n   int
	// The effects in force first, then those fading out.
	st       []state
	prevM    hw.Vec3
	havePrev bool
	// held is n, stored whenever n changes, for a goroutine that sizes
	// the room (Held). Beside havePrev, in its padding.
	held    atomic.Int32
	alphaDt int64 // the tick length alpha was computed for
	alpha   float64
	// activeN is the part of the last Render's sum from effects meant to
	// drive the arm (Field, Vibration): see ActiveForceN.
	activeN hw.Vec3
}

// Held is Len, safe to call from any goroutine: a goroutine that sizes the
// room for a new Set counts the effects of earlier Sets still fading out
// (a client that renames its effects every frame keeps several
// generations fading).
func (r *Renderer) Held() int { return int(r.held.Load()) }

func (r *Renderer) noteHeld() { r.held.Store(int32(r.n)) }

// Reserve makes room for n effects (allocating: call it off the tick, on
// the goroutine that renders).
func (r *Renderer) Reserve(n int) {
	if n > len(r.st) {
		r.UseSlots(NewSlots(n))
	}
}

// UseSlots moves the effects into s, if it is larger. It does not
// allocate: a loop allocates s where it may and hands it over.
func (r *Renderer) UseSlots(s *Slots) {
	if len(s.st) <= len(r.st) {
		return
	}
	copy(s.st, r.st[:r.n])
	r.st = s.st
}

// Cap is how many effects the Renderer has room for.
func (r *Renderer) Cap() int { return len(r.st) }

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
	// A velocity no arm reaches is a bad reading: no work over it
	// (passivity.MaxSpeedMps).
	v := in.VelocityMps
	counts := !(v.Dot(v) > passivity.MaxSpeedMps*passivity.MaxSpeedMps)
	if !counts {
		// Nor is any force rendered from it: a damper's −b·v_bad, held
		// for the next tick's work, counted b·|v_bad|·|v|·dt there (one
		// −1000 m/s frame took a 20 N·s/m damper from +2.4 J to −7.6 J),
		// and pushed the arm with the clamp's force against a motion it
		// never made. The tick renders the arm at rest where it is: the
		// terms of position as ever, those of velocity nothing.
		still := *in
		still.VelocityMps = hw.Vec3{}
		in = &still
	}
	var sum, active hw.Vec3
	for i := 0; i < r.n; {
		s := &r.st[i]
		// The energy the effect absorbed from the arm (package passivity's
		// convention): the work of last tick's force over the tick that
		// ended, −F·v·dt, positive while it takes energy out.
		if counts {
			s.energyJ -= s.forceN.Dot(v) * dtS
		}
		s.advance(in, r)
		f := s.render(in, dtS, r.prevM, r.havePrev).Scale(s.weight * gain)
		if !f.Finite() {
			f = hw.Vec3{}
		}
		s.forceN = f
		if s.removing && s.weight == 0 {
			r.n--
			r.st[i], r.st[r.n] = r.st[r.n], state{}
			r.noteHeld()
			continue
		}
		sum = sum.Add(f)
		if s.kind == Field || s.kind == Vibration {
			active = active.Add(f)
		}
		i++
	}
	r.prevM, r.havePrev = in.PositionM, true
	r.activeN = active
	return sum
}

// ActiveForceN is the part of the last Render's sum from effects that
// drive the arm by intent (a Field's F0, a Vibration): the rest are
// passive by design (springs, dampers, friction, walls, limits, shapes,
// SDF effects) and only a sampling artefact makes them generate energy,
// which the passivity controller's default scope corrects.
func (r *Renderer) ActiveForceN() hw.Vec3 { return r.activeN }

// Pause says the effects are not rendered this tick (nobody's lease holds
// them). Their walls forget their contacts, so when rendering resumes a
// cursor behind a surface is let out rather than pushed out, and their
// fades start again from zero.
func (r *Renderer) Pause() {
	for i := range r.n {
		s := &r.st[i]
		s.contact, s.trapped, s.weight, s.forceN, s.energyJ = false, false, 0, hw.Vec3{}, 0
		if s.kind != Vibration {
			s.kindWord = 0 // a wall's depth; a vibration keeps its phase
		}
	}
	r.havePrev, r.activeN = false, hw.Vec3{}
}

// Reset forgets every effect at once (a halted device: its output is zero
// anyway).
func (r *Renderer) Reset() {
	clear(r.st)
	st := r.st
	*r = Renderer{}
	r.st = st
	r.noteHeld()
}

// Len is the number of effects rendered, including those fading out.
func (r *Renderer) Len() int { return r.n }

// Energy returns the energy the effects absorbed from the arm (see
// Rendered.EnergyJ), summed by Source.
func (r *Renderer) Energy() (effectsJ, navigationJ float64) {
	for i := range r.n {
		s := &r.st[i]
		if s.sp.Source == SourceNavigation {
			navigationJ += s.energyJ
		} else {
			effectsJ += s.energyJ
		}
	}
	return effectsJ, navigationJ
}

// Set returns the Set the Renderer adopted last.
func (r *Renderer) Set() *Set { return r.set }

// Rendered describes one effect after a tick.
type Rendered struct {
	ID     string
	Kind   Kind
	Source Source
	// ForceN is the effect's force this tick (after its fade and the
	// gain, before the loop's passivity stage, clamp and ramp).
	ForceN hw.Vec3
	// ProxyM is a wall's proxy point: where its spring pulls the cursor
	// while the cursor is through it (Contact): on the surface, or inside
	// a surface moved further over the cursor than the cursor pushed in
	// (wall); at the cursor otherwise. Other kinds: the cursor.
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
	*dst = Rendered{ID: s.sp.ID, Kind: s.kind, Source: s.sp.Source, ForceN: s.forceN, ProxyM: s.proxyM,
		Contact: s.contact, Weight: s.weight, Removing: s.removing, EnergyJ: s.energyJ}
}

// Removing reports whether effect i (0 <= i < Len) is fading out: its Set
// is no longer in force.
func (r *Renderer) Removing(i int) bool { return r.st[i].removing }

// adopt makes set the one in force (see Render). An effect that finds no
// slot (a Renderer with too little room) is not rendered: the loop
// reserves room for every Set before publishing it.
func (r *Renderer) adopt(set *Set) {
	prev := r.set
	r.set = set
	for i := range r.n {
		r.st[i].removing = true
	}
	for j := range set.Len() {
		sp := &set.specs[j]
		i := r.find(sp, prev)
		if i >= 0 && sp.Kind == SDF && r.havePrev && sdfJumps(&r.st[i], sp, r.prevM) {
			// Gliding there would sweep the field over the cursor in a
			// few ticks: fade this one out and the new one in instead.
			i = -1
		}
		if i >= 0 {
			s := &r.st[i]
			s.sp, s.removing = sp, false
			s.expiresNs, s.fadeNs, s.keepIn = sp.ExpiresNs, fadeOf(sp), sp.KeepInside
			if s.cur != sp.Params {
				s.settled = false
			}
			continue
		}
		if r.n == len(r.st) && !r.dropFading() {
			continue
		}
		r.st[r.n] = state{kind: sp.Kind, prim: sp.Primitive, keepIn: sp.KeepInside, settled: true,
			expiresNs: sp.ExpiresNs, fadeNs: fadeOf(sp), cur: sp.Params, sp: sp, mid: sp.Params}
		r.n++
	}
	r.noteHeld()
}

func fadeOf(sp *Spec) int64 {
	if sp.FadeNs <= 0 {
		return DefaultFadeNs
	}
	return sp.FadeNs
}

// find returns the slot of a live or fading effect with sp's id, kind,
// primitive and curve (an ID reused for another kind is a new effect), or
// -1. The one prev (the Set in force until now) rendered comes first: after
// a cross-fade (sdfJumps) the ID has a slot fading out too.
func (r *Renderer) find(sp *Spec, prev *Set) int {
	k := -1
	for i := range r.n {
		s := &r.st[i]
		if s.kind != sp.Kind || s.prim != sp.Primitive || s.sp.ID != sp.ID || s.sp.Curve != sp.Curve {
			continue
		}
		for j := range prev.Len() {
			if s.sp == &prev.specs[j] {
				return i
			}
		}
		k = i
	}
	return k
}

// dropFading makes room by ending the faintest effect still fading out,
// and reports whether there was one.
func (r *Renderer) dropFading() bool {
	k := -1
	for i := range r.n {
		if s := &r.st[i]; s.removing && (k < 0 || s.weight < r.st[k].weight) {
			k = i
		}
	}
	if k < 0 {
		return false
	}
	r.n--
	r.st[k], r.st[r.n] = r.st[r.n], state{}
	return true
}

// alphaFor is the smoothing stages' step for a tick of dtNs (see
// SmoothNs), kept for the last tick length. Only an effect whose
// parameters are still moving needs it: a loop's tick length varies by
// nanoseconds from tick to tick, and computing it on every tick cost an
// exponential per arm with effects that had long settled.
func (r *Renderer) alphaFor(dtNs int64) float64 {
	if dtNs != r.alphaDt {
		r.alphaDt, r.alpha = dtNs, 1-math.Exp(-float64(dtNs)/float64(SmoothNs))
	}
	return r.alpha
}

// advance moves the fade weight and the smoothed parameters one tick on.
func (s *state) advance(in *Input, r *Renderer) {
	target := 1.0
	if s.removing || (s.expiresNs > 0 && in.NowNs >= s.expiresNs) {
		target = 0
	}
	if s.weight != target {
		step := float64(in.DtNs) / float64(s.fadeNs)
		if s.weight < target {
			s.weight = math.Min(target, s.weight+step)
		} else {
			s.weight = math.Max(target, s.weight-step)
		}
	}
	if !s.settled {
		s.settled = smooth(&s.mid, &s.cur, &s.sp.Params, r.alphaFor(in.DtNs))
		if k := s.kind; k == Wall || k == SpringLine || k == SpringPlane || k == Vibration || ((k == Shape || k == SDF) && s.prim == PrimPlane) {
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
	lastProxy := s.proxyM // a wall in contact continues from it
	s.proxyM = x
	switch s.kind {
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
		s.kindWord = math.Mod(s.kindWord+2*math.Pi*p.FrequencyHz*dtS, 2*math.Pi) // the phase
		return p.AxisUnit.Scale(p.AmplitudeN * math.Sin(s.kindWord))
	case Wall, LimitSphere, LimitBox, Shape:
		return s.wall(x, v, prevM, lastProxy, havePrev)
	case SDF:
		return s.sdf(x)
	}
	return hw.Vec3{}
}

// wall renders a wall-like effect with a proxy (god object). The proxy
// follows the cursor in free space; when the cursor passes through the
// surface the proxy stays on it and a spring-damper pulls the cursor to
// it, never into the wall. If the surface came over the cursor instead
// (the effect appeared, was moved, or grew, with the cursor behind it),
// the proxy stays with the cursor where it is, and the wall pushes
// nothing there: a wall never fires a hand out of it.
// The same holds in contact: the spring stretches only by the cursor's own
// motion into the surface (its depth), so a surface moved or grown further
// over a cursor already touching it adds no force. A trapped cursor (the
// surface came over it, or it backed out of what it pushed in while the
// surface still covers it) meets the wall where it is: it moves out
// freely, and its own motion deeper is pushed back as a contact is.
//
// In contact, the surface that pushes is the one the cursor went in
// through (entrySide), not the nearest: a hand pressed past the middle of
// a thin plate or a small bead is pushed back the way it came, not out
// through the far side. So is a hand that a thin solid moved under, past
// its middle (castOut).
func (s *state) wall(x, v, prevM, lastProxy hw.Vec3, havePrev bool) hw.Vec3 {
	p := &s.cur
	phi := freeDistance(s, p, x)
	if phi >= 0 {
		s.contact, s.trapped, s.kindWord = false, false, 0
		return hw.Vec3{}
	}
	var n hw.Vec3 // the direction the proxy lies in from the cursor
	if !s.contact && !s.trapped {
		// Entering this tick. It is a contact only if the cursor moved
		// in: where it was last tick is free under today's surface. If
		// the surface came over it instead, the cursor is trapped at a
		// depth of zero: no force now, and from here only its own motion
		// deeper pushes it back.
		if havePrev && freeDistance(s, p, prevM) >= 0 {
			s.contact, s.kindWord = true, -phi
			n = freeNormal(s, p, x)
		} else {
			s.trapped, s.kindWord = true, 0
		}
	} else {
		// In contact or trapped, the depth grows by what the cursor's own
		// motion took it into today's surface (its depth under it at the
		// last position less at this one, both under today's surface, so
		// sliding along any shape at one depth keeps it), shrinks as it
		// backs out, and never exceeds the surface's own depth under the
		// cursor. A plane's depth is its distance; a closed shape's is
		// measured from the surface the cursor went in through
		// (entrySide). Backed out to zero, the cursor is trapped where it
		// is: pushing deeper again meets the wall there, and backing out
		// further is free.
		d := s.kindWord
		var depth float64
		if s.kind == Wall {
			n, depth = p.AxisUnit, -phi
			if havePrev {
				d += freeDistance(s, p, prevM) - phi
			}
		} else {
			n, depth, d = s.closedDepth(p, x, prevM, lastProxy, havePrev)
		}
		if d > depth {
			d = depth
		}
		s.contact, s.trapped = true, false
		if !(d > 0) { // also a depth that is not a number
			s.contact, s.trapped, d = false, true, 0
			if s.kind != Wall {
				d = packDirection(n) // the way out, for the ticks it stays trapped
			}
		}
		s.kindWord = d
	}
	if s.trapped {
		return hw.Vec3{}
	}
	// The proxy is where the spring pulls the cursor, where the user feels
	// the surface: on it, unless it came further over the cursor than the
	// cursor pushed in.
	s.proxyM = x.Add(n.Scale(s.kindWord))
	// Pushes out only: the damper never pulls a cursor that leaves.
	fn := p.StiffnessNPerM*s.kindWord - p.DampingNsPerM*n.Dot(v)
	if fn <= 0 {
		return hw.Vec3{}
	}
	return n.Scale(fn)
}

// closedDepth is wall's step for a closed shape in contact or trapped:
// the normal of the surface the cursor went in through (entrySide), the
// cursor's depth under it, and the contact's depth d grown by the
// cursor's own motion since the last tick (before wall bounds it). Apart
// from wall, so that a plane wall's tick runs the code it ran before the
// cast (castOut) was added.
func (s *state) closedDepth(p *Params, x, prevM, lastProxy hw.Vec3, havePrev bool) (n hw.Vec3, depth, d float64) {
	d = s.kindWord
	// came: the way the cursor was pushed out last tick (from
	// the cursor to its proxy), or, trapped, the way it was
	// pushed out when it last was (kindWord keeps it).
	var came hw.Vec3
	if s.trapped {
		came, d = unpackDirection(d), 0
	} else if havePrev {
		came = lastProxy.Sub(prevM)
	}
	n, depth = s.entrySide(p, x, lastProxy)
	if n.Dot(came) < 0 {
		// A thin solid moved under the cursor by more than half
		// its thickness: the proxy (or the trapped cursor) is past
		// its middle, and the surface found from it is the far
		// one. The surface the cursor was on is where it left the
		// solid along the way it came.
		if c, ok := s.castOut(p, x, came); ok {
			n, depth = s.entrySide(p, x, c)
		}
	}
	if havePrev {
		// Both depths from one face (their normals within 8°):
		// sliding along a curve at one depth keeps it exactly.
		// From two (a box's edge, a cylinder's rim), the one
		// under this face grew by the cursor's motion along its
		// normal only: the other's whole depth, credited in one
		// tick, pushed a hand moving along the face (review27:
		// +4.5 mJ a loop round a container's edge).
		if nw, was := s.entrySide(p, prevM, lastProxy); nw.Dot(n) > 0.99 {
			d += depth - was
		} else {
			d += n.Dot(prevM.Sub(x))
		}
	}
	return n, depth, d
}

// entrySide is the surface a closed shape's cursor in contact went in
// through, found from the last tick's proxy (on that surface, or between
// it and the cursor): the point of the surface's tangent plane there
// nearest the cursor, put back onto today's surface along its own
// normal. It returns the normal at that point and the cursor's depth
// under it along the normal (not above 0 if the cursor is no longer under
// it). The nearest surface is another one once the cursor is past the
// middle of a thin solid, and pushing toward it would push the hand
// through; sliding along the surface, the tangent plane follows it round.
func (s *state) entrySide(p *Params, x, lastProxy hw.Vec3) (n hw.Vec3, depth float64) {
	n0 := freeNormal(s, p, lastProxy)
	c := x.Add(n0.Scale(n0.Dot(lastProxy.Sub(x))))
	c = c.Sub(freeNormal(s, p, c).Scale(freeDistance(s, p, c)))
	n = freeNormal(s, p, c)
	return n, n.Dot(c.Sub(x))
}

// castOut is where the ray from x, behind the surface, along dir leaves
// the solid, found by sphere tracing: each step is the distance to the
// nearest surface, which the ray cannot cross sooner. ok is false if the
// ray does not get out within its steps (a container's wall is the whole
// space outside it, and a ray away from the container never does).
func (s *state) castOut(p *Params, x, dir hw.Vec3) (c hw.Vec3, ok bool) {
	u := dir.Scale(1 / dir.Norm())
	t := 0.0
	for range 64 {
		c = x.Add(u.Scale(t))
		phi := freeDistance(s, p, c)
		if phi >= -1e-9 { // within a nanometre of the surface
			return c, true
		}
		if t -= phi; t > 100 { // m: longer than any solid NewSet allows
			break
		}
	}
	return c, false
}

// packDirection keeps a unit vector (or zero) in one number, a trapped
// wall's kindWord: 17 bits a component (a step of 1.5e-5), an integer
// under 2⁵³, so a float64 holds it exactly; 0 is the zero vector. A
// state's size is its cost to the loops that step thousands of arms, and a
// trapped cursor has no depth to keep.
func packDirection(n hw.Vec3) float64 {
	if n == (hw.Vec3{}) {
		return 0
	}
	q := func(c float64) uint64 { return uint64(math.Round((clampUnit(c) + 1) * directionSteps)) }
	return float64(1 + (q(n.X) | q(n.Y)<<17 | q(n.Z)<<34))
}

// unpackDirection is packDirection's inverse, within its step.
func unpackDirection(w float64) hw.Vec3 {
	if !(w >= 1) {
		return hw.Vec3{}
	}
	b := uint64(w) - 1
	c := func(shift uint) float64 { return float64(b>>shift&(1<<17-1))/directionSteps - 1 }
	return hw.Vec3{X: c(0), Y: c(17), Z: c(34)}
}

// directionSteps is packDirection's steps a unit: 2·65,535 + 1 values a
// component fit in 17 bits.
const directionSteps = 65535

// clampUnit is c within [−1, 1] (−1 for a NaN).
func clampUnit(c float64) float64 {
	if !(c >= -1) {
		return -1
	}
	return math.Min(1, c)
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
	for i := range 3 {
		for j := range 3 {
			f(&mid.ToLocal[i][j], &cur.ToLocal[i][j], tgt.ToLocal[i][j])
		}
	}
	vec(&mid.LocalOffsetM, &cur.LocalOffsetM, tgt.LocalOffsetM)
	f(&mid.DevMPerLocalM, &cur.DevMPerLocalM, tgt.DevMPerLocalM)
	f(&mid.RangeM, &cur.RangeM, tgt.RangeM)
	f(&mid.ForceScaleN, &cur.ForceScaleN, tgt.ForceScaleN)
	// 1e-9 of SI units: a nanometre, a nanonewton; below any device's
	// resolution, so snapping the rest of the way moves nothing.
	if err < 1e-9 {
		*mid, *cur = *tgt, *tgt
		return true
	}
	return false
}
