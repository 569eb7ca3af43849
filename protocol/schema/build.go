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

// collections lists the collections frames write, in frame order: the
// naming table's output names (--type-names).
func (o *Options) collections() []protocol.Collection { return o.Types.Collections() }

// inputKeys lists every device-type name a message may use (every known
// name and alias, whatever the output names), with its type.
func (o *Options) inputKeys() []protocol.Collection {
	var out []protocol.Collection
	for _, dt := range o.Types.Types() {
		for _, k := range o.Types.Keys(dt) {
			if c, ok := o.Types.ResolveName(k); ok {
				out = append(out, c)
			}
		}
	}
	return out
}

// inputNames are the device-type names a message may use (every known
// name and alias), as the decoder resolves them: exactly.
func (o *Options) inputNames() []string {
	var out []string
	for _, dt := range o.Types.Types() {
		for _, k := range o.Types.Keys(dt) {
			if _, ok := o.Types.ResolveName(k); ok {
				out = append(out, k)
			}
		}
	}
	return out
}

// eventTypeNames are the device_type values events and answers carry: the
// output names.
func (o *Options) eventTypeNames() []string {
	var out []string
	for _, c := range o.collections() {
		out = append(out, c.Key)
	}
	return out
}

// familyNames are the device_family values of device events.
func (o *Options) familyNames() []string {
	var out []string
	for _, dt := range o.Types.Types() {
		out = append(out, dt.Family())
	}
	return out
}

// New builds every schema of the 3.x wire protocol (reference 9: the
// machine-readable schema covers 3.1 payloads and later) from protocol's
// tables: client messages, frames, events, configuration entries, settings,
// deprecated bodies, error envelopes and GET /stats. Transports add the
// documents they alone write (Set.Publish) before serving the set.
func New(o Options) *Set {
	s := &Set{}
	defineValues(s)
	defineErrors(s)
	defineEffects(s)
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
