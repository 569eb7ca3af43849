package cluster

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/hapticd/hapticd/actors"
	"github.com/hapticd/hapticd/actors/cluster/wire"
	"github.com/hapticd/hapticd/hw/hwtest"
	"github.com/hapticd/hapticd/protocol"
)

// brokenDisk wraps the gateway's state directory: while fail is set its
// writes fail (a full or failing disk), and while hang is set they wait
// until released is closed (a hung disk).
type brokenDisk struct {
	actors.Store
	fail, hang *atomic.Bool
	released   chan struct{}
	hung       chan struct{} // told when a write starts to hang
}

func (b brokenDisk) Save(name string, v any) error {
	if b.fail.Load() {
		return errors.New("write: no space left on device")
	}
	if b.hang.Load() {
		select {
		case b.hung <- struct{}{}:
		default:
		}
		<-b.released
	}
	return b.Store.Save(name, v)
}

// gatewayOnDisk is gatewayOf with a state directory behind the gateway's
// service, broken as disk says.
func gatewayOnDisk(t *testing.T, stand actor.Actor, d *actors.Device, disk *brokenDisk) *Gateway {
	t.Helper()
	svc, shutdown := testServiceWith(t, actors.Options{StateDir: t.TempDir(),
		WrapStore: func(s actors.Store) actors.Store { disk.Store = s; return *disk }})
	g := newTestGateway(svc, time.Minute)
	serveTestGateway(t, g, shutdown, true)
	if _, err := g.sys.Root.SpawnNamed(actor.PropsFromProducer(func() actor.Actor { return stand }), nodeActorName); err != nil {
		t.Fatal(err)
	}
	g.inventory(&wire.Inventory{NodeId: "n", Address: g.sys.Address(), Devices: []*wire.Device{arm(d.Info.UUID, d.ID)}})
	waitAdded(t, g)
	return g
}

func newBrokenDisk() *brokenDisk {
	return &brokenDisk{fail: new(atomic.Bool), hang: new(atomic.Bool), released: make(chan struct{}), hung: make(chan struct{}, 1)}
}

// A set the node applied and persisted, whose copy on the gateway then
// fails (the gateway's disk full), is not acknowledged, and a read
// through the gateway afterwards answers the node's value, not the
// gateway's older copy: the entry was marked sure once the node answered,
// and reads answered the copy until the device rejoined (review22).
func TestGatewayReadAfterItsCopyFailedAnswersTheNodes(t *testing.T) {
	key := protocol.KeyHandedness
	n, d := testNode(t)
	disk := newBrokenDisk()
	g := gatewayOnDisk(t, &plainNode{n: n}, d, disk)
	dev := g.svc.Devices().All()[0]
	p := g.proxy(d.Info.UUID)
	hwtest.Eventually(t, 10*time.Second, "the gateway's sync of the device's config", p.synced.Load)
	before := entryJSON(t, g.svc, dev, key)
	other := `"left"`
	if before == other {
		other = `"right"`
	}
	e, pe := protocol.DecodeEntry(key, []byte(other), "")
	if pe != nil {
		t.Fatal(pe)
	}
	disk.fail.Store(true)
	if _, err := g.svc.SetEntry(dev, 0, e); err == nil {
		t.Fatal("a set whose copy on the gateway failed was acknowledged")
	}
	if got := entryJSON(t, n.svc, d, key); got != other {
		t.Fatalf("the node has %s after the set, want %s (it applied it before the gateway's copy failed)", got, other)
	}
	if got := entryJSON(t, g.svc, dev, key); got != other {
		t.Fatalf("a read through the gateway answers %s while its disk fails; the node has %s", got, other)
	}
	disk.fail.Store(false)
	if got := entryJSON(t, g.svc, dev, key); got != other {
		t.Fatalf("a read through the gateway answers %s; the node has %s", got, other)
	}
	if p.ConfigUnsure(key) {
		t.Fatal("the entry read back from the node is still unsure once the gateway's disk took it")
	}
}

