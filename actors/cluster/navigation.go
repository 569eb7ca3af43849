package cluster

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/hapticd/hapticd/actors/cluster/wire"
	"github.com/hapticd/hapticd/actors/loop"
	"github.com/hapticd/hapticd/actors/loop/effect"
	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/protocol"
	"github.com/hapticd/hapticd/protocol/event"
)

// Bubble navigation through a gateway: the gateway's loop renders none of
// it (the proxy is a loop.RemoteNavigation); the proxy sends the bubble the
// session compiled (wire.Navigation) when it changes and again while the
// node lags, the node attaches it to that gateway's commands, and the
// node's loop renders it under their owner and lease as it would a local
// session's. The node's track report rides back on its state pushes, and
// the proxy mirrors it into the session's track on the gateway, where its
// frames, state.transform and GET .../config/navigation read it.

// forwardedNav is a gateway's navigation on one of the node's devices.
type forwardedNav struct {
	gen     uint64
	trackID uint64
	// session is the gateway's session whose navigation it is: it rides
	// only on that session's commands (wire.Command.session; 0: any).
	session uint64
	// params carry the navigation on the gateway's commands (the loop's
	// defaults otherwise, as a command without navigation gets); nil
	// while the node could not take the bubble, or after the gateway
	// withdrew it.
	params *loop.Params
	// kept is the track of a withdrawn navigation (gen 0, params nil):
	// the gateway withdraws a session's bubble whenever another session's
	// command goes out, and the workspace offset belongs to the session,
	// so its bubble sent again under the same track continues from where
	// the workspace stopped, as on a single host.
	kept *loop.NavigationTrack
}

// fill puts the node's report of the navigation into a pushed state.
func (f *forwardedNav) fill(st *wire.State) {
	st.NavigationGen = f.gen
	if f.params == nil {
		return
	}
	var r loop.NavigationReport
	if !f.params.Navigation.Track.Load(&r) {
		return
	}
	st.Navigation = &wire.NavigationState{Track: f.trackID, TimeNs: r.TimeNs, Rendering: r.Rendering,
		CenterM: vecToWire(r.CenterM), WidthM: r.WidthM, InflateM: r.InflateM, Zone: uint32(r.Zone),
		OffsetM: vecToWire(r.OffsetM), VelocityMps: vecToWire(r.VelocityMps), DepthM: r.DepthM,
		ForceN: vecToWire(r.ForceN)}
}

// track is the navigation's track, rendered or kept; nil: none.
func (f *forwardedNav) track() *loop.NavigationTrack {
	switch {
	case f == nil:
		return nil
	case f.params != nil:
		return f.params.Navigation.Track
	}
	return f.kept
}

func vecToWire(v hw.Vec3) []float64 { return []float64{v.X, v.Y, v.Z} }

func vecFromWire(f []float64) hw.Vec3 {
	if len(f) != 3 {
		return hw.Vec3{}
	}
	return hw.Vec3{X: f[0], Y: f[1], Z: f[2]}
}

