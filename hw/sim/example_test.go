package sim_test

import (
	"fmt"

	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/hw/sim"
)

// A hands-off simulated arm with no gravity compensation sags onto the
// bottom of its workspace; holding its weight up keeps it where it is.
func Example() {
	arm := sim.NewArm(sim.ArmOptions{Index: 0, PeriodS: 0.001})
	defer arm.Close()
	info := arm.Info()
	fmt.Printf("arm %s, max %.0f N, mass %.1f kg, host gravity compensation %v\n",
		info.ID, info.MaxForceN, info.EffectiveMassKg, info.HostGravityCompensation)

	var st hw.State
	hold := hw.Command{Mode: hw.ModeForce, ForceN: hw.Vec3{Z: info.EffectiveMassKg * sim.GravityMps2}}
	for i := 0; i < 1000; i++ { // one simulated second
		if err := arm.Exchange(&hold, &st); err != nil {
			fmt.Println(err)
			return
		}
	}
	fmt.Printf("held:   %.3f m below the workspace centre\n", info.WorkspaceCenterM.Z-st.PositionM.Z)

	limp := hw.Command{Mode: hw.ModeIdle}
	for i := 0; i < 2000; i++ {
		if err := arm.Exchange(&limp, &st); err != nil {
			fmt.Println(err)
			return
		}
	}
	fmt.Printf("sagged: %.3f m below the workspace centre, at rest %v\n",
		info.WorkspaceCenterM.Z-st.PositionM.Z, st.VelocityMps == hw.Vec3{})
	// Output:
	// arm CBBD, max 10 N, mass 0.2 kg, host gravity compensation true
	// held:   0.000 m below the workspace centre
	// sagged: 0.100 m below the workspace centre, at rest true
}

// Motion is a flag.Value, so a command line can pick the scripted hand.
func ExampleMotion_Set() {
	var m sim.Motion
	if err := m.Set("circle"); err != nil {
		fmt.Println(err)
	}
	fmt.Println(m)
	fmt.Println(m.Set("spiral"))
	// Output:
	// circle
	// hw/sim: unknown motion "spiral"; use none, circle or random
}

// A Fleet is the --sim flag: how many devices of each family to build.
// NewDevice builds each with its family's identity and limits.
func ExampleFleet() {
	fleet, err := sim.ParseFleet("verse_grip=1,minverse=1")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, e := range fleet.Sorted() {
		for i := 0; i < e.Count; i++ {
			info := sim.NewDevice(e.Family, i, sim.ArmOptions{}).Info()
			fmt.Printf("%s: %s %s, device type %d, max %g N\n", e.Family, info.Kind, info.ID, info.Model, info.MaxForceN)
		}
	}
	// Output:
	// minverse: arm 083D, device type 6, max 4 N
	// verse_grip: grip 13174, device type 7, max 0 N
}
