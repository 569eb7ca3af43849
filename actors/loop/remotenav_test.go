package loop

import (
	"testing"

	"github.com/hapticd/hapticd/actors/loop/looptest"
	"github.com/hapticd/hapticd/hw"
)

// remoteNavDriver is a fake arm whose navigation another process renders
// (a lab gateway's proxy): it records what the loop hands it.
type remoteNavDriver struct {
	*looptest.Driver
	calls   int
	session uint64
	nav     *Navigation
}

func (d *remoteNavDriver) ForwardNavigation(session uint64, n *Navigation) {
	d.calls++
	d.session, d.nav = session, n
}

var _ RemoteNavigation = (*remoteNavDriver)(nil)

// A RemoteNavigation driver gets each force command's navigation and none
// of its force: the loop's output is the session's own force, even with
// the cursor deep in the velocity zone; the loop never writes the track,
// whose reports are the rendering process's (Mirror), also when the
// lease lapses; another session's command hands the driver no navigation.
func TestRemoteNavigationIsForwardedNotRendered(t *testing.T) {
	r := newRig(t, looptest.ArmInfo(), DeviceOptions{})
	drv := &remoteNavDriver{Driver: r.drv}
	r.dev = NewDevice(drv, DeviceOptions{Clock: r.clock, PeriodNs: ms})
	r.dev.SetGlobals(&Globals{ForceScale: 1})
	nav := testNavigation(t)
	// 2 cm into the zone, moving outward: rendered here, 1 N inward.
	r.drv.SetState(hw.State{PositionM: hw.Vec3{X: 0.07}, VelocityMps: hw.Vec3{X: 0.01}})
	r.command(7, 1, 200*ms, force(0, 0, 2), &Params{Navigation: nav})
	out := r.run(50, nil)
	if out.ForceN != (hw.Vec3{Z: 2}) {
		t.Fatalf("output %v, want the session's 2 N alone", out.ForceN)
	}
	if drv.nav != nav || drv.session != 7 || drv.calls == 0 {
		t.Fatalf("driver got navigation %p of session %d (%d calls), want %p of 7", drv.nav, drv.session, drv.calls, nav)
	}
	var rep NavigationReport
	if nav.Track.Load(&rep) {
		t.Fatalf("the loop wrote a remote navigation's track: %+v", rep)
	}
	mirrored := NavigationReport{Rendering: true, OffsetM: hw.Vec3{X: 0.01}}
	nav.Track.Mirror(&mirrored)
	// The lease lapses: the loop pauses, and leaves the mirrored report.
	for end := r.clock.Now() + 200*ms + ReleaseBoundNs; r.clock.Now() <= end; {
		out = r.step(ms)
	}
	if out.ForceN != (hw.Vec3{}) {
		t.Fatalf("output %v after the lapse, want none", out.ForceN)
	}
	if !nav.Track.Load(&rep) || rep != mirrored {
		t.Fatalf("track %+v after the lapse, want the mirrored %+v", rep, mirrored)
	}
	r.command(8, 1, 200*ms, force(0, 0, 2), nil)
	r.run(5, nil)
	if drv.nav != nil || drv.session != 8 {
		t.Fatalf("driver got navigation %p of session %d, want none of 8", drv.nav, drv.session)
	}
}
