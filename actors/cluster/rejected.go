package cluster

import (
	"bytes"
	"encoding/json"
	"slices"

	"github.com/hapticd/hapticd/actors/cluster/wire"
	"github.com/hapticd/hapticd/protocol/event"
)

// A node publishes stored-entry-rejected when it reads a device's stored
// document (at the device's addition: at its start, before any gateway
// subscribed), and relays it to the gateways subscribed then. So that a
// gateway that joined later tells its clients too, the node states in its
// inventory the entries each device holds rejected now
// (wire.Device.stored_rejected), and the gateway publishes each once per
// node process (wire.Inventory.node_process), from whichever comes first:
// the inventory, or the node's live event (wire.Event.node_process).

// rejectionKey names one stored entry a node's device holds rejected: the
// node's own id of the device, the entry ("*" for a document moved aside
// whole) and the copy of the file the read kept. The copy is the same
// file at every read of the same bytes (store.keepCopy), so the node's
// process tells one read from another.
type rejectionKey struct {
	device, entry, keptAt string
}

// toldRejections are the rejected entries the gateway published of one
// node's latest processes, by process. A few are kept, not only the
// latest: an old process's event still on its way after its successor's
// inventory must not make the successor's entries news again.
type toldRejections struct {
	order []uint64 // the processes, oldest first
	keys  map[uint64]map[rejectionKey]bool
}

// toldProcesses bounds the processes of a node toldRejections keeps.
const toldProcesses = 4

// rejection is a stored-entry-rejected event of a node's device, decoded
// for the gateway to key and publish.
type rejection struct {
	e    event.Event
	data map[string]any
	key  rejectionKey
}

// decodeRejection decodes a node's stored-entry-rejected event of a
// device's device-global entries; false for any other event (a profile's
// entries, which the node publishes at a pick of its own sessions, are
// relayed as they come).
func decodeRejection(b []byte) (rejection, bool) {
	var r rejection
	if json.Unmarshal(b, &r.e) != nil || r.e.Name != event.NameStoredEntryRejected {
		return r, false
	}
	dec := json.NewDecoder(bytes.NewReader(r.e.Data))
	dec.UseNumber()
	if dec.Decode(&r.data) != nil {
		return r, false
	}
	device, _ := r.data["device_id"].(string)
	entry, _ := r.data["entry"].(string)
	keptAt, _ := r.data["kept_at"].(string)
	if device == "" || r.data["profile"] != nil {
		return r, false
	}
	r.key = rejectionKey{device, entry, keptAt}
	return r, true
}

// publishable is r as the gateway publishes it: the device named by its
// gateway id, and the node named; its data's fields in the event table's
// order, as the node's own encoding has them.
func (r rejection) publishable(gatewayID, nodeID string) event.Event {
	r.data["device_id"], r.data["node_id"] = gatewayID, nodeID
	if b, err := inTableOrder(r.e.Name, r.data); err == nil {
		r.e.Data = b
	}
	return r.e
}

// inTableOrder encodes an event's data with its fields in the order of
// the event table (event.Kind.Fields), then any the table does not list
// (an older or newer node's), as json.Marshal orders a map.
func inTableOrder(name string, data map[string]any) ([]byte, error) {
	k, _ := event.Lookup(name)
	rest := make(map[string]any, len(data))
	for f, v := range data {
		rest[f] = v
	}
	b := []byte{'{'}
	add := func(f string, v any) error {
		fb, err := json.Marshal(f)
		if err != nil {
			return err
		}
		vb, err := json.Marshal(v)
		if err != nil {
			return err
		}
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = append(append(append(b, fb...), ':'), vb...)
		return nil
	}
	for _, f := range k.Fields {
		if v, ok := rest[f]; ok {
			if err := add(f, v); err != nil {
				return nil, err
			}
			delete(rest, f)
		}
	}
	if len(rest) > 0 {
		tail, err := json.Marshal(rest)
		if err != nil {
			return nil, err
		}
		if len(tail) > 2 {
			if len(b) > 1 {
				b = append(b, ',')
			}
			b = append(b, tail[1:len(tail)-1]...)
		}
	}
	return append(b, '}'), nil
}

