package cluster

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/hapticd/hapticd/actors/cluster/wire"
	"github.com/hapticd/hapticd/actors/loop"
	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/hw/hwtest"
)

// aheadClock is the system clock moved on by ahead: a node whose clock
// reads past a lease end its loop has not reached yet, as when a command
// arrives between the lease's end and the loop's next tick.
type aheadClock struct{ ahead atomic.Int64 }

func (c *aheadClock) Now() int64 { return loop.SystemClock().Now() + c.ahead.Load() }

// A gateway whose lease lapsed gives the arm to another at once; its
// effects, paused since the lapse, go when the other takes the arm, as
// they do when the push loop sees the other holding it: the arm keeps
// none of them, the state pushed to the lapsed
// gateway says its declaration is no longer in force (so it declares it
// again when its control resumes), and when it resumes without declaring
// again, the arm feels none of its old effects.
func TestLapsedGatewaysEffectsGoWhenAnotherTakesTheArm(t *testing.T) {
	n, d := testNode(t)
	clock := &aheadClock{}
	n.clock = clock
	const other = "127.0.0.5:7070"
	n.subscribe(&wire.Subscribe{GatewayAddress: other, SentUnixNs: time.Now().UnixNano()})
	var snap loop.Snapshot
	pull := springBeside(d)
	n.effects(declared(d.Info.UUID, 1, specsJSON(t, pull)))
	n.command(fresh(d.Info.UUID, 1, hw.ModeForce, 0, 0, 0))
	var rep loop.EffectsReport
	hwtest.Eventually(t, 5*time.Second, "the first gateway's spring rendered", func() bool {
		d.LoadEffects(&rep)
		return rep.Rendering && rep.N == 1 && rep.Effects[0].ForceN.X > 1
	})

	// The first gateway's lease has ended on the node's clock, and the
	// second's command comes before the loop or the push loop saw it.
	clock.ahead.Store(2 * n.leaseNs())
	takeover := fresh(d.Info.UUID, 1, hw.ModeForce, 0, 0, 0)
	takeover.GatewayAddress = other
	n.command(takeover)
	if o := d.Register().Owner(); o != gatewaySession+2 {
		t.Fatalf("owner %d after the second gateway's command, want it (%d)", o, uint64(gatewaySession+2))
	}
	var rd pushRead
	n.mu.Lock()
	devs := n.devicesLocked()
	n.mu.Unlock()
	n.read(&rd, devs, time.Now())
	n.mu.Lock()
	toFirst := n.batch(&rd, pushDest{owner: gatewaySession}, nil, n.fxGens, n.navs).States[0]
	toSecond := n.batch(&rd, pushDest{owner: gatewaySession + 2}, nil, n.fxGens, n.navs).States[0]
	n.mu.Unlock()
	if toFirst.EffectsGen != 0 {
		t.Errorf("pushed to the lapsed gateway: effects_gen %d, want 0 (its effects went when the other took the arm)", toFirst.EffectsGen)
	}
	if len(toSecond.Effects) != 0 || toSecond.EffectsGen != 0 {
		t.Errorf("pushed to the new holder: effects %v, gen %d; want none", toSecond.Effects, toSecond.EffectsGen)
	}
	if set := d.Effects(); set != nil {
		t.Errorf("the lapsed gateway's effects (owner %d) still on the arm the other holds", set.Session)
	}

	// The second lets go; the first's control resumes without a new
	// declaration: the arm renders none of its old spring.
	idle := fresh(d.Info.UUID, 2, hw.ModeIdle)
	idle.GatewayAddress = other
	n.command(idle)
	clock.ahead.Store(0)
	n.command(fresh(d.Info.UUID, 2, hw.ModeForce, 0, 0, 0))
	var resumedAt uint64
	hwtest.Eventually(t, 5*time.Second, "the first gateway's control resumed", func() bool {
		d.Load(&snap)
		resumedAt = snap.Tick
		return d.Register().Owner() == gatewaySession && snap.Mode == hw.ModeForce
	})
	hwtest.Eventually(t, 5*time.Second, "20 ticks of the resumed control", func() bool {
		d.Load(&snap)
		return snap.Tick >= resumedAt+20
	})
	// (Its spring may still be fading out from the takeover: that is not
	// in force.)
	if d.LoadEffects(&rep) && rep.Rendering {
		for _, e := range rep.Effects[:rep.N] {
			if !e.Removing {
				t.Errorf("the arm renders %q for the first gateway, which it never declared again after its lease lapsed", e.ID)
			}
		}
	}
}
