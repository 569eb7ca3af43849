package cluster

import (
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/hapticd/hapticd/actors"
	"github.com/hapticd/hapticd/actors/cluster/wire"
	"github.com/hapticd/hapticd/hw/sim"
	"github.com/hapticd/hapticd/protocol"
)

// hungDocument is a node's state directory whose durable writes of one
// document hang before they take effect (an fsync that does not return)
// until released; the service calls them off at its WriteTimeout.
type hungDocument struct {
	actors.Store
	name     string
	entered  chan struct{}
	released chan struct{}
}

func (h *hungDocument) SaveGated(name string, v any, commit func() bool) error {
	gs := h.Store.(interface {
		SaveGated(name string, v any, commit func() bool) error
	})
	if name != h.name {
		return gs.SaveGated(name, v, commit)
	}
	return gs.SaveGated(name, v, func() bool {
		select {
		case h.entered <- struct{}{}:
		default:
		}
		<-h.released
		return commit()
	})
}

// A config write hung on one device's document (a hung disk) holds none of
// the node's other devices' config requests: a set on another arm is
// answered and applied at once. The node answered them in one queue, so
// they waited behind the hung write for the service's WriteTimeout (5 s)
// and were then refused as too old to apply (503), the gateway having
// given up after 2 s.
func TestNodeConfigOfOneDeviceDoesNotWaitOnAnothersHungWrite(t *testing.T) {
	hungArm, otherArm := sim.ArmOptions{Index: 0, PeriodS: 0.001}, sim.ArmOptions{Index: 1, PeriodS: 0.001}
	hung := &hungDocument{name: "devices/" + protocol.TypeArm.Key() + "-" + sim.NewArm(hungArm).Info().ID,
		entered: make(chan struct{}, 1), released: make(chan struct{})}
	svc, shutdown := testServiceWith(t, actors.Options{StateDir: t.TempDir(),
		WrapStore: func(s actors.Store) actors.Store { hung.Store = s; return hung }})
	t.Cleanup(shutdown)
	var once sync.Once
	release := func() { once.Do(func() { close(hung.released) }) }
	t.Cleanup(release) // before the service stops: its stop waits on the write
	var arms [2]*actors.Device
	for i, o := range []sim.ArmOptions{hungArm, otherArm} {
		d, err := svc.AddDevice(sim.NewArm(o), false)
		if err != nil {
			t.Fatal(err)
		}
		arms[i] = d
	}
	n := testNodeServing(t, svc)
	pid, err := n.sys.Root.SpawnNamed(actor.PropsFromProducer(func() actor.Actor { return (*nodeActor)(n) }), nodeActorName)
	if err != nil {
		t.Fatal(err)
	}
	set := func(d *actors.Device) *actor.Future {
		return n.sys.Root.RequestFuture(pid, &wire.ConfigRequest{Uuid: d.Info.UUID, Op: "set", Key: "handedness", Json: []byte(`"left"`),
			GatewayAddress: testGW, SentUnixNs: time.Now().UnixNano()}, 10*time.Second)
	}
	first := set(arms[0])
	select {
	case <-hung.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the first arm's set never reached its document")
	}
	start := time.Now()
	a, err := set(arms[1]).Result()
	took := time.Since(start)
	if err != nil {
		t.Fatalf("the other arm's set: no answer (%v) after %v", err, took)
	}
	if r, ok := a.(*wire.ConfigReply); !ok || r.Error != "" {
		t.Fatalf("the other arm's set, while the first arm's write hangs: answered %+v after %v", a, took)
	}
	if took > configTimeout {
		t.Errorf("the other arm's set answered after %v; the gateway waits %v", took, configTimeout)
	}
	if got := entryJSON(t, svc, arms[1], protocol.KeyHandedness); got != `"left"` {
		t.Errorf("the other arm's handedness %s after its acknowledged set, want \"left\"", got)
	}
	release()
	if _, err := first.Result(); err != nil {
		t.Errorf("the hung arm's set: no answer once the disk answered: %v", err)
	}
}
