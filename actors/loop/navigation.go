package loop

import (
	"sync/atomic"

	"github.com/hapticd/hapticd/actors/loop/effect"
	"github.com/hapticd/hapticd/actors/loop/passivity"
	"github.com/hapticd/hapticd/hw"
)

// Navigation is a session's bubble navigation on one device, carried by the
// session's commands (Params.Navigation), so the loop renders the
// navigation of the session whose command it applies, under that
// command's lease, and no other. Bubble is immutable; Track is where the
// loop keeps and publishes the session's navigation state on this device.
type Navigation struct {
	Bubble *effect.Bubble
	Track  *NavigationTrack
}

// NavigationTrack is one session's navigation state on one device: the
// workspace offset the loop integrated, and the report readers load. The
// session's successive Navigation values (a changed gain, a new
// set_transform) share one track, so the offset survives them; a new
// track starts again from zero. Only the device's loop writes it.
type NavigationTrack struct {
	nav       effect.Navigator // the tick's
	lastF     hw.Vec3          // the force of the last tick, for the passivity observer
	rendering bool             // rendered on the last tick
	published atomic.Bool
	rep       NavigationReport // the tick's, filled before each publish
	cell      cell[NavigationReport]
}

// NewNavigationTrack returns a track with the workspace at rest at zero
// offset.
func NewNavigationTrack() *NavigationTrack { return new(NavigationTrack) }

// NavigationReport is a session's navigation on one device as of TimeNs.
type NavigationReport struct {
	TimeNs int64
	// Rendering is false while no lease of the session holds the
	// navigation: the workspace is at rest where it stopped.
	Rendering bool
	// CenterM is the bubble's centre (mount space, drift included);
	// WidthM the velocity zone's width and InflateM the extra inflation
	// hysteresis gives the boundary now (mount metres).
	CenterM          hw.Vec3
	WidthM, InflateM float64
	Zone             effect.Zone
	// OffsetM and VelocityMps are the workspace offset and its velocity,
	// in application space.
	OffsetM, VelocityMps hw.Vec3
	// DepthM is the cursor's distance outside the bubble (mount metres,
	// negative inside); ForceN the navigation's force (device frame,
	// before the loop's passivity stage, clamp and ramp).
	DepthM float64
	ForceN hw.Vec3
}

// Load fills dst with the latest report and says whether the loop has
// rendered this track yet. It never blocks.
func (t *NavigationTrack) Load(dst *NavigationReport) bool {
	if !t.published.Load() {
		*dst = NavigationReport{}
		return false
	}
	t.cell.Load(dst)
	return true
}

// render is the navigation's force for one tick at the cursor's pos and v
// (gain: the force scale). It slides the workspace only while the command
// is in force (ramp 1), not while its force ramps out. The tick that
// steps the command calls it (forceStages.force, on a Device or a shard's
// fast path).
func (n *Navigation) render(pos, v hw.Vec3, nowNs, dtNs int64, gain, ramp float64) hw.Vec3 {
	t := n.Track
	if !pos.Finite() || !v.Finite() {
		n.stop(nowNs)
		return hw.Vec3{}
	}
	in := effect.Input{NowNs: nowNs, DtNs: dtNs, PositionM: pos, VelocityMps: v}
	f := t.nav.Step(n.Bubble, &in, ramp >= 1).Scale(gain)
	t.rendering = true
	t.publish(n.Bubble, nowNs)
	return f
}

// stop publishes n's track at rest (control ended), if it was rendered:
// a track never rendered stays unpublished (its state reads null).
func (n *Navigation) stop(nowNs int64) {
	t := n.Track
	if !t.rendering {
		return
	}
	t.nav.Stop()
	t.lastF = hw.Vec3{}
	t.rendering = false
	t.publish(n.Bubble, nowNs)
}

// pauseNavigation stops the navigation of the command held last, if it
// had one: nobody's lease holds it now.
func (d *Device) pauseNavigation(nowNs int64) {
	if d.remoteNav != nil {
		return // the track mirrors the rendering loop's report (Mirror)
	}
	if p := d.held.Params; p != nil && p.Navigation != nil {
		p.Navigation.stop(nowNs)
	}
}

// A RemoteNavigation is a driver whose device's navigation another
// process's loop renders (a lab gateway's proxy of an arm on a node, like
// RemoteEffects): this loop renders none of it and hands the driver the
// navigation of each force command it applies, so the driver forwards the
// bubble when it changes, never a per-tick force, and mirrors the
// rendering loop's reports into the command's track (Mirror). This loop
// never writes such a track.
type RemoteNavigation interface {
	// ForwardNavigation is called from the loop's goroutine, on every
	// tick that applies a force command of session (its navigation n,
	// nil: none); it must not block and should be cheap while n is the
	// one it had last.
	ForwardNavigation(session uint64, n *Navigation)
}

// Mirror publishes r, a report of this track's navigation as another
// process's loop rendered it (RemoteNavigation), for Load. Only one
// goroutine may call it, and only on a track no loop of this process
// renders.
func (t *NavigationTrack) Mirror(r *NavigationReport) {
	t.rep = *r
	t.cell.Publish(&t.rep)
	if !t.published.Load() {
		t.published.Store(true)
	}
}

// observe is the energy the navigation absorbed from the arm over the tick
// that ended (package passivity's convention: −F·v·dt with last tick's
// force and this tick's velocity), and holds f for the next. A velocity
// over passivity.MaxSpeedMps is a bad reading: it counts nothing.
func (t *NavigationTrack) observe(f, v hw.Vec3, dtNs int64) float64 {
	var e float64
	if !(v.Dot(v) > passivity.MaxSpeedMps*passivity.MaxSpeedMps) {
		e = -t.lastF.Dot(v) * float64(dtNs) * 1e-9
	}
	t.lastF = f
	return e
}

func (t *NavigationTrack) publish(b *effect.Bubble, nowNs int64) {
	r := &t.rep
	nav := &t.nav
	*r = NavigationReport{TimeNs: nowNs, Rendering: t.rendering, CenterM: nav.CenterM(b),
		WidthM: b.WidthM, Zone: nav.Zone, OffsetM: nav.OffsetM, VelocityMps: nav.VelocityMps,
		DepthM: nav.DepthM, ForceN: nav.ForceN}
	if nav.Zone != effect.ZoneDead {
		r.InflateM = b.HysteresisM
	}
	t.cell.Publish(r)
	if !t.published.Load() {
		t.published.Store(true)
	}
}
