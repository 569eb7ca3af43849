package schema

import (
	"github.com/hapticd/hapticd/protocol/event"
)

// EventName is the name of the schema of the event called name
// ("event.device-busy"); "event" is any event.
func EventName(name string) string { return "event." + name }

// eventField is the JSON type of each data field the event table names. The
// table (protocol/event) owns which events carry which fields; this map
// owns only their types. A field missing here is reported by
// TestEveryEventFieldHasAType.
func eventField(name string, o *Options) (Schema, bool) {
	switch name {
	case "route", "replacement", "remote", "command", "reason", "received_data", "code", "name", "path", "entry", "kept_at":
		return str(), true
	case "effect_id":
		return Schema{"type": "string", "maxLength": 64}, true
	case "duration_ms", "added_damping":
		return Schema{"type": "number", "minimum": 0}, true
	case "device_id", "node_id":
		return Schema{"type": "string", "minLength": 1}, true
	case "api_version":
		return enum([]string{"3.0", "3.x"}), true
	case "session_id", "owner_session_id", "missed", "suppressed", "recording_id", "since", "effects_dropped":
		return Schema{"type": "integer", "minimum": 0}, true
	case "profile":
		return orNull(Schema{"type": "string", "minLength": 1}), true
	case "device_type":
		return enum(o.eventTypeNames()), true
	case "device_family":
		return enum(o.familyNames()), true
	case "period_us_p99", "target_us":
		return number(), true
	case "close_code":
		return Schema{"type": "integer", "minimum": 1000, "maximum": 4999}, true
	}
	return nil, false
}

// defineEvents defines every event of the event table (PROTOCOL 6): each
// name with its category, level and data fields, and "event", any of them.
func defineEvents(s *Set, o *Options) {
	var names []Schema
	var all []string
	for _, k := range event.Kinds() {
		data := Schema{}
		for _, f := range k.Fields {
			fs, ok := eventField(f, o)
			if !ok {
				fs = Schema{}
			}
			if f != "profile" && event.Nullable(k.Name, f) {
				fs = orNull(fs)
			}
			data[f] = fs
		}
		s.Define(EventName(k.Name), Schema{
			"description": k.About,
			"type":        "object",
			"properties": Schema{
				// Under 2^53, so a JavaScript client reads it exactly.
				"seq":      Schema{"type": "integer", "minimum": 0, "maximum": 1<<53 - 1},
				"time":     Schema{"type": "string", "format": "date-time"},
				"name":     constant(k.Name),
				"category": constant(k.Category),
				"level":    constant(k.Level),
				"data":     allRequired(data),
				"message":  Schema{"type": "string", "minLength": 1},
			},
			"required":             []string{"seq", "time", "name", "category", "level", "data", "message"},
			"additionalProperties": false,
		})
		names = append(names, Ref(EventName(k.Name)))
		all = append(all, k.Name)
	}
	s.Publish("event", "One activity event, as the events socket sends it and GET /events lists it: one of "+joinNames(all)+".",
		Schema{"oneOf": names})
	s.Publish("events-page", "The data of GET /events: events after since, oldest first, next_seq, missed: how many events after since the ring no longer holds (0 when since is 0 or still held), and restarted: whether since was handed out by an earlier run of hapticd (the events then start at this run's first).",
		allRequired(Schema{"events": arrayOf(Ref("event")), "next_seq": Schema{"type": "integer", "minimum": 0}, "missed": Schema{"type": "integer", "minimum": 0}, "restarted": Schema{"type": "boolean"}}))
}

func joinNames(names []string) string {
	out := ""
	for i, n := range names {
		if i > 0 {
			out += ", "
		}
		out += n
	}
	return out
}