// While the gateway's copy of one entry hangs on its disk (the sync
// copying the node's value in), reads of the device's other entries
// through the gateway still answer, from the node: the sync held the
// proxy's lock across the write, and every read of the device waited
// behind it (review22).
func TestGatewayReadsDoNotWaitOnAHungCopy(t *testing.T) {
	key, other := protocol.KeyHandedness, protocol.KeyTorqueScaling
	n, d := testNode(t)
	if r := n.config(&wire.ConfigRequest{Uuid: d.Info.UUID, Op: "set", Key: key.Path(), Json: []byte(`"left"`)}); r.Error != "" {
		t.Fatal(r.Error)
	}
	h := &heldNode{n: n, holdKey: key.Path(), release: make(chan struct{}), read: make(chan struct{}), gets: map[string]int{}}
	var once sync.Once
	release := func() { once.Do(func() { close(h.release) }) }
	disk := newBrokenDisk()
	t.Cleanup(func() { h.stop(release) })
	g := gatewayOnDisk(t, h, d, disk)
	// Before the gateway stops, so that its stop does not wait on the
	// hung write.
	t.Cleanup(func() { close(disk.released) })
	dev := g.svc.Devices().All()[0]
	select {
	case <-h.read:
	case <-time.After(10 * time.Second):
		t.Fatalf("the gateway's sync never read %s from the node", key.Path())
	}
	disk.hang.Store(true)
	release() // the sync copies the node's "left" in, and its write hangs
	select {
	case <-disk.hung:
	case <-time.After(10 * time.Second):
		t.Fatal("the sync's copy never reached the gateway's disk")
	}
	type answer struct {
		json string
		err  error
	}
	got := make(chan answer, 1)
	go func() {
		e, err := g.svc.Entry(dev, 0, other)
		if err != nil {
			got <- answer{err: err}
			return
		}
		b, err := e.MarshalJSON()
		got <- answer{string(b), err}
	}()
	select {
	case a := <-got:
		if a.err != nil {
			t.Fatalf("read %s through the gateway: %v", other.Path(), a.err)
		}
		if want := entryJSON(t, n.svc, d, other); a.json != want {
			t.Fatalf("read %s through the gateway: %s, the node has %s", other.Path(), a.json, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("a read of %s through the gateway did not answer within 10 s while the copy of %s hung", other.Path(), key.Path())
	}
}

// heldFirstSetNode stands in for a node's actor: a real Node applies each
// request as it comes, and the answer to the first set is held until the
// test lets it go, so that a later set's answer overtakes it.
type heldFirstSetNode struct {
	n        *Node
	applied  chan struct{} // closed once the first set is applied
	release  chan struct{}
	mu       sync.Mutex
	sets     int
	answered sync.WaitGroup
}

func (h *heldFirstSetNode) Receive(ctx actor.Context) {
	m, ok := ctx.Message().(*wire.ConfigRequest)
	if !ok {
		return
	}
	reply := h.n.config(m)
	h.mu.Lock()
	first := m.Op == "set" && h.sets == 0
	if m.Op == "set" {
		h.sets++
	}
	h.mu.Unlock()
	if !first {
		ctx.Respond(reply)
		return
	}
	close(h.applied)
	to, root := ctx.Sender(), ctx.ActorSystem().Root
	h.answered.Add(1)
	go func() {
		defer h.answered.Done()
		<-h.release
		root.Send(to, reply)
	}()
}

// Two sets of one entry through the gateway at once: the node applies
// them in the order they came, but their answers, and so the gateway's
// copies, may come in the other order. Both are acknowledged; a read
// through the gateway then answers the node's value, the later set's, not
// the copy the earlier set's late answer left (review22: each answer made
// the entry sure, and reads answered the older copy).
func TestGatewayOverlappingSetsReadTheNodes(t *testing.T) {
	key := protocol.KeyHandedness
	n, d := testNode(t)
	h := &heldFirstSetNode{n: n, applied: make(chan struct{}), release: make(chan struct{})}
	var once sync.Once
	release := func() { once.Do(func() { close(h.release) }) }
	t.Cleanup(func() { release(); h.answered.Wait() })
	g := gatewayOf(t, h, d)
	dev := g.svc.Devices().All()[0]
	hwtest.Eventually(t, 10*time.Second, "the gateway's sync of the device's config", g.proxy(d.Info.UUID).synced.Load)
	left, _ := protocol.DecodeEntry(key, []byte(`"left"`), "")
	right, _ := protocol.DecodeEntry(key, []byte(`"right"`), "")
	first := make(chan error, 1)
	go func() {
		_, err := g.svc.SetEntry(dev, 0, left)
		first <- err
	}()
	select {
	case <-h.applied:
	case <-time.After(10 * time.Second):
		t.Fatal("the first set never reached the node")
	}
	if _, err := g.svc.SetEntry(dev, 0, right); err != nil {
		t.Fatalf("second set: %v", err)
	}
	release()
	select {
	case err := <-first:
		if err != nil {
			t.Fatalf("first set: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the first set was never answered")
	}
	if node, gw := entryJSON(t, n.svc, d, key), entryJSON(t, g.svc, dev, key); node != `"right"` || gw != node {
		t.Fatalf("after two acknowledged sets (\"left\" then \"right\") the node has %s, a read through the gateway answers %s", node, gw)
	}
}
