// Package driver holds the hw.Driver implementations of real serial devices:
// Arm (the lock-step arm protocol) and Grip (grip status frames through a
// wireless dongle), both over a serial.Port and the hw/wire codec.
//
// # Tick path
//
// Arm.Exchange is one lock-step round trip: encode the command into a fixed
// buffer, write it, read until the expected reply frame or the reply
// deadline (ArmOptions.ReplyTimeout, below the loop period); a reply
// already received when the deadline has passed is still taken, without
// waiting (the thread may have been preempted past it). It does not
// allocate and holds no lock. A missed reply is not an error at once: the
// state of the last good reply is reported again (StateAge says so) and
// MaxMisses consecutive misses are an error.
//
// # Late replies
//
// The wire has no sequence numbers, and a missed reply may still come. After
// a miss the driver resynchronises (resync.go): each Exchange first drains,
// without waiting, the input already received and drops the replies in it,
// drops a reply that began arriving before its write, and of two complete
// replies takes the newer. What holds: a late reply that arrives before the
// next command is written, or together with that command's reply, is never
// taken for a newer command's; one that arrives alone after the write is
// taken for that command's once, and the next Exchange drops the real reply
// as stale and is in step again. Stale counts the replies dropped.
// Resynchronising ends after MaxMisses clean exchanges in a row; outside it
// a tick makes no extra system call.
//
// # Sticky commands
//
// Firmware keeps applying the last command until it gets another, so the
// drivers send a zero force whenever they stop being in control: on Halt, on
// any Exchange error (best effort: the port may be gone), and on Close. A
// write that stalls (serial.ErrWriteStalled) drops the commands still
// queued in the port, so that zero force is the next command a device
// that takes data again reads, not the forces from before the stall.
// Close still drops what a stalled device has not read by then (Halt has
// waited HaltTimeout for its reply), the zero force too, rather than wait
// for the kernel's closing wait (30 s on a USB serial port); a device
// that takes data again after Close gets its zero force when it is
// opened again (the wake sequence's first state).
//
// # Concurrency
//
// A driver is used by one goroutine at a time (its real-time loop); Close may
// be called from another goroutine only when the loop has stopped.
package driver
