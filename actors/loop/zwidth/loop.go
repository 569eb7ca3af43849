package zwidth

import (
	"fmt"

	"github.com/hapticd/hapticd/actors/loop/effect"
	"github.com/hapticd/hapticd/actors/loop/passivity"
	"github.com/hapticd/hapticd/hw"
)

// LoopWall is the loop's own effect renderer (actors/loop/effect) with one
// Wall effect declared: the very code a device's loop runs every tick for
// a session's wall, proxy and all.
type LoopWall struct {
	set  *effect.Set
	r    effect.Renderer
	room effect.Inline
	in   effect.Input
}

// NewLoopWall declares a wall on pl of the given stiffness (no virtual
// damping) and returns its renderer. The wall is in force from the first
// tick: its fade is 1 ns, since a trial starts with it in place. The
// effect package bounds the stiffness at effect.MaxStiffnessNPerM.
func NewLoopWall(pl Plane, stiffnessNpm float64) (*LoopWall, error) {
	set, err := effect.NewSet(1, []effect.Spec{{ID: "zwidth-wall", Kind: effect.Wall, FadeNs: 1,
		Params: effect.Params{StiffnessNPerM: stiffnessNpm, PointM: pl.PointM, AxisUnit: pl.Normal}}})
	if err != nil {
		return nil, fmt.Errorf("actors/loop/zwidth: %w", err)
	}
	w := &LoopWall{set: set}
	w.r.UseInline(&w.room) // room for the wall, as a device's loop gives its effects
	return w, nil
}

// Force implements WallRenderer.
func (w *LoopWall) Force(posM, velMps hw.Vec3, nowNs, dtNs int64) hw.Vec3 {
	w.in = effect.Input{NowNs: nowNs, DtNs: dtNs, PositionM: posM, VelocityMps: velMps}
	return w.r.Render(w.set, &w.in, 1)
}

// ProxyM is the wall's proxy point after the last tick: where an engine
// draws the contact.
func (w *LoopWall) ProxyM() hw.Vec3 {
	var d effect.Rendered
	w.r.Rendered(0, &d)
	return d.ProxyM
}

// LoopPassivity is the loop's own passivity controller
// (actors/loop/passivity), switched on with its default options.
type LoopPassivity struct {
	c     passivity.Controller
	spell passivity.Spell
	o     passivity.Options
}

// NewLoopPassivity returns the loop's controller, enabled.
func NewLoopPassivity() *LoopPassivity {
	return &LoopPassivity{o: passivity.Options{Enabled: true}}
}

// Step implements Passivity.
func (p *LoopPassivity) Step(f, v hw.Vec3, nowNs, dtNs int64) hw.Vec3 {
	return p.c.Step(f, v, nowNs, dtNs, &p.o, &p.spell)
}

// Applied implements Passivity.
func (p *LoopPassivity) Applied(f hw.Vec3) { p.c.Applied(f) }

// DampingNsPerM is the damping the controller added on the last tick.
func (p *LoopPassivity) DampingNsPerM() float64 { return p.c.DampingNsPerM }

var (
	_ WallRenderer = (*LoopWall)(nil)
	_ Passivity    = (*LoopPassivity)(nil)
)
