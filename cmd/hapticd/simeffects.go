package main

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/hapticd/hapticd/actors"
	"github.com/hapticd/hapticd/actors/loop/effect"
	"github.com/hapticd/hapticd/hw"
)

// simEffects is --sim-effects (and baseline-arms' --effects): effects
// every simulated arm renders for a capacity run, so `hapticbench arms
// --effects` measures the loop with effects through the real service
// beside a bare loop rendering the same ones. The names stand for fixed
// effects, the pair BenchmarkEffectArmsTick renders:
//
//	wall    a wall through the arm's workspace centre, normal +Z, 2000 N/m, 1 N·s/m
//	damper  a damper of 2 N·s/m
type simEffects []string

var simEffectNames = []string{"wall", "damper"}

func (e *simEffects) String() string { return strings.Join(*e, ",") }

// Set takes a comma-separated list of effect names, each at most once.
func (e *simEffects) Set(s string) error {
	var names simEffects
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		switch {
		case part == "":
			continue
		case !slices.Contains(simEffectNames, part):
			return fmt.Errorf("unknown effect %q: give a comma-separated list of %s", part, strings.Join(simEffectNames, ", "))
		case slices.Contains(names, part):
			return fmt.Errorf("effect %q given twice", part)
		}
		names = append(names, part)
	}
	if len(names) == 0 {
		return fmt.Errorf("no effect in %q: give a comma-separated list of %s", s, strings.Join(simEffectNames, ", "))
	}
	*e = names
	return nil
}

// set is the effects as a Set declared by session on an arm whose
// workspace centre is centreM (nil: none).
func (e simEffects) set(session uint64, centreM hw.Vec3) (*effect.Set, error) {
	if len(e) == 0 {
		return nil, nil
	}
	specs := make([]effect.Spec, 0, len(e))
	for _, name := range e {
		switch name {
		case "wall":
			specs = append(specs, effect.Spec{ID: "wall", Kind: effect.Wall, Params: effect.Params{
				StiffnessNPerM: 2000, DampingNsPerM: 1, AxisUnit: hw.Vec3{Z: 1}, PointM: centreM}})
		case "damper":
			specs = append(specs, effect.Spec{ID: "damper", Kind: effect.Damper, Params: effect.Params{DampingNsPerM: 2}})
		}
	}
	return effect.NewSet(session, specs)
}

// simEffectsSession is the session --sim-effects holds arms as: no
// client's (sessions are numbered up from 1), so a client that tries to
// control such an arm is told it is busy.
const simEffectsSession = math.MaxUint64

// holdWithEffects makes dev controlled, for as long as the service runs,
// by simEffectsSession with a command of zero force and fx declared: its
// loop then renders them every tick, summed with that command, through
// the same stages (lease, effects, passivity, clamp) as a session's. A
// client's own control of the arm is refused (device_busy) meanwhile.
func holdWithEffects(dev *actors.Device, fx simEffects) error {
	// Through this arm's centre: a Minverse's lies lower than an
	// Inverse3's, whose wall it would never touch.
	set, err := fx.set(simEffectsSession, dev.Info.WorkspaceCenterM)
	if err != nil {
		return fmt.Errorf("--sim-effects: %w", err)
	}
	// Effects first, then the claim and the command, as a session
	// declares them: the loop renders them from the command on.
	dev.RenderHeld(set)
	reg := dev.Register()
	if owner := reg.Claim(simEffectsSession); owner != simEffectsSession {
		return fmt.Errorf("--sim-effects: %s %s is already controlled by session %d", dev.Name, dev.ID, owner)
	}
	// A lease that outlives the service: the loop's clock is monotonic
	// nanoseconds, far below 2^62 on any machine.
	cmd := hw.Command{Mode: hw.ModeForce}
	if !reg.Write(simEffectsSession, 1, 1<<62, &cmd, nil) {
		return errors.New("--sim-effects: the command was refused")
	}
	return nil
}
