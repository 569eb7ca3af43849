package cluster

import (
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"

	"github.com/hapticd/hapticd/actors"
	"github.com/hapticd/hapticd/actors/cluster/wire"
	"github.com/hapticd/hapticd/actors/loop"
	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/hw/hwtest"
	"github.com/hapticd/hapticd/hw/sim"
)

// A node's pushed states say how old they are, and the gateway's state age
// (GET /stats remote.state_age) follows: a moving simulated arm that nobody
// read lately has a state up to 127 ticks behind on the node's first read,
// which the gateway must not count as fresh; an arm at rest keeps a
// snapshot published long ago that is still its state, which it must not
// count as old. The node's real shard and push code, the gateway's real
// batch handling; no remote in the test process.
func TestPushedStateAgeIsHowOldTheLoopKnowsIt(t *testing.T) {
	svc, shutdown := testService(t)
	t.Cleanup(shutdown)
	add := func(index int, m sim.Motion) *actors.Device {
		d, err := svc.AddDevice(sim.NewArm(sim.ArmOptions{Index: index, PeriodS: 0.001, Motion: m}), false)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	moving, resting := add(1, sim.MotionCircle), add(2, sim.MotionNone)
	cfg := Config{NodeID: "n", LeaseMs: 100, Log: zerolog.Nop()}
	cfg.defaults()
	sys := actor.NewActorSystem() // no remote
	t.Cleanup(sys.Shutdown)
	n := &Node{svc: svc, cfg: cfg, log: cfg.Log, sys: sys, clock: loop.SystemClock(), subs: map[string]*subscriber{}}

	g := testGateway(t, time.Hour)
	n.mu.Lock()
	inv := n.inventoryLocked()
	n.mu.Unlock()
	g.inventory(inv)
	waitAdded(t, g)
	gatewayAge := func(d *actors.Device) time.Duration { return proxyStateAge(g, d.Info.UUID) }
	devs := map[string]*actors.Device{moving.Info.UUID: moving, resting.Info.UUID: resting}
	var rd pushRead
	// push reads every device and hands the gateway the batch, as the
	// node's push does; it returns what it read of d.
	push := func(d *actors.Device) (snap loop.Snapshot, ageNs int64) {
		n.read(&rd, devs, time.Now())
		g.states(n.batch(&rd, pushDest{owner: gatewaySession}, nil, nil, nil))
		for i, uuid := range rd.uuids {
			if uuid == d.Info.UUID {
				return rd.snaps[i], rd.ages[i]
			}
		}
		t.Fatalf("the push read no state of %s", d.Info.UUID)
		return snap, 0
	}
	ticks := func(d *actors.Device) uint64 { return d.Loop().Stats().Ticks } // not a read
	period := int64(time.Millisecond)

	// Unread from its start, the moving arm publishes one tick in 128.
	// Its first read may land on a sparse publish; a read marks it, and
	// it is read again once its hot spell has lapsed.
	for attempt := 0; ; attempt++ {
		start := ticks(moving)
		hwtest.Eventually(t, 20*time.Second, "the moving arm unread for 1,200 ticks", func() bool { return ticks(moving) > start+1200 })
		snap, ageNs := push(moving)
		behind := ticks(moving) - snap.Tick
		if want := max(rd.readNs-snap.TimeNs, 0); ageNs != want {
			t.Fatalf("the moving arm's state, published at %d, was pushed %v old at %d: want %v, since its publish", snap.TimeNs, time.Duration(ageNs), rd.readNs, time.Duration(want))
		}
		if behind < 3 {
			if attempt < 3 {
				continue // the read fell on (or next to) a sparse publish
			}
			t.Fatalf("the moving arm's first read after a quiet spell got a state %d ticks behind, %d times: it publishes every tick unread", behind, attempt+1)
		}
		// The gateway counts it as old as the node said, not as fresh.
		if got := gatewayAge(moving); got < time.Duration(ageNs) || ageNs < 2*period {
			t.Fatalf("the moving arm's state %d ticks behind (%v old at the node's read) is %v old on the gateway", behind, time.Duration(ageNs), got)
		}
		t.Logf("moving arm, first read after a quiet spell: %d ticks behind, pushed %v old", behind, time.Duration(ageNs))
		break
	}
	// Read again after the shard's next passes, its state is current.
	hwtest.Eventually(t, 10*time.Second, "the moving arm's pushed state current", func() bool {
		_, ageNs := push(moving)
		return ageNs < 20*period && gatewayAge(moving) < 50*time.Millisecond
	})

	// The arm at rest: its snapshot is old (it publishes nothing at
	// rest) and still its state, so the node pushes it as current.
	hwtest.Eventually(t, 20*time.Second, "the resting arm's old snapshot pushed as current", func() bool {
		snap, ageNs := push(resting)
		return rd.readNs-snap.TimeNs > int64(time.Second) && ageNs < 20*period && gatewayAge(resting) < 50*time.Millisecond
	})
}

// The gateway takes a pushed state as current as of age_ns before the node
// read it: its loop's state age counts from then, a negative age reads as
// zero, one beyond a minute as a minute (no overflow reads it as fresh), and the same state pushed again keeps the later of its times.
func TestGatewayStateAgeCountsFromWhenTheStateWasCurrent(t *testing.T) {
	tests := []struct {
		name     string
		ages     []time.Duration // pushed one after another, same tick
		ticks    []uint64
		min, max time.Duration
		// loopMin, when set, is the least age the gateway's loop may
		// publish: a loop tick between two pushes saw the first state
		// current then, and a later state is current no earlier.
		loopMin *time.Duration
	}{
		{name: "fresh", ages: []time.Duration{0}, ticks: []uint64{7}, max: 40 * time.Millisecond},
		{name: "stale", ages: []time.Duration{300 * time.Millisecond}, ticks: []uint64{7}, min: 300 * time.Millisecond, max: 340 * time.Millisecond},
		{name: "negative", ages: []time.Duration{-time.Hour}, ticks: []uint64{7}, max: 40 * time.Millisecond},
		{name: "beyond any loop's", ages: []time.Duration{math.MaxInt64}, ticks: []uint64{7}, min: time.Minute, max: time.Minute + 40*time.Millisecond},
		{name: "same state, coarser estimate", ages: []time.Duration{0, 300 * time.Millisecond}, ticks: []uint64{7, 7}, max: 40 * time.Millisecond},
		{name: "newer state, older", ages: []time.Duration{0, 300 * time.Millisecond}, ticks: []uint64{7, 8}, min: 300 * time.Millisecond, max: 340 * time.Millisecond, loopMin: new(time.Duration)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := testGateway(t, time.Hour)
			g.inventory(&wire.Inventory{NodeId: "a", Address: "127.0.0.2:7070", Devices: []*wire.Device{arm("uuid-a", "049D")}})
			waitAdded(t, g)
			for i, age := range tc.ages {
				g.states(&wire.StateBatch{NodeId: "a", SentUnixNs: time.Now().UnixNano(),
					States: []*wire.State{{Uuid: "uuid-a", Tick: tc.ticks[i], AgeNs: int64(age)}}})
			}
			pushedNs := loop.SystemClock().Now() // the gateway's loops' clock
			age := proxyStateAge(g, "uuid-a")
			if age < tc.min || age > tc.max {
				t.Fatalf("the state is %v old on the gateway, want %v to %v", age, tc.min, tc.max)
			}
			// The gateway's loop records it (GET /stats remote.state_age).
			hwtest.Eventually(t, 10*time.Second, "the loop's state age recorded", func() bool {
				_, _, sa := proxyFor(g, "uuid-a").Remote()
				return sa.Count > 0 && time.Duration(sa.MaxNs) >= tc.min
			})
			// And publishes the state with the time it was current, which
			// LoadCurrent and a recording on the gateway read: a tick of
			// the loop after the pushes says the state is as old.
			dev := proxyFor(g, "uuid-a").dev.Load().Loop()
			var snap loop.Snapshot
			hwtest.Eventually(t, 10*time.Second, "a tick after the pushes", func() bool {
				_ = dev.LoadCurrent(&snap)
				return snap.TimeNs > pushedNs
			})
			current := dev.LoadCurrent(&snap)
			least := tc.min
			if tc.loopMin != nil {
				least = *tc.loopMin
			}
			// The age grows with each tick after the pushes: the upper
			// bound counts from the pushes, not from the tick.
			age, since := time.Duration(snap.TimeNs-current), time.Duration(snap.TimeNs-pushedNs)
			if age < least || age-since > tc.max {
				t.Fatalf("the gateway's loop published the state %v old at its tick, %v after the pushes; want %v to %v as pushed", age, since, least, tc.max)
			}
		})
	}
}

