package cluster

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/hapticd/hapticd/actors"
	"github.com/hapticd/hapticd/actors/cluster/wire"
	"github.com/hapticd/hapticd/hw/hwtest"
)

// The gateway's sync copies each of a node's device-global entries in
// (ApplyOwnedEntry: a durable set). Unchanged (the node's device at its
// defaults, no document stored for it), it writes nothing, as syncConfig
// says. Before, the unchanged set's confirmation found no document and
// wrote one, fsynced, for every device the gateway serves at each join
// (and failed, leaving the entries unsure, on a full or read-only disk).
func TestGatewaySyncOfDefaultsWritesNothing(t *testing.T) {
	n, d := testNode(t)
	dir := t.TempDir()
	svc, shutdown := testServiceWith(t, actors.Options{StateDir: dir})
	g := newTestGateway(svc, time.Minute)
	serveTestGateway(t, g, shutdown, true)
	if _, err := g.sys.Root.SpawnNamed(actor.PropsFromProducer(func() actor.Actor { return &plainNode{n: n} }), nodeActorName); err != nil {
		t.Fatal(err)
	}
	g.inventory(&wire.Inventory{NodeId: "n", Address: g.sys.Address(), Devices: []*wire.Device{arm(d.Info.UUID, d.ID)}})
	waitAdded(t, g)
	p := g.proxy(d.Info.UUID)
	hwtest.Eventually(t, 10*time.Second, "the gateway's sync of the device's config", p.synced.Load)
	files, _ := filepath.Glob(filepath.Join(dir, "devices", "*"))
	for _, f := range files {
		b, _ := os.ReadFile(f)
		t.Errorf("the sync of a node's device at its defaults wrote %s:\n%s", f, b)
	}
}
