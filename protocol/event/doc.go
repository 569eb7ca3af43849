// Package event is the wire shape of hapticd's activity events: one table of
// every event name with its category, level and data fields, typed
// constructors that fill an [Event] from that table, and an allocation-free
// JSON encoder ([AppendJSON]).
//
// # Shape
//
// Every event is {seq, time, name, category, level, data, message}
// (docs/events.md). The constructors fill name, category, level, data
// and message; seq and time are assigned by the activity actor when the event
// is published, so seq grows by exactly one per published event (from a
// first seq per run that no earlier run reached) and time is
// the moment of publication (UTC, RFC 3339 with milliseconds).
//
// # The table
//
// [Kinds] lists every event name once. The constructors, docs/events.md and the
// tests all read or check against it, so a new event is one row and one
// constructor. `events-dropped` and `service-restarted` are special: they
// are written only on a subscriber's own stream, never into the shared ring,
// and carry no seq of their own (the activity package documents which seq
// they repeat).
//
// # Concurrency
//
// An [Event] is a value. Its Data is shared by every copy and must be
// treated as read-only once the event is built.
package event
