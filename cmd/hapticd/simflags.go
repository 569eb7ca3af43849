package main

import (
	"fmt"

	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/hw/emulator"
	"github.com/hapticd/hapticd/hw/sim"
)

// simFleet is what the flags ask to simulate. Without --sim it is
// --sim-arms Inverse3s and --sim-grips wireless grips (1 and 1 by
// default). With --sim it is that list alone, plus the shorthands only
// where they are given; a family given both ways is refused, since which
// count wins would be a guess.
func simFleet(o *options, given map[string]bool) (sim.Fleet, error) {
	return fleetFromFlags("sim", o.sim, []fleetShorthand{
		{"sim-arms", sim.FamilyInverse3, o.simArms},
		{"sim-grips", sim.FamilyWirelessVerseGrip, o.simGrips},
	}, given, o.lab.simIndexBase, sim.FamilyIndexSpan, "simulate",
		// Past its span a family's indices are the next family's: an
		// Inverse3 would take an Inverse3x's id and UUID, and its stored
		// config.
		"simulated devices")
}

// emulatedFleet is what the flags ask to emulate on pseudo-terminals:
// --emulate, and --emulate-arms Inverse3s, as simFleet reads --sim and
// --sim-arms.
func emulatedFleet(o *options, given map[string]bool) (sim.Fleet, error) {
	return fleetFromFlags("emulate", o.emulate, []fleetShorthand{
		{"emulate-arms", sim.FamilyInverse3, o.emulateArms},
	}, given, o.lab.simIndexBase, emulator.EmulatedIndexSpan, "emulate",
		// Emulated devices take their ids from the quarter of the id space
		// no simulated family uses, a share of it per family
		// (emulator.Identity); past it one would take another's id.
		"emulated devices")
}

// fleetShorthand is a flag that gives one family's count (--sim-arms N).
type fleetShorthand struct {
	flag   string
	family sim.Family
	count  int
}

// fleetFromFlags is the fleet of the family=count flag listFlag (list)
// and its shorthands: with listFlag given, that list plus the shorthands
// given; without, the shorthands (given or by default). A family given
// both ways is refused, and so is a count past span from base. verb and
// what name the flags' job in the refusals ("simulate", "simulated
// devices").
func fleetFromFlags(listFlag string, list sim.Fleet, shorts []fleetShorthand, given map[string]bool, base, span int, verb, what string) (sim.Fleet, error) {
	// spelled says how the user gave each family, for the refusals below.
	spelled := map[sim.Family]string{}
	var fleet sim.Fleet
	if given[listFlag] {
		fleet = append(fleet, list...)
		for _, e := range list {
			spelled[e.Family] = fmt.Sprintf("--%s %s=%d", listFlag, e.Family, e.Count)
		}
	}
	for _, short := range shorts {
		if given[listFlag] && !given[short.flag] {
			continue
		}
		for _, e := range fleet {
			if e.Family == short.family {
				return nil, fmt.Errorf("--%s and --%s %s=%d both say how many %s to %s: give one", short.flag, listFlag, short.family, e.Count, short.family, verb)
			}
		}
		fleet = append(fleet, sim.FleetEntry{Family: short.family, Count: short.count})
		spelled[short.family] = fmt.Sprintf("--%s %d", short.flag, short.count)
	}
	for _, e := range fleet {
		if e.Count > 0 && base+e.Count > span {
			return nil, fmt.Errorf("%s with --sim-index-base %d: a family has room for %d %s", spelled[e.Family], base, span, what)
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
