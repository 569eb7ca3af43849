package cluster

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hapticd/hapticd/actors"
	"github.com/hapticd/hapticd/actors/cluster/wire"
	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/hw/hwtest"
	"github.com/hapticd/hapticd/hw/sim"
)

// sharedIDArm is a simulated arm reporting the id and UUID a test gives.
type sharedIDArm struct {
	hw.Driver
	id, uuid string
}

func (d *sharedIDArm) Info() hw.Info {
	i := d.Driver.Info()
	i.ID, i.UUID = d.id, d.uuid
	return i
}

// A node's arm is not given an id the gateway's own registry keeps for an
// absent local arm (its remembered derived id): the proxy was served on it
// and took that arm's config, and the local arm, back, found its id held
// and was moved to another, its record dropped.
func TestGatewayProxyAvoidsAnAbsentLocalArmsRememberedID(t *testing.T) {
	svc, shutdown := testService(t)
	g := newTestGateway(svc, time.Minute)
	serveTestGateway(t, g, shutdown, false)
	localArm := func(i int, uuid string) hw.Driver {
		return &sharedIDArm{Driver: sim.NewArm(sim.ArmOptions{Index: i, PeriodS: 0.001}), id: "0A0A", uuid: uuid}
	}
	if _, err := svc.AddDevice(localArm(0, "uuid-l"), false); err != nil {
		t.Fatal(err)
	}
	m, err := svc.AddDevice(localArm(1, "uuid-m"), false)
	if err != nil {
		t.Fatal(err)
	}
	derived := m.ID
	if derived == "0A0A" {
		t.Fatal("arm M was not given a derived id")
	}
	svc.RemoveDevice(m, errors.New("unplugged"))
	hwtest.Eventually(t, 10*time.Second, "arm M leaving", func() bool {
		return svc.Devices().Find(m.Type, derived) == nil
	})

	const node = "11111111-2222-3333-4444-555555555555"
	inv := &wire.Inventory{NodeId: "n", Address: g.sys.Address(), Devices: []*wire.Device{arm(node, derived)}}
	g.inventory(inv)
	waitAdded(t, g)
	if g.proxy(node) == nil { // refused: the next inventory brings it back
		g.inventory(inv)
		waitAdded(t, g)
	}
	p := g.proxy(node)
	if p == nil || p.dev.Load() == nil {
		t.Fatal("the node's arm was not served")
	}
	if got := p.dev.Load().ID; got == derived {
		t.Fatalf("the node's arm was served on %s, absent local arm M's remembered id", got)
	}
	back, err := svc.AddDevice(localArm(1, "uuid-m"), false)
	if err != nil {
		t.Fatal(err)
	}
	if back.ID != derived {
		t.Fatalf("local arm M came back as %s, want its remembered %s", back.ID, derived)
	}
}

// A node's arm whose id has device config stored on the gateway is served
// on it when the config is its own (set through the gateway before), and
// given another when the config is a local arm's: it would have loaded
// that arm's config.
func TestGatewayProxyAndStoredConfigOwners(t *testing.T) {
	// In the form nodes report UUIDs in (hw.FormatUUID): a stored owner in
	// the old dashed form is read in it.
	const node = "11111111222233334444555555555555"
	for _, c := range []struct {
		name, owner string
		served      bool // on the id it reports
	}{
		{"its own config", node, true},
		{"its own config, owner stored in the old form", "11111111-2222-3333-4444-555555555555", true},
		{"a local arm's config", "uuid-k", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			doc := `{"force_clamp": {"max_force_n": 3}, "owner": {"uuid": "` + c.owner + `"}}`
			if err := os.MkdirAll(filepath.Join(dir, "devices"), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "devices", "arm3-1234.json"), []byte(doc), 0o600); err != nil {
				t.Fatal(err)
			}
			svc, shutdown := testServiceWith(t, actors.Options{StateDir: dir})
			g := newTestGateway(svc, time.Minute)
			serveTestGateway(t, g, shutdown, false)
			inv := &wire.Inventory{NodeId: "n", Address: g.sys.Address(), Devices: []*wire.Device{arm(node, "1234")}}
			g.inventory(inv)
			waitAdded(t, g)
			p := g.proxy(node)
			if p == nil || p.dev.Load() == nil {
				t.Fatal("the node's arm was not served")
			}
			if got := p.dev.Load().ID; (got == "1234") != c.served {
				t.Fatalf("the node's arm was served on %s; on its reported 1234: %v, want %v", got, got == "1234", c.served)
			}
		})
	}
}
