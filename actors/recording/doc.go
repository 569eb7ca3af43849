// Package recording records what the service sees to MCAP files and plays
// them back: the taps on the device loops, sessions, config changes and
// events; the writer that owns each file; the recorded schema; replay as
// virtual devices; the re-driving of recorded sessions against a running
// service; and export to JSON lines and CSV.
//
// transport serves the routes (POST, GET /recordings, DELETE
// /recordings/{id}) and calls the session and config taps; cmd/hapticd
// holds the flags of --record, replay and export. Nothing else knows how a
// recording is laid out.
//
// # Channels
//
// Each channel's "kind" metadata names its schema (KindState, KindClient,
// KindFrame, KindConfig, KindEvent, KindStats) and its "key" the device or
// session; a state channel's "order" is its device's place in the
// service's device order when the recorder attached to it (what a replay
// serves the devices in). Every message is one JSON document; State and Message are their
// Go forms for readers.
//
// # Concurrency and backpressure
//
// A tap never blocks its caller. The device loops hand each tick's snapshot
// to a loop.Tap, a bounded ring per recorded device that drops and counts
// when full; one pump goroutine per recording drains the rings every 5 ms.
// Session, config and event taps copy onto the recording's bounded queue,
// which also drops and counts. One writer goroutine per recording owns the
// file: it is the only one to touch the mcap.Writer, writes a chunk at
// least every 250 ms (a killed service loses at most that), and records
// the drop counts with each chunk. With no recording running a tap costs
// one atomic load.
//
// # Ordering
//
// Messages of one channel are written in the order their tap saw them, with
// increasing sequence numbers; across channels, readers sort by log time
// (MessagesOf does). Stop returns once every message queued before it is in
// the file and the file is closed with its summary.
//
// # Locks
//
// Two mutexes, taken in this order and no other: Recorder.mu (the list of
// recordings and the next id), then a recording's errMu (its first error).
// List holds the first while it reads each recording's Info, which takes
// the second; errMu is a leaf, nothing is taken under it, and the writer
// and pump goroutines take it alone. A writer whose file refused a write
// takes Recorder.mu, holding nothing else, to take its recording off the
// taps, and every writer takes it so, last, to list its recording stopped. The taps take neither: they load the
// active recordings atomically.
package recording
