package main

import (
	"fmt"

	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/hw/sim"
)

// simFleet is what the flags ask to simulate. Without --sim it is
// --sim-arms Inverse3s and --sim-grips wireless grips (1 and 1 by
// default). With --sim it is that list alone, plus the shorthands only
// where they are given; a family given both ways is refused, since which
// count wins would be a guess.
func simFleet(o *options, given map[string]bool) (sim.Fleet, error) {
	// spelled says how the user gave each family, for the refusal below.
	spelled := map[sim.Family]string{}
	var fleet sim.Fleet
	if given["sim"] {
		fleet = append(fleet, o.sim...)
		for _, e := range o.sim {
			spelled[e.Family] = fmt.Sprintf("--sim %s=%d", e.Family, e.Count)
		}
	}
	for _, short := range []struct {
		flag   string
		family sim.Family
		count  int
	}{
		{"sim-arms", sim.FamilyInverse3, o.simArms},
		{"sim-grips", sim.FamilyWirelessVerseGrip, o.simGrips},
	} {
		// Without --sim the shorthands (given or by default) are the fleet.
		if given["sim"] && !given[short.flag] {
			continue
		}
		for _, e := range fleet {
			if e.Family == short.family {
				return nil, fmt.Errorf("--%s and --sim %s=%d both say how many %s to simulate: give one", short.flag, short.family, e.Count, short.family)
			}
		}
		fleet = append(fleet, sim.FleetEntry{Family: short.family, Count: short.count})
		spelled[short.family] = fmt.Sprintf("--%s %d", short.flag, short.count)
	}
	// Past its span a family's indices are the next family's: an Inverse3
	// would take an Inverse3x's id and UUID, and its stored config.
	for _, e := range fleet {
		if e.Count > 0 && o.lab.simIndexBase+e.Count > sim.FamilyIndexSpan {
			return nil, fmt.Errorf("%s with --sim-index-base %d: a family has room for %d simulated devices", spelled[e.Family], o.lab.simIndexBase, sim.FamilyIndexSpan)
		}
	}
	return fleet, nil
}

// simMotion is the scripted hand on a simulated device of family f:
// --sim-motion when given; else a grip rocks and clicks (a grip lying
// still shows a client nothing) and an arm rests (a hand on it would fight
// the client's forces).
func simMotion(o *options, f sim.Family) sim.Motion {
	if o.simMotionSet {
		return o.simMotion
	}
	if f.Spec().Kind == hw.KindGrip {
		return sim.MotionCircle
	}
	return sim.MotionNone
}
