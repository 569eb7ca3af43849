// Package actors is the control plane of hapticd: a registry actor that
// creates and supervises one device actor per device, one session actor per
// client connection, and the activity actor (actors/activity) that carries
// events. Transports reach devices only through a Service.
//
// # Control plane and data plane
//
// Configuration is rare and must be exact: a transport decodes and validates
// it with protocol, sends it to the device's actor, which applies it,
// persists it (actors/store) and answers. Control commands arrive every tick
// and must be fast: a session writes them straight into the device's command
// register (actors/loop.Register), with no actor hop, and reads the loop's
// latest snapshot to encode its frame.
//
// # Views
//
// Each device actor publishes, per session, an immutable View: the config
// that session sees and the compiled coordinate transform and filters. A
// session reads it with one atomic load per device per frame; a change
// publishes a new View, visible in the next frame.
//
// # Supervision
//
// A device actor that panics is restarted by the registry with its config
// intact: the config lives in a core that the props producer hands to every
// instance. A session actor that panics is stopped and its connection
// closed; its devices are released at once.
//
// # Ordering and backpressure
//
// A session actor handles its client's messages in order and answers each
// with exactly one frame through its FrameSink. It never blocks a device
// loop; the transport bounds the messages in flight per connection.
//
// # Session ends
//
// Every session ends with one protocol.CloseReason, the first one recorded
// (by Session.Close, or internal_error by the session's supervisor): the
// session-ended event carries it, and ClosedSessions keeps the last
// ClosedRingSize ends for GET /sessions/closed.
//
// # Stored profiles
//
// A profile's config is stored under a folder named by a hash of its name,
// so any valid name fits a file name; at most Options.MaxStoredProfiles are
// kept, the least recently used removed first (profiles.go).
package actors
