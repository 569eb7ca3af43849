// Package hw holds what every device driver shares: the Driver interface and
// the value types that cross it (Info, Command, State, Settings). It does no
// I/O and imports only the standard library.
//
// # Implementations
//
// Simulated devices live in hw/sim; serial and HID transports, the arm and
// grip drivers, discovery and the firmware emulator live in their own
// sub-packages. Each implementation asserts itself with
// var _ hw.Driver = (*Arm)(nil).
//
// # Concurrency
//
// A Driver belongs to one real-time loop and is called from one goroutine at
// a time. Calls on the tick path (Exchange) fill caller-owned structs and do
// not allocate.
package hw
