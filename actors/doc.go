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
// A session has two parts, each with one owner, and one path per message.
//
// The session actor owns the session's control-plane state: profile,
// session-level basis, lease and subscription. It alone writes them, and
// publishes each change as an immutable snapshot (one atomic pointer) that
// everything else reads: the per-tick path, listings, GET /sessions.
//
// The per-tick path is Session.Deliver, run by the connection's reader,
// one message at a time. It decodes the message, writes its commands into
// the device registers, encodes the frame and writes it, reading the latest
// session snapshot and the devices' published views; it takes no lock and
// never touches the actor's state. A per-tick message costs no actor hop
// and no allocation. A configure or state command that would change
// nothing is answered from the published views, as the device actor would
// answer it (Device.unchangedBy).
//
// A message that changes the session or a device is handed to the actor,
// and Deliver waits for it: the actor applies the session part, asks the
// registry and the device actors, and their answers come back to it as
// messages (protoactor's ReenterAfter); no goroutine is started per request
// and Receive never waits. Once every answer is in, Deliver writes the
// frame with their errors. The client's later messages wait behind it, in
// the socket, so each message gets exactly one frame, in order. A Deliver
// that waits returns without a frame when the session is closed.
//
// A panic in either part ends the session the same way (Session.fail): its
// connection is closed with 1011, its devices are released (the loops ramp
// the force to zero) and session-ended reports internal_error.
//
// # Outcomes
//
// Every control-plane request (an entry's get, set or reset, a setting)
// carries a ticket. At Options.RequestTimeout the caller cancels it unless
// the actor has admitted it; before applying it the actor admits it unless
// it was cancelled. Whichever comes first wins: a cancelled request is
// answered unavailable at once (503 over HTTP, the same code in a frame)
// and never applied later; an admitted one is answered with its outcome
// once its durable write is done, or, when the disk has not taken that
// write (a device's config, a setting) within Options.WriteTimeout, called off at the store's commit
// point (store.SaveGated) and answered unavailable: never applied, on disk
// or in memory. The same ticket type is that commit point, one per
// document a request writes: a reset across several profiles past its
// WriteTimeout stays in force for the documents written and is called off
// for the rest (one past its commit point is waited for, so that memory
// never runs ahead of the disk), and a device that leaves calls its write off too.
// Errors map to codes once, through
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
// children). A session that panics, in its actor or on its reader, is not
// restarted with half its state: it ends through Session.fail (see
// Sessions).
//
// Every supervision decision also reaches the activity actor
// (activity.Activity.Supervision).
//
// # Ordering and backpressure
//
// A session answers its client's messages in order, each with exactly one
// frame through its FrameSink, on the reader's goroutine. It never blocks
// a device loop. While a message waits for the actor, the reader reads no
// further: TCP pushes back on the client.
//
// # Locks
//
// The sessions and the actors hold no lock: each piece of state has one
// owner, and what others read is published through atomics. The package's
// own mutexes (the ring of session ends) are leaves: none is held while
// another is taken, across a send to an actor, or across I/O. The
// sub-packages write their lock order in their own package docs
// (actors/store).
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
// only then admits them, once it is done; a read is answered from memory
// meanwhile when only writes are under way or held (they change nothing in
// force before they are answered). A POST is still answered only
// after its durable write.
package actors
