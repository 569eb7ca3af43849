package cluster

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/hapticd/hapticd/actors/cluster/wire"
	"github.com/hapticd/hapticd/actors/loop"
	"github.com/hapticd/hapticd/actors/loop/effect"
	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/hw/hwtest"
	"github.com/hapticd/hapticd/protocol"
	"github.com/hapticd/hapticd/protocol/event"
)

// bubbleAround is a 5 cm sphere with a 3 cm velocity zone (4 1/s, 50 N/m)
// and an 800 N/m wall, placed so that the device point at puts the cursor
// 2 cm into the zone along +x; as a gateway's proxy sends it.
func bubbleAround(t *testing.T, at hw.Vec3) []byte {
	t.Helper()
	id := [3][3]float64{{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}
	b, err := effect.NewBubble(effect.Bubble{Primitive: effect.PrimSphere, Shape: effect.Params{RadiusM: 0.05},
		ToLocal: id, ToApp: id, LocalOffset: hw.Vec3{X: 0.07}.Sub(at), DevMPerLocalM: 1, WidthM: 0.03,
		SpeedGainPerS: 4, MaxSpeedMps: 0.5, DeadDampingNsPerM: 1, ZoneStiffnessNPerM: 50,
		WallStiffnessNPerM: 800, WallDampingNsPerM: 4})
	if err != nil {
		t.Fatal(err)
	}
	j, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// navDeclared is a gateway's navigation as it sends it now.
func navDeclared(uuid string, gen, track uint64, bubble []byte) *wire.Navigation {
	return &wire.Navigation{Uuid: uuid, GatewayAddress: testGW, SentUnixNs: time.Now().UnixNano(), Gen: gen,
		Session: 3, Track: track, Bubble: bubble}
}

// untilPushed waits until the newest state of uuid the node pushed to the
// test's gateway passes check.
func untilPushed(t *testing.T, out *outbox, uuid, what string, check func(st *wire.State) error) *wire.State {
	t.Helper()
	var st *wire.State
	hwtest.EventuallyNil(t, 5*time.Second, what, func() error {
		batches := sentOf[*wire.StateBatch](out)
		if len(batches) == 0 {
			return fmt.Errorf("no push yet")
		}
		for _, s := range batches[len(batches)-1].States {
			if s.Uuid == uuid {
				st = s
			}
		}
		if st == nil {
			return fmt.Errorf("no state of %s pushed", uuid)
		}
		return check(st)
	})
	return st
}

// A gateway's navigation rides on its commands on the node: the node's
// loop renders the bubble (the zone's spring against the session's push,
// the workspace sliding) under the gateway's owner, and pushes its report
// and generation back; the force ends with the lease of the last command;
// a new bubble on the same track keeps the workspace offset, a new track
// starts from none; a stale or unreadable declaration renders nothing; an
// empty one withdraws it.
func TestNodeRendersForwardedNavigationUnderTheLease(t *testing.T) {
	n, d := testNode(t)
	out := watchOutbox(t, n.sys)
	n.wg.Add(1)
	go n.push()
	var snap loop.Snapshot
	d.Load(&snap)
	bubble := bubbleAround(t, snap.State.PositionM)
	n.navigation(navDeclared(d.Info.UUID, 1, 10, bubble))
	if o := d.Register().Owner(); o != 0 {
		t.Fatalf("a navigation declaration took the arm (owner %d): the commands do", o)
	}

	// The session pushes 1 N outward: the zone's spring holds it about
	// 2 cm deep, where the workspace slides outward.
	var seq uint64
	command := func(fx float64) {
		seq++
		n.command(fresh(d.Info.UUID, seq, hw.ModeForce, fx, 0, 0))
	}
	var st *wire.State
	hwtest.EventuallyNil(t, 10*time.Second, "the node's loop navigating in the velocity zone", func() error {
		command(1)
		st = untilPushed(t, out, d.Info.UUID, "a push", func(*wire.State) error { return nil })
		nav := st.Navigation
		switch {
		case st.NavigationGen != 1:
			return fmt.Errorf("navigation_gen %d, want 1", st.NavigationGen)
		case nav == nil:
			return fmt.Errorf("no navigation report")
		case nav.Track != 10 || !nav.Rendering || effect.Zone(nav.Zone) != effect.ZoneVelocity:
			return fmt.Errorf("report %+v, want track 10 rendering in the velocity zone", nav)
		case !(nav.ForceN[0] < -0.3) || !(nav.VelocityMps[0] > 0.01) || !(nav.OffsetM[0] > 0.001):
			return fmt.Errorf("report %+v, want the spring inward and the workspace sliding outward", nav)
		}
		return nil
	})
	if o := d.Register().Owner(); o != gatewaySession {
		t.Fatalf("owner %d, want the gateway's", o)
	}

	// No more commands: the lease (100 ms) ends the navigation's force
	// too, and the workspace stops where it was.
	took := hwtest.Eventually(t, 5*time.Second, "the navigation's force ended by the lease", func() bool {
		d.Load(&snap)
		return snap.Mode == hw.ModeIdle && math.Abs(snap.State.ForceN.X) < 1e-9
	})
	if took > time.Second {
		t.Errorf("navigation force held %v after the last command; the lease is 100 ms", took)
	}
	st = untilPushed(t, out, d.Info.UUID, "the node reports the navigation at rest", func(st *wire.State) error {
		if nav := st.Navigation; nav == nil || nav.Rendering || nav.VelocityMps[0] != 0 || !(nav.OffsetM[0] > 0.001) {
			return fmt.Errorf("report %+v, want the workspace at rest where it stopped", nav)
		}
		return nil
	})
	offset := st.Navigation.OffsetM[0]

	// A new bubble on the same track (a changed gain on the gateway) keeps
	// the offset; a new track starts from none.
	n.navigation(navDeclared(d.Info.UUID, 2, 10, bubble))
	untilPushed(t, out, d.Info.UUID, "a new bubble on the same track keeps the offset", func(st *wire.State) error {
		if st.NavigationGen != 2 || st.Navigation == nil || st.Navigation.OffsetM[0] != offset {
			return fmt.Errorf("gen %d, report %+v, want generation 2 at offset %g", st.NavigationGen, st.Navigation, offset)
		}
		return nil
	})
	n.navigation(navDeclared(d.Info.UUID, 3, 11, bubble))
	untilPushed(t, out, d.Info.UUID, "a new track starts from none", func(st *wire.State) error {
		if st.NavigationGen != 3 || st.Navigation != nil {
			return fmt.Errorf("gen %d, report %+v, want generation 3 and no offset yet", st.NavigationGen, st.Navigation)
		}
		return nil
	})

	// Stale (older than the lease): dropped, the gateway sends it again.
	stale := navDeclared(d.Info.UUID, 4, 12, bubble)
	stale.SentUnixNs = time.Now().Add(-time.Second).UnixNano()
	n.navigation(stale)
	// Unreadable: the generation is taken (no resend every 100 ms), the
	// gateway's commands carry no navigation.
	n.navigation(navDeclared(d.Info.UUID, 5, 13, []byte(`{"Primitive":"sphere","WidthM":-1}`)))
	untilPushed(t, out, d.Info.UUID, "an unreadable bubble taken as none", func(st *wire.State) error {
		if st.NavigationGen != 5 || st.Navigation != nil {
			return fmt.Errorf("gen %d, report %+v, want generation 5 and none", st.NavigationGen, st.Navigation)
		}
		return nil
	})
	command(1)
	hwtest.EventuallyNil(t, 5*time.Second, "the session's own force alone", func() error {
		command(1)
		d.Load(&snap)
		if snap.Mode != hw.ModeForce || math.Abs(snap.State.ForceN.X-1) > 1e-9 {
			return fmt.Errorf("mode %v, force %v", snap.Mode, snap.State.ForceN)
		}
		return nil
	})

	// Withdrawn: the node reports none and its commands carry none.
	n.navigation(navDeclared(d.Info.UUID, 6, 10, bubble))
	n.navigation(navDeclared(d.Info.UUID, 7, 0, nil))
	untilPushed(t, out, d.Info.UUID, "the withdrawal pushed", func(st *wire.State) error {
		if st.NavigationGen != 0 || st.Navigation != nil {
			return fmt.Errorf("gen %d, report %+v, want none", st.NavigationGen, st.Navigation)
		}
		return nil
	})
	// Only the track stays, rendering nothing, for the same track's
	// return (the offset is the session's:
	// TestWorkspaceOffsetSurvivesAnotherSessionsControl).
	n.mu.Lock()
	for k, f := range n.navs {
		if f.params != nil || f.gen != 0 || f.kept == nil {
			t.Errorf("%v kept after the withdrawal: gen %d, params %v, track %v; want the track alone", k, f.gen, f.params, f.kept)
		}
	}
	n.mu.Unlock()
}

// What the node keeps of a gateway's declarations goes with them: an
// effects generation with the effects (idle command, empty declaration,
// another owner taking the arm), and everything of a gateway (its sessions'
// bindings too) with the gateway when it falls silent, so a lab whose gateways come and go does not grow the
// node's maps.
func TestNodeForgetsDeclarationsThatWent(t *testing.T) {
	n, d := testNode(t)
	var snap loop.Snapshot
	d.Load(&snap)
	pull := springBeside(d)
	kept := func() (fx, nav int) {
		n.mu.Lock()
		defer n.mu.Unlock()
		return len(n.fxGens), len(n.navs)
	}
	cases := []struct {
		name string
		end  func(t *testing.T)
	}{
		{"an idle command", func(t *testing.T) {
			n.command(fresh(d.Info.UUID, 2, hw.ModeIdle))
		}},
		{"an empty declaration", func(t *testing.T) {
			n.effects(declared(d.Info.UUID, 9, nil))
		}},
		{"another owner taking the arm", func(t *testing.T) {
			n.wg.Add(1)
			go n.push()
			reg := d.Register()
			hwtest.Eventually(t, 5*time.Second, "the gateway's lease lapsed", func() bool { return reg.Owner() == 0 })
			if reg.Claim(7) != 7 {
				t.Fatal("a local session could not take the arm")
			}
			defer reg.Release(7)
			// Within half the time the push loop takes to forget the
			// gateway, which drops its effects too.
			hwtest.Eventually(t, GatewayTimeout/2, "the lapsed gateway's effects dropped", func() bool {
				fx, _ := kept()
				return d.Effects() == nil && fx == 0
			})
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n.effects(declared(d.Info.UUID, 1, specsJSON(t, pull)))
			n.command(fresh(d.Info.UUID, 1, hw.ModeForce, 0, 0, 0))
			if fx, _ := kept(); fx != 1 || d.Effects() == nil {
				t.Fatalf("%d generations kept, effects %v: want the declaration in force", fx, d.Effects())
			}
			c.end(t)
			if fx, _ := kept(); fx != 0 || d.Effects() != nil {
				t.Fatalf("%d generations kept, effects %v after %s", fx, d.Effects(), c.name)
			}
		})
	}

	// The gateway falls silent: its navigation and generations go.
	n.subscribe(&wire.Subscribe{GatewayAddress: testGW, SentUnixNs: time.Now().UnixNano()})
	n.effects(declared(d.Info.UUID, 2, specsJSON(t, pull)))
	n.navigation(navDeclared(d.Info.UUID, 1, 1, bubbleAround(t, snap.State.PositionM)))
	if fx, nav := kept(); fx != 1 || nav != 1 {
		t.Fatalf("kept %d generations, %d navigations; want 1 and 1", fx, nav)
	}
	hwtest.Eventually(t, 3*GatewayTimeout, "the silent gateway forgotten", func() bool {
		n.mu.Lock()
		defer n.mu.Unlock()
		return len(n.subs) == 0
	})
	if fx, nav := kept(); fx != 0 || nav != 0 {
		t.Errorf("kept %d generations, %d navigations of a forgotten gateway", fx, nav)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.sessions) != 0 {
		t.Errorf("kept %d session bindings of a forgotten gateway", len(n.sessions))
	}
}

// A session on the gateway navigates a node's arm: the gateway renders
// none of the bubble (its commands carry the session's own force, even
// with the cursor far out in the wall), forwards the bubble once, with the
// session and a track, shows the node's workspace offset in the session's
// positions, state.transform and state.navigation, sends the bubble again
// while the node lags, and withdraws it when navigation is turned off.
func TestGatewayForwardsNavigationNotForces(t *testing.T) {
	g := testGateway(t, time.Hour)
	out := watchOutbox(t, g.sys)
	// The cursor half a metre out: a bubble rendered here would push hard.
	pushState := addRemoteArm(t, g)
	push := func(st *wire.State) {
		st.PositionM = []float64{0.5, 0, 0}
		pushState(st)
	}
	// The node holds a navigation this gateway never sent (a process
	// restarted at the same address): it is told to drop it.
	push(&wire.State{NavigationGen: 7})
	if nav := sentOf[*wire.Navigation](out); len(nav) != 1 || len(nav[0].Bubble) != 0 {
		t.Fatalf("declarations %v after the node reported one the gateway never sent, want a withdrawal", nav)
	}
	push(&wire.State{})

	c := openGatewayClient(t, g, "")
	sess, deliver := c.sess, c.send
	arm := func(body string) string { return `{"arm3":[{"device_id":"049D",` + body + `}]}` }
	force := arm(`"commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":0.5}}}`)
	if f := deliver(arm(`"configure":{"navigation":{"mode":"bubble","bubble":{"center":{"position":{"x":0,"y":0,"z":0}}}}}`)); f["errors"] != nil {
		t.Fatalf("configure.navigation: %v", f["errors"])
	}
	var before any
	hwtest.EventuallyNil(t, 5*time.Second, "the node's state in the session's frame", func() error {
		before = hwtest.JSONPath(deliver(force), "inverse3", 0, "state")
		if c := hwtest.JSONPath(before, "cursor_position"); c == nil || hwtest.JSONPath(c, "x") == 0.0 && hwtest.JSONPath(c, "y") == 0.0 && hwtest.JSONPath(c, "z") == 0.0 {
			return fmt.Errorf("cursor_position %v", c)
		}
		return nil
	})
	var sent *wire.Navigation
	hwtest.Eventually(t, 5*time.Second, "the bubble forwarded to the node", func() bool {
		if nav := sentOf[*wire.Navigation](out); len(nav) > 1 {
			sent = nav[len(nav)-1]
		}
		return sent != nil
	})
	var b effect.Bubble
	if err := json.Unmarshal(sent.Bubble, &b); err != nil || sent.Session != sess.ID || sent.Uuid != "uuid-a" || sent.Track == 0 {
		t.Fatalf("forwarded %+v (%v), want the session's bubble on a track", sent, err)
	}
	if _, err := effect.NewBubble(b); err != nil {
		t.Fatalf("the node could not take the forwarded bubble: %v", err)
	}
	hwtest.Eventually(t, 5*time.Second, "the session's force sent to the node", func() bool {
		for _, c := range out.commands() {
			if c.Mode == uint32(hw.ModeForce) && len(c.Target) == 3 && c.Target[2] == 0.5 {
				return true
			}
		}
		return false
	})
	for _, c := range out.commands() {
		if c.Mode == uint32(hw.ModeForce) && (c.Target[0] != 0 || c.Target[1] != 0 || c.Target[2] > 0.5) {
			t.Fatalf("the gateway sent a navigation force %v: navigation belongs to the node's loop", c.Target)
		}
	}
	if n := len(sentOf[*wire.Navigation](out)); n != 2 {
		t.Errorf("%d navigation declarations for one bubble, want 1 (never per tick)", n-1)
	}

	// The node's report reaches the session: positions and the transform
	// move by the workspace offset, state.navigation shows it.
	push(&wire.State{NavigationGen: sent.Gen, Navigation: &wire.NavigationState{Track: sent.Track, Rendering: true,
		Zone: uint32(effect.ZoneWall), CenterM: []float64{0, 0, 0}, OffsetM: []float64{0.01, 0.02, 0.03},
		VelocityMps: []float64{0.1, 0, 0}, ForceN: []float64{-3, 0, 0}}})
	off := []float64{0.01, 0.02, 0.03}
	hwtest.EventuallyNil(t, 5*time.Second, "the node's workspace offset in the session's frame", func() error {
		st := hwtest.JSONPath(deliver(force), "inverse3", 0, "state")
		if o := hwtest.JSONPath(st, "navigation", "workspace_offset"); o == nil {
			return fmt.Errorf("state.navigation %v", hwtest.JSONPath(st, "navigation"))
		}
		for i, axis := range []string{"x", "y", "z"} {
			for _, p := range [][]any{{"cursor_position", axis}, {"transform", "position", axis}} {
				was, _ := hwtest.JSONPath(before, p...).(float64)
				now, _ := hwtest.JSONPath(st, p...).(float64)
				if math.Abs(now-was-off[i]) > 1e-9 {
					return fmt.Errorf("%v moved %g, want the offset %g", p, now-was, off[i])
				}
			}
			if o, _ := hwtest.JSONPath(st, "navigation", "workspace_offset", axis).(float64); o != off[i] {
				return fmt.Errorf("workspace_offset.%s %g, want %g", axis, o, off[i])
			}
		}
		if z := hwtest.JSONPath(st, "navigation", "zone"); z != "wall" {
			return fmt.Errorf("zone %v, want the node's wall", z)
		}
		return nil
	})
	// A report of another track (an older navigation) is not shown.
	push(&wire.State{NavigationGen: sent.Gen, Navigation: &wire.NavigationState{Track: sent.Track - 1, OffsetM: []float64{9, 9, 9}}})
	if o := hwtest.JSONPath(deliver(force), "inverse3", 0, "state", "navigation", "workspace_offset", "x"); o != 0.01 {
		t.Errorf("workspace_offset.x %v after another track's report, want 0.01", o)
	}

	// The node lags (it lost the declaration): sent again, same generation.
	fw := g.proxies["uuid-a"]
	fw.fxMu.Lock()
	fw.navSentAt = time.Time{} // as if resendAfter had passed
	fw.fxMu.Unlock()
	push(&wire.State{})
	if nav := sentOf[*wire.Navigation](out); len(nav) != 3 || nav[2].Gen != sent.Gen || len(nav[2].Bubble) == 0 || nav[2].Track != sent.Track {
		t.Fatalf("declarations %d (last %+v), want the same one sent again", len(nav), nav[len(nav)-1])
	}

	// Turned off: the withdrawal goes out, and a node holding none is
	// what the gateway wants.
	if f := deliver(arm(`"configure":{"navigation":{"mode":"off"}}`)); f["errors"] != nil {
		t.Fatalf("navigation off: %v", f["errors"])
	}
	hwtest.Eventually(t, 5*time.Second, "the withdrawal sent", func() bool {
		deliver(force)
		nav := sentOf[*wire.Navigation](out)
		return len(nav[len(nav)-1].Bubble) == 0 && nav[len(nav)-1].Gen > sent.Gen
	})
	n := len(sentOf[*wire.Navigation](out))
	fw.fxMu.Lock()
	fw.navSentAt = time.Time{}
	fw.fxMu.Unlock()
	push(&wire.State{})
	if m := len(sentOf[*wire.Navigation](out)); m != n {
		t.Errorf("%d declarations sent again while the node held none, as the gateway wants", m-n)
	}
}

// A bubble the node cannot take is answered, so the gateway can tell its
// client: unreadable or unrenderable bubbles with invalid_value, a device
// the node no longer has with unavailable. What the node took, withdrew or
// dropped as stale (the gateway sends that again) gets no answer.
func TestNodeAnswersNavigationItCannotTake(t *testing.T) {
	n, d := testNode(t)
	out := watchOutbox(t, n.sys)
	var snap loop.Snapshot
	d.Load(&snap)
	good := bubbleAround(t, snap.State.PositionM)
	stale := func(m *wire.Navigation) *wire.Navigation {
		m.SentUnixNs = time.Now().Add(-time.Second).UnixNano()
		return m
	}
	cases := []struct {
		name string
		m    *wire.Navigation
		code protocol.Code // "": no answer
	}{
		{"a bubble it renders", navDeclared(d.Info.UUID, 1, 1, good), ""},
		{"a withdrawal", navDeclared(d.Info.UUID, 2, 0, nil), ""},
		{"not JSON", navDeclared(d.Info.UUID, 3, 1, []byte(`{"Primitive":`)), protocol.CodeInvalidValue},
		{"a negative zone width", navDeclared(d.Info.UUID, 4, 1, []byte(`{"Primitive":1,"Shape":{"RadiusM":0.05},"DevMPerLocalM":1,"WidthM":-1}`)), protocol.CodeInvalidValue},
		{"a primitive the loop does not close", navDeclared(d.Info.UUID, 5, 1, []byte(`{"Primitive":250,"DevMPerLocalM":1,"WidthM":0.03}`)), protocol.CodeInvalidValue},
		{"a device the node no longer has", navDeclared("uuid-gone", 6, 1, good), protocol.CodeUnavailable},
		{"a withdrawal for a device gone", navDeclared("uuid-gone", 7, 0, nil), ""},
		{"a stale unrenderable bubble", stale(navDeclared(d.Info.UUID, 8, 1, []byte(`{}`))), ""},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := len(sentOf[*wire.NavigationReply](out))
			n.navigation(c.m)
			// A refusal that always comes marks where this case's answers end.
			mark := uint64(1000 + i)
			n.navigation(navDeclared("uuid-mark", mark, 1, good))
			var got []*wire.NavigationReply
			hwtest.Eventually(t, 5*time.Second, "the marking refusal", func() bool {
				got = sentOf[*wire.NavigationReply](out)[before:]
				return len(got) > 0 && got[len(got)-1].Gen == mark
			})
			got = got[:len(got)-1]
			if c.code == "" {
				if len(got) != 0 {
					t.Fatalf("answered %+v, want no answer", got[0])
				}
				return
			}
			if len(got) != 1 {
				t.Fatalf("%d answers, want one refusal", len(got))
			}
			r := got[0]
			if r.Uuid != c.m.Uuid || r.Gen != c.m.Gen || r.Track != c.m.Track || r.Session != c.m.Session || r.Code != string(c.code) || r.Error == "" {
				t.Errorf("refusal %+v, want %s for generation %d of track %d, session %d, with a reason", r, c.code, c.m.Gen, c.m.Track, c.m.Session)
			}
		})
	}
	// The refused generation is taken: the gateway's commands carry no
	// navigation, and its pushes stop asking for the bubble again.
	n.mu.Lock()
	nav := n.navs[fxKey{gatewaySession, d.Info.UUID}]
	n.mu.Unlock()
	if nav == nil || nav.gen != 5 || nav.params != nil {
		t.Errorf("kept %+v, want generation 5 taken with no navigation", nav)
	}
}

