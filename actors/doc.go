// Package actors is the control plane of hapticd: a registry actor that
// creates and supervises one device actor per device and lists one session
// actor per client connection, and the activity actor (actors/activity)
// that carries events. Transports reach devices only through a Service.
//
// # One owner
//
// The registry actor alone changes the device and session sets. Each
// change publishes a new immutable snapshot (Service.Devices,
// Service.Sessions) that readers load with one atomic load, without locks.
// Sessions open and close through it, and only it tells device actors that
// a session exists or changed its profile or basis: it queues the
// attachment in the device's mailbox before it lists the device or the
// session, so no reader finds one without the other, and a device added
// while a session opens is attached to it once.
//
// # Control plane and data plane
//
// Configuration is rare and must be exact: a transport decodes and validates
// it with protocol, sends it to the device's actor, which applies it,
// persists it (actors/store) and answers. Control commands arrive every tick
// and must be fast: a session writes them straight into the device's command
// register (actors/loop.Register), with no actor hop and no lock, and reads
// the loop's latest snapshot to encode its frame.
//
// # Sessions
//
// A session actor owns its session's state: profile, session-level basis,
// lease and the client messages in hand. It never waits inside Receive: a
// message that configures devices or changes the profile or basis asks the
// registry and the device actors, and their answers come back as messages.
// Until the last answer is in, the client's later messages queue behind it,
// so each message still gets exactly one frame, in order (the per-tick
// message with nothing to ask is handled at once). A configure that would
// change nothing is not sent at all (Device.unchangedBy).
//
// A client's message that finds its session idle (nothing in hand, queued
// or in the mailbox) is handled at once on the goroutine that delivers it,
// for a lock-step client the connection's reader, under the actor's lock
// (Session.Deliver): no goroutine hop, no mailbox post and no allocation
// per tick. Other messages go through the mailbox, behind what is there.
// Session actors run on protoactor's synchronized dispatcher, so those too
// are handled on the delivering goroutine when the mailbox is idle. Answers
// are delivered by a goroutine that waited on the request's future, so a
// frame completed by an answer is written there, never on a device actor's
// goroutine. A panic on either path goes to the session's supervisor.
//
// # Outcomes
//
// Every control-plane request (an entry's get, set or reset, a setting)
// carries a ticket. At Options.RequestTimeout the caller cancels it unless
// the actor has admitted it; before applying it the actor admits it unless
// it was cancelled. Whichever comes first wins: a cancelled request is
// answered unavailable at once (503 over HTTP, the same code in a frame)
// and never applied later; an admitted one is answered with its outcome,
// however long its durable write takes. Errors map to codes once, through
// protocol.AsError, for HTTP and WebSocket.
//
// # Supervision
//
// A device actor that panics is restarted by the registry with its config
// intact (the config lives in a core that the props producer hands to every
// instance) and its real-time loop untouched; the request it was handling
// is answered at once as not applied. Past Options.DeviceRestarts restarts
// within a minute it is stopped, and the registry gives the device up: its
// output is halted, it leaves every inventory, its driver is closed,
// device-failed is emitted, and OnDeviceLost lets discovery find it again
// (a fresh device actor then serves it). A driver that keeps failing, or
// panics in the loop, ends the same way.
//
// A session actor is spawned at the root, so its supervisor is a guardian
// (protoactor's WithGuardian; WithSupervisor would only supervise its
// children). A session that panics is stopped, not restarted with half its
// state: its connection is closed with 1011, its devices are released (the
// loops ramp the force to zero) and session-ended reports internal_error.
//
// Every supervision decision also reaches the activity actor
// (activity.Activity.Supervision).
//
// # Ordering and backpressure
//
// A session actor handles its client's messages in order and answers each
// with exactly one frame through its FrameSink. It never blocks a device
// loop; the transport bounds the messages in flight per connection, which
// also bounds the messages a session queues while it waits for answers.
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
//
// # Blocking work
//
// No actor waits inside Receive (TestNoReceiveBlocks checks it). Work that
// blocks, a durable write, a stored config read, a device's loop stopped and
// its driver closed, runs on a goroutine of its operation (Service.offload,
// which Shutdown waits for) and sends its outcome back to the actor as a
// message. The actor keeps the order meanwhile: the registry lists an added
// device only once its config is read, re-adds a device only after it left,
// and writes setting changes one at a time; a device actor holds the config
// requests that arrive while one waits for the disk and takes them up, and
// only then admits them, once it is done. A POST is still answered only
// after its durable write.
package actors
