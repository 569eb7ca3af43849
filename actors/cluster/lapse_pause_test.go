package cluster

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hapticd/hapticd/actors"
	"github.com/hapticd/hapticd/actors/cluster/wire"
	"github.com/hapticd/hapticd/actors/loop"
	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/hw/hwtest"
)

// pushedToTestGW is the newest state of uuid the node pushed to testGW,
// and how many pushes went out so far (nil: none of uuid yet).
func pushedToTestGW(out *outbox, uuid string) (*wire.State, int) {
	batches := sentOf[*wire.StateBatch](out)
	if len(batches) == 0 {
		return nil, 0
	}
	for _, st := range batches[len(batches)-1].States {
		if st.Uuid == uuid {
			return st, len(batches)
		}
	}
	return nil, len(batches)
}

// untilPushLoopSaw waits until the node's push loop has run a whole tick
// after cond held of the arm's pushed state: a push that shows it was read
// after it, and the push loop looks at the arms' effects before it reads
// them, so the tick after that one looked after it too.
func untilPushLoopSaw(t *testing.T, out *outbox, uuid, what string, cond func(*wire.State) bool) *wire.State {
	t.Helper()
	var seenAt int
	hwtest.Eventually(t, 5*time.Second, "a push showing "+what, func() bool {
		st, k := pushedToTestGW(out, uuid)
		seenAt = k
		return st != nil && cond(st)
	})
	var st *wire.State
	hwtest.Eventually(t, 5*time.Second, "the push loop's next tick after "+what, func() bool {
		var k int
		st, k = pushedToTestGW(out, uuid)
		return k > seenAt
	})
	return st
}

