package cluster

import (
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/hapticd/hapticd/actors"
	"github.com/hapticd/hapticd/actors/cluster/wire"
	"github.com/hapticd/hapticd/actors/store"
	"github.com/hapticd/hapticd/actors/store/storetest"
	"github.com/hapticd/hapticd/hw/sim"
	"github.com/hapticd/hapticd/protocol"
)

// A node's arm that leaves and comes back while the gateway's config write
// of it is held on the gateway's disk is added again once the disk
// answers; a device the same inventory brings is added at once (review36:
// the gateway added one device after another on one goroutine, so the
// second waited as long as the disk held the first's write).
func TestGatewayAddsADeviceWhileAnotherWaitsForItsLeavingWrite(t *testing.T) {
	nodeSvc, nodeShutdown := testService(t)
	t.Cleanup(nodeShutdown)
	var arms [2]*actors.Device
	for i := range arms {
		d, err := nodeSvc.AddDevice(sim.NewArm(sim.ArmOptions{Index: i, PeriodS: 0.001}), false)
		if err != nil {
			t.Fatal(err)
		}
		arms[i] = d
	}
	n := testNodeServing(t, nodeSvc)

	held := storetest.New()
	svc, shutdown := testServiceWith(t, actors.Options{StateDir: t.TempDir(), WriteTimeout: 300 * time.Millisecond,
		WrapStore: func(s actors.Store) actors.Store { return held.Over(s.(*store.Store)) }})
	g := newTestGateway(svc, time.Minute)
	serveTestGateway(t, g, shutdown, false)
	release := held.Release
	t.Cleanup(release) // before the service stops: its stop waits on the write
	if _, err := g.sys.Root.SpawnNamed(actor.PropsFromProducer(func() actor.Actor { return &plainNode{n: n} }), nodeActorName); err != nil {
		t.Fatal(err)
	}
	inventory := func(ds ...*actors.Device) {
		m := &wire.Inventory{NodeId: "n", Address: g.sys.Address()}
		for _, d := range ds {
			m.Devices = append(m.Devices, arm(d.Info.UUID, d.ID))
		}
		g.inventory(m)
	}
	served := func(d *actors.Device) *actors.Device {
		for _, dev := range svc.Devices().All() {
			if dev.Info.UUID == d.Info.UUID {
				return dev
			}
		}
		return nil
	}

	inventory(arms[0])
	waitAdded(t, g)
	waitCond(t, "the gateway's sync of the first arm's config", g.proxy(arms[0].Info.UUID).synced.Load)
	first := served(arms[0])
	name := "devices/" + protocol.TypeArm.Key() + "-" + first.ID
	held.Hold(name)
	go func() { _, _ = svc.SetEntry(first, 0, protocol.Handedness("left")) }()
	select {
	case <-held.Entered():
	case <-time.After(10 * time.Second):
		t.Fatal("the gateway's write of the first arm's config never reached its commit point")
	}
	inventory() // unplugged on the node
	waitCond(t, "the first arm gone from the gateway", func() bool { return g.proxy(arms[0].Info.UUID) == nil && served(arms[0]) == nil })

	inventory(arms[0], arms[1])
	waitCond(t, "the second arm served while the first waits for its write", func() bool { return served(arms[1]) != nil })
	if served(arms[0]) != nil {
		t.Error("the first arm is back while the write it left with is held on the disk")
	}
	release()
	waitCond(t, "the first arm back once the disk answered", func() bool { return served(arms[0]) != nil })
}
