package schema

import (
	"reflect"

	"github.com/hapticd/hapticd/protocol"
)

// Options are what the schemas depend on besides protocol's fixed tables.
type Options struct {
	// Types is the type table the service runs with: it decides the
	// device-type keys frames write and messages accept. nil is the
	// default table.
	Types *protocol.TypeTable
}

// Collection is one device collection of a frame: a key and the type of
// the devices listed under it.
type Collection struct {
	Key  string
	Type protocol.DeviceType
}

// collections lists the keys frames write, in frame order.
func (o *Options) collections() []Collection {
	var out []Collection
	for _, dt := range o.Types.Types() {
		for _, k := range o.Types.Keys(dt) {
			out = append(out, Collection{Key: k, Type: dt})
		}
	}
	return out
}

// inputKeys lists every device-type key a message may use, with its type.
func (o *Options) inputKeys() []Collection { return o.collections() }

// eventTypeNames are the device_type values events carry.
func (o *Options) eventTypeNames() []string {
	var out []string
	for _, dt := range o.Types.Types() {
		out = append(out, dt.Key())
	}
	return out
}

// familyNames are the device_family values of device events.
func (o *Options) familyNames() []string { return []string{"inverse", "verse_grip"} }

// New builds every schema of the 3.x wire protocol (reference 9: the
// machine-readable schema covers 3.1 payloads and later) from protocol's
// tables: client messages, frames, events, configuration entries, settings,
// deprecated bodies, error envelopes and GET /stats. Transports add the
// documents they alone write (Set.Publish) before serving the set.
func New(o Options) *Set {
	s := &Set{}
	defineValues(s)
	defineErrors(s)
	defineEntries(s)
	defineSettings(s)
	defineDeprecatedBodies(s)
	defineEvents(s, &o)
	defineMessage(s, &o)
	defineFrames(s, &o)
	s.Publish("stats", "The data of GET /stats: each device loop's measurements and the process's resource use.",
		FromType(reflect.TypeFor[protocol.Stats]()))
	return s
}