// rejectionNewsLocked reports whether the node's process has not had k
// published yet, and notes it as published. A new process of the node
// starts afresh (its reads are new). g.mu must be held.
func (g *Gateway) rejectionNewsLocked(nodeID string, process uint64, k rejectionKey) bool {
	t := g.told[nodeID]
	if t == nil {
		if g.told == nil {
			g.told = map[string]*toldRejections{}
		}
		t = &toldRejections{keys: map[uint64]map[rejectionKey]bool{}}
		g.told[nodeID] = t
	}
	keys := t.keys[process]
	if keys == nil {
		if len(t.order) == toldProcesses {
			delete(t.keys, t.order[0])
			t.order = t.order[1:]
		}
		keys = map[rejectionKey]bool{}
		t.keys[process] = keys
		t.order = append(t.order, process)
	}
	if keys[k] {
		return false
	}
	keys[k] = true
	return true
}

// forgetRejectionsLocked forgets what was published of the node's device
// (the node's id of it), which left the node's inventory: plugged in again,
// the node reads its document again, and that read is news. g.mu must be
// held.
func (g *Gateway) forgetRejectionsLocked(nodeID, device string) {
	if t := g.told[nodeID]; t != nil {
		for _, keys := range t.keys {
			for k := range keys {
				if k.device == device {
					delete(keys, k)
				}
			}
		}
	}
}

// inventoryRejectionsLocked are the events to publish of the entries the
// node's inventory m says its devices hold rejected: those of its process
// not published yet, of devices the gateway has a proxy of from this node.
// g.mu must be held; the caller publishes them once it is released.
func (g *Gateway) inventoryRejectionsLocked(m *wire.Inventory, listed map[string]bool) []event.Event {
	var out []event.Event
	for _, d := range m.Devices {
		if !listed[d.Uuid] {
			continue
		}
		p := g.proxies[d.Uuid]
		if p == nil || p.nodeID != m.NodeId || p.nodeDeviceID != d.Id {
			continue // not served from this node yet: its next inventory
		}
		// The same process's same statement as its last inventory's (every
		// one, 4 a second, until the entries are set again): read and
		// told then (review59b).
		if p.storedRejectedBy == m.NodeProcess && slices.EqualFunc(p.storedRejected, d.StoredRejected, bytes.Equal) {
			continue
		}
		p.storedRejected, p.storedRejectedBy = d.StoredRejected, m.NodeProcess
		for _, b := range d.StoredRejected {
			r, ok := decodeRejection(b)
			if !ok || r.key.device != d.Id {
				g.log.Warn().Str("node", m.NodeId).Str("uuid", d.Uuid).Msg("node's inventory states a rejected stored entry that does not decode as one; left out")
				continue
			}
			if g.rejectionNewsLocked(m.NodeId, m.NodeProcess, r.key) {
				out = append(out, r.publishable(p.info.ID, m.NodeId))
			}
		}
	}
	return out
}

// relayedRejection is what event publishes of a node's live
// stored-entry-rejected event r (m): nothing (false) when the node's
// process had it published already, from its inventory or an earlier
// event; or, when the gateway serves no proxy of the device yet, the
// inventory that lists it will state it. A node older than the field
// (node_process 0) has each published, as it comes.
func (g *Gateway) relayedRejection(m *wire.Event, r rejection) (event.Event, bool) {
	if m.NodeProcess == 0 {
		id := r.key.device
		if p := g.nodeProxy(m.NodeId, id); p != nil {
			id = p.info.ID
		}
		return r.publishable(id, m.NodeId), true
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	var p *proxy
	for _, q := range g.proxies {
		if q.nodeID == m.NodeId && q.nodeDeviceID == r.key.device {
			p = q
			break
		}
	}
	if p == nil || !g.rejectionNewsLocked(m.NodeId, m.NodeProcess, r.key) {
		return event.Event{}, false
	}
	return r.publishable(p.info.ID, m.NodeId), true
}