// The node refuses a session's bubble after the gateway answered the
// configure: the client hears navigation-refused, for its own session,
// with the node's code and reason; the gateway stops sending that bubble
// while the node's pushes lag; a refusal of an older generation (the
// session configured anew since) is not reported; a new configure sends a
// new bubble.
func TestGatewayTellsTheClientOfARefusedNavigation(t *testing.T) {
	g := testGateway(t, time.Hour)
	out := watchOutbox(t, g.sys)
	sub := subscribeEvents(t, g)
	pushState := addRemoteArm(t, g)
	push := func() { pushState(&wire.State{PositionM: []float64{0, 0, 0}}) }
	push()
	c := openGatewayClient(t, g, "")
	sess, deliver := c.sess, c.send
	arm := func(body string) string { return `{"arm3":[{"device_id":"049D",` + body + `}]}` }
	force := arm(`"commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":0.5}}}`)
	configure := func(gain int) *wire.Navigation {
		t.Helper()
		before := len(sentOf[*wire.Navigation](out))
		cfg := fmt.Sprintf(`"configure":{"navigation":{"mode":"bubble","bubble":{"speed_gain":%d}}}`, gain)
		if f := deliver(arm(cfg)); f["errors"] != nil {
			t.Fatalf("configure.navigation: %v", f["errors"])
		}
		var sent *wire.Navigation
		hwtest.Eventually(t, 5*time.Second, "the bubble forwarded to the node", func() bool {
			deliver(force)
			nav := sentOf[*wire.Navigation](out)
			if len(nav) > before && len(nav[len(nav)-1].Bubble) > 0 {
				sent = nav[len(nav)-1]
			}
			return sent != nil
		})
		return sent
	}
	refuseTrack := func(gen, track uint64, code protocol.Code, why string) {
		g.sys.Root.Send(actor.NewPID(g.sys.Address(), gatewayActorName),
			&wire.NavigationReply{Uuid: "uuid-a", Gen: gen, Track: track, Session: sess.ID, Code: string(code), Error: why})
	}
	refuse := func(sent *wire.Navigation, code protocol.Code, why string) {
		refuseTrack(sent.Gen, sent.Track, code, why)
	}
	nextRefusal := func() (sessionID uint64, code, reason string) {
		t.Helper()
		var data struct {
			SessionID uint64 `json:"session_id"`
			DeviceID  string `json:"device_id"`
			Code      string `json:"code"`
			Reason    string `json:"reason"`
		}
		raw := nextEvent(t, sub, event.NameNavigationRefused)
		if err := json.Unmarshal(raw, &data); err != nil || data.DeviceID != "049D" {
			t.Fatalf("navigation-refused %s (%v), want device 049D", raw, err)
		}
		return data.SessionID, data.Code, data.Reason
	}

	first := configure(4)
	second := configure(5)
	if second.Gen <= first.Gen {
		t.Fatalf("generations %d then %d", first.Gen, second.Gen)
	}
	// The first bubble's refusal comes after the session configured again:
	// not the client's news. The second's is.
	refuse(first, protocol.CodeInvalidValue, "stale")
	refuse(second, protocol.CodeInvalidValue, "node a cannot render the bubble: effect: a bubble needs a positive zone width and scale")
	if s, code, why := nextRefusal(); s != sess.ID || code != string(protocol.CodeInvalidValue) || !strings.Contains(why, "positive zone width") {
		t.Errorf("navigation-refused for session %d, %s: %q; want session %d, invalid_value, the node's reason", s, code, why, sess.ID)
	}

	// The node answers every copy of a generation it refuses, and the
	// gateway sends one again while the node's pushes lag (the round trip
	// of a slow link is longer than resendAfter): the client hears of the
	// refusal once (the next navigation-refused below is the third's).
	refuse(second, protocol.CodeInvalidValue, "node a cannot render the bubble: again")

	// The node's pushes lag (they never will report a refused bubble):
	// the gateway does not send it again.
	n := len(sentOf[*wire.Navigation](out))
	fw := g.proxies["uuid-a"]
	fw.fxMu.Lock()
	fw.navSentAt = time.Time{} // as if resendAfter had passed
	fw.fxMu.Unlock()
	push()
	if m := len(sentOf[*wire.Navigation](out)); m != n {
		t.Errorf("the refused bubble sent %d more times", m-n)
	}

	// A new configure sends a new bubble, and its refusal is told again.
	third := configure(6)
	if third.Gen <= second.Gen {
		t.Fatalf("generation %d after %d", third.Gen, second.Gen)
	}
	// A refusal of the same generation from an older proxy of the device
	// (its generations started again; another track) is not this bubble's.
	refuseTrack(third.Gen, third.Track+1, protocol.CodeInvalidValue, "an older proxy's bubble")
	refuse(third, protocol.CodeUnavailable, "device uuid-a is no longer on node a")
	if s, code, why := nextRefusal(); s != sess.ID || code != string(protocol.CodeUnavailable) {
		t.Errorf("navigation-refused for session %d, %s: %q; want session %d, unavailable (a second event for one refused generation?)", s, code, why, sess.ID)
	}
}

