// Package emulator is firmware in software: it speaks the device side of the
// arm and grip protocols of spec/HARDWARE.md over any io.ReadWriter, so the
// real drivers can be tested end to end without hardware, and the service
// can offer emulated devices (--emulate-arms N) to try the real-device path.
//
// # Physics
//
// An emulated arm applies each command it receives to a physics model (by
// default a hw/sim arm, stepped once per command), so emulated physics is
// simulated physics: a constant upward force raises z over ticks. The
// emulated firmware compensates gravity itself (as real firmware does, per
// the gravity settings it is sent). An emulated grip streams the state of a
// hw/sim grip, stepped once per status frame.
//
// # Faults
//
// Faults are knobs a test turns at any time (SetFaults, Stall, Unplug):
// reply latency and jitter, dropped reply bytes, garbage bytes before
// replies, stalled replies, a hung firmware that answers its backlog once it
// recovers, flaky first wake-ups (id 0, or a first state at
// exactly zero), a grip asleep (no status while the dongle stays plugged
// in), and unplug (the port closes under the driver).
//
// # Pseudo-terminals
//
// StartPTY opens a pseudo-terminal pair (/dev/ptmx), sets it raw, serves the
// master side and returns the slave path: to a driver, that path is a serial
// port like /dev/ttyACM0. Closing the master is what an unplug looks like.
//
// # Concurrency
//
// An Emulator serves one connection from one goroutine (plus one status
// streamer for grips); its methods are safe to call from other goroutines.
//
// # Locks
//
// Emulator.wmu, then Emulator.mu; today neither is taken while the other is
// held. wmu is held across a write, so that replies and grip status frames
// never interleave; mu never is, so Stats and SetFaults answer while a
// write blocks on a full port.
package emulator