// A gateway's stall past the node's lease (--cluster-lease-ms) while its
// session keeps its own lease pauses the gateway's effects on the node with
// the force, and when its commands resume the arm renders them again at
// once: the state pushed meanwhile still says its declaration is in
// force, so the gateway sends none, and its client's spring never waits
// for one (it used to: the node dropped the effects with its lease, and
// the spring came back only when the gateway declared it again, up to
// resendAfter, 100 ms, after its last declaration). Another owner that
// takes the arm meanwhile, a local session or another gateway, takes them
// away: the gateway's control that resumes after it renders none of them
// and the push says none of its declaration is in force (it sends it
// again). So does the node forgetting the silent gateway.
func TestNodeLeaseLapsePausesAGatewaysEffectsUntilAnotherTakesTheArm(t *testing.T) {
	const other = "127.0.0.5:7070"
	for _, tc := range []struct {
		name string
		// meanwhile happens after the lapse, before the gateway's control
		// resumes; kept is whether its effects should still be in force.
		meanwhile func(t *testing.T, n *Node, d *actors.Device, out *outbox)
		kept      bool
	}{
		{name: "nobody else takes the arm", kept: true},
		{name: "a local session takes the arm and lets go", meanwhile: func(t *testing.T, n *Node, d *actors.Device, out *outbox) {
			if d.Register().Claim(7) != 7 {
				t.Fatal("the local session could not claim the arm")
			}
			untilPushLoopSaw(t, out, d.Info.UUID, "the arm held locally", func(st *wire.State) bool { return st.HeldLocally })
			d.Register().Release(7)
		}},
		{name: "a local session takes the arm and lets go between two pushes", meanwhile: func(t *testing.T, n *Node, d *actors.Device, out *outbox) {
			// Microseconds: the push loop, every 2 ms, does not see it.
			if d.Register().Claim(7) != 7 {
				t.Fatal("the local session could not claim the arm")
			}
			d.Register().Release(7)
		}},
		{name: "another gateway takes the arm and lets go", meanwhile: func(t *testing.T, n *Node, d *actors.Device, out *outbox) {
			n.subscribe(&wire.Subscribe{GatewayAddress: other, SentUnixNs: time.Now().UnixNano()})
			take := fresh(d.Info.UUID, 1, hw.ModeForce, 0, 0, 0)
			take.GatewayAddress = other
			n.command(take)
			if o := d.Register().Owner(); o != gatewaySession+2 {
				t.Fatalf("owner %d after the other gateway's command, want it (%d)", o, uint64(gatewaySession+2))
			}
			idle := fresh(d.Info.UUID, 2, hw.ModeIdle)
			idle.GatewayAddress = other
			n.command(idle)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, d := testNode(t)
			out := watchOutbox(t, n.sys)
			events, err := n.svc.Activity().Subscribe(0, false)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(events.Close)
			n.wg.Add(1)
			go n.push()
			uuid := d.Info.UUID
			var snap loop.Snapshot
			pull := springBeside(d)
			n.effects(declared(uuid, 1, specsJSON(t, pull)))
			n.command(fresh(uuid, 1, hw.ModeForce, 0, 0, 0))
			var rep loop.EffectsReport
			springOn := func() bool {
				return d.LoadEffects(&rep) && rep.Rendering && rep.N >= 1 && rep.Effects[0].ID == "pull" &&
					!rep.Effects[0].Removing && rep.Effects[0].Weight > 0
			}
			hwtest.Eventually(t, 5*time.Second, "the gateway's spring rendered", springOn)

			// The gateway stalls: no command within the node's lease
			// (100 ms), which ends the force and pauses the spring. The
			// loop releases the arm at the lapse; a push alone may be of
			// a snapshot from before the control (an arm nobody read
			// publishes one tick in 128), idle and rendering nothing.
			hwtest.Eventually(t, 5*time.Second, "the node's lease on the gateway lapsed", func() bool {
				return d.Register().Owner() == 0
			})
			st := untilPushLoopSaw(t, out, uuid, "the lapse", func(st *wire.State) bool {
				return st.ControlMode == uint32(hw.ModeIdle) && !st.EffectsRendering
			})
			// The node's event says the spring is paused, not dropped: an
			// operator told to declare it again would be told wrong.
			lapse := nextEventOf(t, events, "control-lease-expired")
			var data struct {
				Dropped int `json:"effects_dropped"`
			}
			if err := json.Unmarshal(lapse.Data, &data); err != nil {
				t.Fatal(err)
			}
			if data.Dropped != 0 || !strings.Contains(lapse.Message, "effect there is paused") || strings.Contains(lapse.Message, "declare") {
				t.Errorf("the node's control-lease-expired: effects_dropped %d, %q; want 0 and the spring paused", data.Dropped, lapse.Message)
			}
			if tc.meanwhile != nil {
				tc.meanwhile(t, n, d, out)
				st = untilPushLoopSaw(t, out, uuid, "the arm free again", func(st *wire.State) bool { return !st.HeldLocally })
			}
			want := uint64(0)
			if tc.kept {
				want = 1
			}
			if st.EffectsGen != want {
				t.Errorf("pushed to the gateway: effects_gen %d, want %d", st.EffectsGen, want)
			}

			// Its commands resume, with no new declaration.
			n.command(fresh(uuid, 2, hw.ModeForce, 0, 0, 0))
			var resumedAt uint64
			hwtest.Eventually(t, 5*time.Second, "the gateway's control resumed", func() bool {
				d.Load(&snap)
				resumedAt = snap.Tick
				return d.Register().Owner() == gatewaySession && snap.Mode == hw.ModeForce
			})
			// Within 20 ticks the spring renders again, or (not kept)
			// never does.
			var seen []string
			for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(200 * time.Microsecond) {
				on := springOn()
				d.Load(&snap)
				if on {
					seen = append(seen, fmt.Sprintf("tick %d", snap.Tick))
				}
				if on && tc.kept || snap.Tick >= resumedAt+20 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the loop did not tick 20 times within 5 s")
				}
			}
			switch {
			case tc.kept && len(seen) == 0:
				t.Errorf("the spring not rendered within 20 ticks of the resumed control (the gateway's session never lapsed)")
			case tc.kept && snap.Tick > resumedAt+20:
				t.Errorf("the spring back %d ticks after the resumed control, want within 20", snap.Tick-resumedAt)
			case !tc.kept && len(seen) > 0:
				t.Errorf("the gateway's old spring rendered again (%v) after another owner took the arm; it never declared it again", seen)
			}
		})
	}
}

