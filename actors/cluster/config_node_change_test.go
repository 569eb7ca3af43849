package cluster

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/hapticd/hapticd/actors"
	"github.com/hapticd/hapticd/hw/hwtest"
	"github.com/hapticd/hapticd/protocol"
)

// gatewayPushedBy is a test gateway serving node n's device d: it was
// added from n's own inventory, n answers its config requests (plainNode),
// and n's states are pushed to it every 5 ms until the test ends.
func gatewayPushedBy(t *testing.T, n *Node, d *actors.Device) *Gateway {
	t.Helper()
	g := testGateway(t, time.Minute)
	if _, err := g.sys.Root.SpawnNamed(actor.PropsFromProducer(func() actor.Actor { return &plainNode{n: n} }), nodeActorName); err != nil {
		t.Fatal(err)
	}
	n.mu.Lock()
	inv := n.inventoryLocked()
	n.mu.Unlock()
	inv.Address = g.sys.Address()
	g.inventory(inv)
	waitAdded(t, g)
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		var rd pushRead
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			n.mu.Lock()
			devs := n.devicesLocked()
			n.mu.Unlock()
			n.read(&rd, devs, time.Now())
			g.states(n.batch(&rd, pushDest{owner: gatewaySession}, nil, nil, nil))
		}
	}()
	t.Cleanup(func() { close(done); <-stopped })
	hwtest.Eventually(t, 10*time.Second, "the gateway's sync of the device's config", g.proxy(d.Info.UUID).synced.Load)
	return g
}

// A device-global entry set or reset on the node's own port (what its
// HTTP handler calls) while a gateway serves the device reaches the
// gateway: a GET through the gateway answers the node's value, and so
// does the gateway's copy that GET /devices and frames show. And a
// set_gravity_compensation through the gateway of the value the node had
// before reaches the node: the gateway's copy no longer says it changes
// nothing. The gateway kept its copy from when the device joined, and
// answered it (lab13).
func TestConfigChangedOnTheNodeReachesTheGateway(t *testing.T) {
	key := protocol.KeyGravityCompensation
	gravity := func(on bool) protocol.GravityCompensation {
		return protocol.GravityCompensation{Enabled: on, ScalingFactor: 1}
	}
	for _, c := range []struct {
		name   string
		before bool // compensation on before the change, off after
		change func(n *Node, d *actors.Device) error
	}{
		{"set on the node", true, func(n *Node, d *actors.Device) error {
			_, err := n.svc.SetEntry(d, 0, gravity(false))
			return err
		}},
		{"reset on the node", false, func(n *Node, d *actors.Device) error {
			_, err := n.svc.ResetEntry(d, nil, key) // on, the default
			return err
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			after := !c.before
			n, d := testNode(t)
			if _, err := n.svc.SetEntry(d, 0, gravity(c.before)); err != nil {
				t.Fatal(err)
			}
			g := gatewayPushedBy(t, n, d)
			dev := g.svc.Devices().All()[0]
			was, now := fmt.Sprintf(`"enabled":%v`, c.before), fmt.Sprintf(`"enabled":%v`, after)
			if got := entryJSON(t, g.svc, dev, key); !strings.Contains(got, was) {
				t.Fatalf("the gateway has %s after its sync; want the node's %s", got, was)
			}
			if err := c.change(n, d); err != nil {
				t.Fatal(err)
			}
			hwtest.Eventually(t, 10*time.Second, "the node's change answered and shown by the gateway", func() bool {
				return strings.Contains(entryJSON(t, g.svc, dev, key), now) &&
					dev.ViewFor(0).Config.Device.GravityCompensation.Enabled == after
			})
			setGravityThrough(t, g, dev.ID, c.before)
			if node := entryJSON(t, n.svc, d, key); !strings.Contains(node, was) {
				t.Errorf("after set_gravity_compensation %v through the gateway the node has %s", c.before, node)
			}
		})
	}
}

// The node gives a device a new config generation when its device-global
// config changes, and only then (a set of the value in force keeps it), so
// a gateway does not read the config again for nothing; its pushes and its
// inventory say the same generation.
func TestNodeConfigGenerationFollowsTheDeviceConfig(t *testing.T) {
	n, d := testNode(t)
	gen := func() uint64 {
		n.mu.Lock()
		defer n.mu.Unlock()
		return n.inventoryLocked().Devices[0].ConfigGen
	}
	first := gen()
	if first == 0 {
		t.Fatal("config generation 0: a gateway takes it for a node older than the field")
	}
	if _, err := n.svc.SetEntry(d, 0, d.ViewFor(0).Config.Device.Handedness); err != nil {
		t.Fatal(err)
	}
	if g := gen(); g != first {
		t.Errorf("generation %d after a set of the value in force, want %d still", g, first)
	}
	if _, err := n.svc.SetEntry(d, 0, protocol.HomeReturn{Enabled: !d.ViewFor(0).Config.Device.HomeReturn.Enabled}); err != nil {
		t.Fatal(err)
	}
	if g := gen(); g == first {
		t.Errorf("generation %d after home_return changed on the node, want another", g)
	}
	var rd pushRead
	n.mu.Lock()
	devs := n.devicesLocked()
	n.mu.Unlock()
	n.read(&rd, devs, time.Now())
	if st := n.batch(&rd, pushDest{owner: gatewaySession}, nil, nil, nil).States[0]; st.ConfigGen != gen() {
		t.Errorf("pushed config_gen %d, the inventory's %d: want one generation", st.ConfigGen, gen())
	}
}