// navigation takes a gateway session's navigation on a device: the
// gateway's commands that follow carry it. A declaration older than the
// lease is dropped (the gateway sends it again while the pushed
// navigation_gen lags), and so is one that arrives after a newer one
// (lateLocked); an empty one withdraws the gateway's navigation, keeping
// its track. The track stays while the gateway's track does, so the
// workspace offset survives a new bubble, and another session's control
// in between (which withdraws the bubble), as on the gateway itself. One the node cannot take
// is answered with a NavigationReply, so the gateway's client hears of it.
func (n *Node) navigation(m *wire.Navigation) {
	n.mu.Lock()
	d, s, ageNs := n.forwardedLocked(m.Uuid, m.GatewayAddress, m.ProcessId, m.SentUnixNs, time.Now())
	var owner uint64
	var to *actor.PID
	if s != nil {
		owner, to = s.owner, s.pid
	}
	fresh := s != nil && ageNs < n.leaseNs()
	late := fresh && lateLocked(&n.navSeen, fxKey{owner, m.Uuid}, m.Gen, m.SentUnixNs)
	n.mu.Unlock()
	if !fresh || late {
		return
	}
	refuse := func(code protocol.Code, msg string) {
		n.sys.Root.Send(to, &wire.NavigationReply{Uuid: m.Uuid, Gen: m.Gen, Track: m.Track, Session: m.Session, Code: string(code), Error: msg})
	}
	if d == nil {
		if len(m.Bubble) > 0 {
			refuse(protocol.CodeUnavailable, fmt.Sprintf("device %s is no longer on node %s", m.Uuid, n.cfg.NodeID))
		}
		return
	}
	key := fxKey{owner, m.Uuid}
	if len(m.Bubble) == 0 {
		n.mu.Lock()
		if t := n.navs[key].track(); t != nil {
			n.navs[key] = &forwardedNav{trackID: n.navs[key].trackID, kept: t}
		} else {
			delete(n.navs, key)
		}
		n.mu.Unlock()
		return
	}
	var params *loop.Params
	var b effect.Bubble
	err := json.Unmarshal(m.Bubble, &b)
	var bubble *effect.Bubble
	if err == nil {
		bubble, err = effect.NewBubble(b)
	}
	if err != nil {
		// The gateway compiled it with the same code, so this is a lab
		// running two builds. Navigate nowhere rather than render it, take
		// the generation (no resend every 100 ms) and say why.
		n.log.Error().Err(err).Str("uuid", m.Uuid).Uint64("session", m.Session).Msg("cluster: a gateway's navigation cannot be rendered; it stays off")
		refuse(protocol.CodeInvalidValue, fmt.Sprintf("node %s cannot render the bubble: %v", n.cfg.NodeID, err))
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if bubble != nil {
		var track *loop.NavigationTrack
		if old := n.navs[key]; old != nil && old.trackID == m.Track && old.track() != nil {
			track = old.track()
		} else {
			track = loop.NewNavigationTrack()
		}
		params = loop.DefaultParams()
		params.Navigation = &loop.Navigation{Bubble: bubble, Track: track}
	}
	if n.navs == nil {
		n.navs = map[fxKey]*forwardedNav{}
	}
	f := &forwardedNav{gen: m.Gen, trackID: m.Track, session: m.Session, params: params}
	if old := n.navs[key]; params == nil && old != nil && old.trackID == m.Track {
		f.kept = old.track() // a bubble refused keeps the offset for the next
	}
	n.navs[key] = f
}

// ForwardNavigation sends the navigation of the session whose command the
// gateway's loop applies to the node (loop.RemoteNavigation), when it is
// not the one sent last; nil withdraws it. It runs on the loop's
// goroutine, so it compares before it locks.
func (p *proxy) ForwardNavigation(session uint64, nav *loop.Navigation) {
	if nav == p.navSeen && session == p.navSeenSession {
		return
	}
	p.navSeen, p.navSeenSession = nav, session
	p.fxMu.Lock()
	defer p.fxMu.Unlock()
	if nav != nil && nav.Track != p.navTrack {
		// Unique across gateway processes, so a gateway restarted at its
		// old address never continues a dead one's offset on the node.
		p.navTrack = nav.Track
		p.navTrackID = max(p.navTrackID+1, uint64(time.Now().UnixNano()))
	}
	p.nav, p.navSession = nav, session
	p.navGen++
	p.sendNavigationLocked(time.Now())
}

// resendNavigation sends the navigation again when the node, at its push,
// holds another generation than the gateway's newest (0: none), unless
// the node refused that one, it was sent within resendAfter or the session no longer holds the arm here
// (its next command forwards it anew). A node that holds one while this
// gateway has none (a gateway of an older build restarted at the same
// address, which the node still knows as the same owner; a newer one says
// it is a new process, wire.Subscribe.process_id) is told to drop it: it
// would ride on the new process's commands.
func (p *proxy) resendNavigation(nodeGen uint64) {
	want := p.navGen
	if p.nav == nil {
		want = 0
	}
	now := time.Now()
	if nodeGen == want || want != 0 && p.navRefused == want || now.Sub(p.navSentAt) < resendAfter {
		return
	}
	if dev := p.dev.Load(); want != 0 && (dev == nil || dev.Register().Owner() != p.navSession) {
		return
	}
	p.sendNavigationLocked(now)
}

// mirrorNavigation publishes the node's report of the session's navigation
// into its track on the gateway, if the report is of that track. The
// gateway actor is the track's one writer (its loop never writes a
// RemoteNavigation's track).
func (p *proxy) mirrorNavigation(m *wire.NavigationState) {
	if m == nil || p.nav == nil || m.Track != p.navTrackID {
		return
	}
	r := loop.NavigationReport{TimeNs: p.g.clock.Now(), Rendering: m.Rendering, CenterM: vecFromWire(m.CenterM),
		WidthM: m.WidthM, InflateM: m.InflateM, Zone: effect.Zone(min(m.Zone, 255)), OffsetM: vecFromWire(m.OffsetM),
		VelocityMps: vecFromWire(m.VelocityMps), DepthM: m.DepthM, ForceN: vecFromWire(m.ForceN)}
	if !r.CenterM.Finite() || !r.OffsetM.Finite() || !r.VelocityMps.Finite() || !r.ForceN.Finite() {
		return
	}
	p.navTrack.Mirror(&r)
}

// navigationPushed handles the navigation part of a pushed state.
func (p *proxy) navigationPushed(m *wire.State) {
	p.fxMu.Lock()
	defer p.fxMu.Unlock()
	p.mirrorNavigation(m.Navigation)
	p.resendNavigation(m.NavigationGen)
}

// navigationRefused handles the node's refusal of a navigation generation:
// unless the session configured anew since, the gateway stops sending it
// and tells the client with navigation-refused, once: the node answers each
// copy it was sent, and a resend can leave before the first answer arrives
// on a link slower than resendAfter. The session's config entry stays, as
// on a single host whose loop cannot render a stored bubble; a new
// configure or set_transform sends a new bubble.
func (p *proxy) navigationRefused(m *wire.NavigationReply) {
	dev := p.takeRefusal(func() bool {
		if m.Gen != p.navGen || m.Track != p.navTrackID || p.nav == nil || p.navRefused == m.Gen {
			return false
		}
		p.navRefused = m.Gen
		return true
	})
	if dev == nil {
		return
	}
	p.g.log.Warn().Str("device_id", dev.ID).Uint64("session", m.Session).Str("code", m.Code).Str("why", m.Error).Msg("node refused a session's navigation")
	p.g.svc.Activity().Publish(event.NavigationRefused(dev.Name, dev.ID, m.Session, m.Code, m.Error))
}

// sendNavigationLocked sends the node the navigation of generation
// p.navGen. As a Set of effects (declareLocked), the bubble is encoded with
// fxMu released, so a tick never waits for the gateway actor's resend, and
// sent only if no newer generation came meanwhile. fxMu is held on entry
// and on return.
func (p *proxy) sendNavigationLocked(now time.Time) {
	p.navSentAt = now
	if p.lost.Load() || p.g.closing.Load() {
		return
	}
	m := &wire.Navigation{Uuid: p.info.UUID, GatewayAddress: p.g.addr, ProcessId: p.g.process, SentUnixNs: now.UnixNano(),
		Gen: p.navGen, Session: p.navSession}
	if nav := p.nav; nav != nil {
		m.Track = p.navTrackID
		p.fxMu.Unlock()
		b, err := json.Marshal(nav.Bubble)
		p.fxMu.Lock()
		if err != nil {
			// NewBubble found its numbers finite: this is a bug.
			p.g.log.Error().Err(err).Str("uuid", p.info.UUID).Msg("could not encode navigation for the node")
			return
		}
		if m.Gen != p.navGen || p.lost.Load() || p.g.closing.Load() {
			return
		}
		m.Bubble = b
	}
	p.g.sys.Root.Send(p.node, m)
}