// A default bubble ({"mode": "bubble"}) configured through the gateway on
// a node's arm is sized for that arm's family, by the device type number
// the node reports, as on a single host: a Minverse's half as large as an
// Inverse3's, so its hand can reach the velocity zone.
func TestGatewaySizesTheDefaultBubbleForTheNodesArm(t *testing.T) {
	for _, tc := range []struct {
		name            string
		model           uint32
		radiusM, widthM float64
	}{
		{"inverse3", hw.ModelInverse3, 0.05, 0.03},
		{"minverse", hw.ModelMinverse, 0.025, 0.015},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := testGateway(t, time.Hour)
			out := watchOutbox(t, g.sys)
			d := arm("uuid-a", "049D")
			d.Model = tc.model
			g.inventory(&wire.Inventory{NodeId: "a", Address: "127.0.0.2:7070", Devices: []*wire.Device{d}})
			waitAdded(t, g)
			g.states(&wire.StateBatch{NodeId: "a", SentUnixNs: time.Now().UnixNano(), States: []*wire.State{{Uuid: "uuid-a"}}})

			c := openGatewayClient(t, g, "")
			f := c.send(`{"arm3":[{"device_id":"049D","configure":{"navigation":{"mode":"bubble"}},"commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":0}}}}]}`)
			if f["errors"] != nil {
				t.Fatalf("configure.navigation: %v", f["errors"])
			}
			var sent *wire.Navigation
			hwtest.Eventually(t, 5*time.Second, "the bubble forwarded to the node", func() bool {
				for _, n := range sentOf[*wire.Navigation](out) {
					if len(n.Bubble) > 0 {
						sent = n
					}
				}
				return sent != nil
			})
			var b effect.Bubble
			if err := json.Unmarshal(sent.Bubble, &b); err != nil {
				t.Fatal(err)
			}
			if b.Shape.RadiusM != tc.radiusM || b.WidthM != tc.widthM {
				t.Errorf("forwarded a bubble of radius %v m, zone %v m; want %v, %v", b.Shape.RadiusM, b.WidthM, tc.radiusM, tc.widthM)
			}
		})
	}
}
