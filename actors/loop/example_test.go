package loop_test

import (
	"fmt"
	"time"

	"github.com/hapticd/hapticd/actors/loop"
	"github.com/hapticd/hapticd/actors/loop/looptest"
	"github.com/hapticd/hapticd/hw"
)

// A session controls a device through its register; the loop enforces the
// lease: when it lapses, the force ramps to zero from the lease's deadline
// (here 3 ms, seen by the tick at 4 ms) and the device goes idle.
func Example() {
	clock := looptest.NewClock(0)
	arm := looptest.NewArm()
	dev := loop.NewDevice(arm, loop.DeviceOptions{
		PeriodNs: int64(time.Millisecond),
		RampNs:   int64(4 * time.Millisecond),
		Clock:    clock,
		OnEvent:  func(e loop.Event) { fmt.Println("event:", e.Kind, "session", e.Session) },
	})
	dev.SetGlobals(&loop.Globals{ForceScale: 1}) // no gravity feed-forward here

	const session = 42
	reg := dev.Register()
	reg.Claim(session)
	cmd := hw.Command{Mode: hw.ModeForce, ForceN: hw.Vec3{X: 2}}
	reg.Write(session, 1, clock.Now()+int64(3*time.Millisecond), &cmd, loop.DefaultParams())

	var snap loop.Snapshot
	for tick := 0; tick < 9; tick++ {
		dev.Step(clock.Advance(int64(time.Millisecond)))
		dev.Load(&snap)
		fmt.Printf("t=%dms mode=%v force=%.1fN owner=%d\n", snap.TimeNs/1e6, snap.Mode, arm.Last().ForceN.X, snap.Owner)
	}
	// Output:
	// t=1ms mode=force force=2.0N owner=42
	// t=2ms mode=force force=2.0N owner=42
	// t=3ms mode=force force=2.0N owner=42
	// event: lease-expired session 42
	// t=4ms mode=force force=1.5N owner=0
	// t=5ms mode=force force=1.0N owner=0
	// t=6ms mode=force force=0.5N owner=0
	// t=7ms mode=idle force=0.0N owner=0
	// t=8ms mode=idle force=0.0N owner=0
	// t=9ms mode=idle force=0.0N owner=0
}
