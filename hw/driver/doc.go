// Package driver holds the hw.Driver implementations of real serial devices:
// Arm (the lock-step arm protocol) and Grip (grip status frames through a
// wireless dongle), both over a serial.Port and the hw/wire codec.
//
// # Tick path
//
// Arm.Exchange is one lock-step round trip: encode the command into a fixed
// buffer, write it, read until the expected reply frame or the reply
// deadline (ArmOptions.ReplyTimeout, below the loop period). It does not
// allocate and holds no lock. A missed reply is not an error at once: the
// state of the last good reply is reported again and the next Exchange
// flushes the input first, so a late reply cannot be taken for a newer one.
// MaxMisses consecutive misses are an error.
//
// # Sticky commands
//
// Firmware keeps applying the last command until it gets another, so the
// drivers send a zero force whenever they stop being in control: on Halt, on
// any Exchange error (best effort: the port may be gone), and on Close.
//
// # Concurrency
//
// A driver is used by one goroutine at a time (its real-time loop); Close may
// be called from another goroutine only when the loop has stopped.
package driver
