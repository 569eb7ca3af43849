// Package serial is the serial transport of real devices: a small Port
// interface, Open over go.bug.st/serial (115200 8N1; the rate is ignored by
// USB CDC-ACM but must be valid), an enumerator of USB serial ports, and a
// recording tap with its replayer for tests.
//
// # Record and replay
//
// Tap wraps a Port and notes every read and write (time since start,
// direction, bytes), reads that timed out with nothing included. Replay
// serves the recorded device bytes back and checks every byte the host
// writes against the recording; a recorded read that timed out waits the
// read timeout again, so a reply that missed its deadline misses it in the
// replay too. Its Close fails when recorded I/O is left over, so a test
// proves the driver did all of it.
// Recordings are stored as JSON lines (see WriteRecording) so that captures
// from real devices can be committed as test data.
//
// # Concurrency
//
// A Port is used by one goroutine at a time, except that Close may be called
// from another goroutine to end a blocked Read. Record and Replay follow the
// same rule. The tap allocates per call: it is a debugging and capture tool,
// never on a production tick path.
package serial