// A gateway the node forgot (silent for GatewayTimeout) leaves none of its
// paused effects on the arm: it would come back as a new owner, and nothing
// would ever withdraw them.
func TestForgottenGatewaysPausedEffectsGo(t *testing.T) {
	n, d := testNode(t)
	var snap loop.Snapshot
	pull := springBeside(d)
	n.effects(declared(d.Info.UUID, 1, specsJSON(t, pull)))
	n.command(fresh(d.Info.UUID, 1, hw.ModeForce, 0, 0, 0))
	hwtest.Eventually(t, 5*time.Second, "the lease lapsed", func() bool {
		d.Load(&snap)
		return snap.Tick > 0 && snap.Mode == hw.ModeIdle && d.Register().Owner() == 0
	})
	if d.Effects() == nil {
		t.Fatal("the spring dropped with the lease alone")
	}
	n.mu.Lock()
	for range 2 + int(GatewayTimeout/silenceCredit) {
		n.forgetSilentLocked(time.Second)
	}
	forgotten := n.subs[testGW] == nil
	n.mu.Unlock()
	if !forgotten {
		t.Fatal("the silent gateway not forgotten")
	}
	n.wg.Add(1)
	go n.push()
	hwtest.Eventually(t, 5*time.Second, "the forgotten gateway's effects gone", func() bool { return d.Effects() == nil })
}

// A gateway whose control resumes after another owner held the arm feels
// none of its paused effects, also when the node's push loop never saw
// that owner: it claimed and let go between two pushes, and the gateway's
// command came before the next one (no push loop runs here, so every
// claim falls between pushes). The register's term says another held it.
// With nobody in between, the effects render again at once.
func TestGatewayResumingAfterAClaimBetweenPushesFeelsNoneOfItsPausedEffects(t *testing.T) {
	for _, tc := range []struct {
		name      string
		meanwhile func(d *actors.Device)
		kept      bool
	}{
		{name: "nobody else takes the arm", meanwhile: func(*actors.Device) {}, kept: true},
		{name: "a local session takes the arm and lets go", meanwhile: func(d *actors.Device) {
			if d.Register().Claim(7) != 7 {
				t.Fatal("the local session could not claim the arm")
			}
			d.Register().Release(7)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, d := testNode(t)
			uuid := d.Info.UUID
			n.effects(declared(uuid, 1, specsJSON(t, springBeside(d))))
			n.command(fresh(uuid, 1, hw.ModeForce, 0, 0, 0))
			var rep loop.EffectsReport
			// A report of the loop's since sinceNs shows the spring pulling.
			springSince := func(sinceNs int64) bool {
				return d.LoadEffects(&rep) && rep.TimeNs > sinceNs && rep.Rendering && rep.N >= 1 &&
					rep.Effects[0].ID == "pull" && !rep.Effects[0].Removing && rep.Effects[0].ForceN.X > 1
			}
			hwtest.Eventually(t, 5*time.Second, "the gateway's spring rendered", func() bool { return springSince(0) })
			hwtest.Eventually(t, 5*time.Second, "the node's lease on the gateway lapsed", func() bool {
				return d.Register().Owner() == 0
			})
			tc.meanwhile(d)
			var snap loop.Snapshot
			d.Load(&snap)
			resumedAt, resumeNs := snap.Tick, n.clock.Now()
			n.command(fresh(uuid, 2, hw.ModeForce, 0, 0, 0))
			on := false
			hwtest.Eventually(t, 5*time.Second, "20 ticks of the resumed control", func() bool {
				on = on || springSince(resumeNs)
				d.Load(&snap)
				return tc.kept && on || snap.Tick >= resumedAt+20
			})
			if on != tc.kept {
				t.Errorf("the gateway's paused spring pulled within 20 ticks of its resumed control: %v, want %v", on, tc.kept)
			}
		})
	}
}