// proxyStateAge is how old the state of the gateway's proxy for uuid is
// now on the gateway's clock, as its loop records it each tick.
func proxyStateAge(g *Gateway, uuid string) time.Duration {
	p := proxyFor(g, uuid)
	p.mu.Lock()
	defer p.mu.Unlock()
	return time.Duration(g.clock.Now() - p.sampledNs)
}

// proxyFor is the gateway's proxy for the remote device uuid.
func proxyFor(g *Gateway, uuid string) *proxy {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.proxies[uuid]
}

// stepClock is a loop clock the test moves by hand.
type stepClock struct{ ns atomic.Int64 }

func (c *stepClock) Now() int64 { return c.ns.Load() }

// A proxied state ages on the gateway's loop clock (monotonic), not on its
// wall clock: only the node's read time is placed by the clocks' offset
// estimate, and the time since it arrived is the loop clock's, so a step
// of the wall clock neither freshens nor ages it. The loop clock here
// moves by hand: the age follows it exactly, whatever the wall clock did.
func TestGatewayStateAgeOnLoopClock(t *testing.T) {
	svc, shutdown := testService(t)
	t.Cleanup(shutdown)
	g := newTestGateway(svc, time.Hour) // nothing started: the test is the proxy's loop
	t.Cleanup(g.sys.Shutdown)
	clock := &stepClock{}
	clock.ns.Store(int64(time.Hour))
	g.clock = clock
	g.inventory(&wire.Inventory{NodeId: "a", Address: "127.0.0.2:7070", Devices: []*wire.Device{arm("uuid-a", "049D")}})
	p := proxyFor(g, "uuid-a")
	const pushedAge = 2 * time.Millisecond
	g.states(&wire.StateBatch{NodeId: "a", SentUnixNs: time.Now().UnixNano(),
		States: []*wire.State{{Uuid: "uuid-a", Tick: 1, AgeNs: int64(pushedAge)}}})
	exchange := func() time.Duration {
		var cmd hw.Command
		var st hw.State
		if err := p.Exchange(&cmd, &st); err != nil {
			t.Fatal(err)
		}
		age, repeated := p.StateAge()
		if repeated {
			t.Fatal("the pushed state reads as the proxy's empty one")
		}
		return time.Duration(age)
	}
	first := exchange()
	if first < pushedAge || first > pushedAge+time.Second {
		t.Fatalf("the state is %v old at once, want %v and the batch's transit", first, pushedAge)
	}
	for _, step := range []time.Duration{300 * time.Millisecond, 0, 5 * time.Second} {
		clock.ns.Add(int64(step))
		before := first
		first = exchange()
		if first-before != step {
			t.Fatalf("the loop clock moved %v and the state aged %v (%v, then %v)", step, first-before, before, first)
		}
	}
}
