package loop

import (
	"testing"

	"github.com/hapticd/hapticd/actors/loop/looptest"
	"github.com/hapticd/hapticd/hw"
)

// remoteOutputDriver is a fake arm whose output another process's loop
// applies (a lab gateway's proxy): it records, per exchange, the session
// the loop said the output comes from.
type remoteOutputDriver struct {
	*looptest.Driver
	told uint64   // CommandInForce's since the last exchange; untold: none
	from []uint64 // per exchange: told
	out  []hw.Command
}

// untold is remoteOutputDriver.told when no CommandInForce came before an
// exchange.
const untold = ^uint64(0)

func (d *remoteOutputDriver) CommandInForce(session uint64) { d.told = session }

func (d *remoteOutputDriver) Exchange(cmd *hw.Command, st *hw.State) error {
	d.from, d.out, d.told = append(d.from, d.told), append(d.out, *cmd), untold
	return d.Driver.Exchange(cmd, st)
}

var _ RemoteOutput = (*remoteOutputDriver)(nil)

// A RemoteOutput driver is told, before each exchange, whose command in
// force the output applies: session A's while A commands; none while the
// loop ramps A's force or torque out after A's control ended, also once a
// session owns the arm again and its command waits for the ramp's end (B
// after A let go, or A itself after its lease lapsed), and none while no
// command is in force; the next owner's once its command is applied.
func TestRemoteOutputIsToldWhoseCommandIsInForce(t *testing.T) {
	const a, b = 7, 8
	for _, c := range []struct {
		name    string
		a, zero hw.Command
	}{
		{"force", force(0, 0, 2), force(0, 0, 0)},
		{"torque", hw.Command{Mode: hw.ModeTorque, TorquesNmm: hw.Angles3{A1: 400}}, hw.Command{Mode: hw.ModeTorque}},
	} {
		for _, end := range []struct {
			name string
			next uint64 // the session that owns the arm next
		}{
			{"B after A let go", b},
			{"A again after its lapse", a},
		} {
			t.Run(c.name+"/"+end.name, func(t *testing.T) {
				r := newRig(t, looptest.ArmInfo(), DeviceOptions{})
				drv := &remoteOutputDriver{Driver: r.drv, told: untold}
				r.dev = NewDevice(drv, DeviceOptions{Clock: r.clock, PeriodNs: ms})
				r.dev.SetGlobals(&Globals{ForceScale: 1})
				// ticks runs n ticks; want says whose command in force each
				// one's output applies.
				var ramp, next int
				ticks := func(n int, want func(out hw.Command) uint64) {
					t.Helper()
					from := len(drv.out)
					r.run(n, nil)
					for i := from; i < len(drv.out); i++ {
						if told, w := drv.from[i], want(drv.out[i]); told != w {
							t.Errorf("exchange %d: %v told as session %d's, want %d's (A %d, B %d; untold %d)", i, drv.out[i], told, w, a, b, untold)
						}
					}
				}
				none := func(hw.Command) uint64 { return 0 }
				ramping := func(out hw.Command) uint64 {
					if out.Target() == [3]float64{} {
						t.Errorf("%v while A's control ramps out", out)
					}
					ramp++
					return 0
				}
				ticks(3, none)
				lease := int64(200 * ms)
				if end.next == a {
					lease = 10 * ms
				}
				r.command(a, 1, lease, c.a, nil)
				ticks(10, func(hw.Command) uint64 { return a })
				if end.next == a {
					ticks(2, ramping) // the lease lapsed
				} else {
					r.dev.Register().Release(a)
				}
				r.command(end.next, 2, 200*ms, c.zero, nil)
				ticks(40, func(out hw.Command) uint64 {
					if out.Target() != [3]float64{} {
						return ramping(out)
					}
					next++
					return end.next
				})
				if ramp == 0 || next == 0 {
					t.Fatalf("%d ticks of A's ramp and %d of the next command, want some of each", ramp, next)
				}
			})
		}
	}
}

// inForceArm is a no-op arm that keeps what CommandInForce said.
type inForceArm struct {
	nopArm
	session uint64
}

func (a *inForceArm) CommandInForce(session uint64) { a.session = session }

// TestRemoteOutputTickDoesNotAllocate: telling the driver whose command is
// in force keeps a controlled arm's tick allocation-free.
func TestRemoteOutputTickDoesNotAllocate(t *testing.T) {
	arm := &inForceArm{nopArm: nopArm{info: looptest.ArmInfo()}}
	d := controlled(arm)
	clock := SystemClock()
	d.Step(clock.Now())
	if arm.session != 1 {
		t.Fatalf("driver told session %d's command is in force, want 1's", arm.session)
	}
	if n := testing.AllocsPerRun(300, func() { d.Step(clock.Now()) }); n != 0 {
		t.Errorf("a tick allocates %v times", n)
	}
}
