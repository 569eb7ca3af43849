// Package discovery finds real devices: every scan period it lists the
// serial ports, opens the ones whose USB id AND product string match a known
// device (never a byte to any other port), plus the ports named explicitly
// (--hw-port), plus RawHID boards (hw/hid; reported as "hid:<path>", left
// out quietly in builds without HID), and hands each new driver to a
// Handler. It reports every port
// it saw as loaded, skipped or failed, with the reason and a fix hint, and
// backs off ports that keep failing (exponential, capped). A port whose
// node goes and comes back, or is replaced between two scans (a replug),
// starts afresh: it is tried at the next scan.
//
// # Hot-plug
//
// A loaded port is not scanned again until the service calls Lost (its
// device's loop failed: unplugged, stalled). Lost closes the driver and
// lets the scans after the close reopen the port with backoff, at once when the
// device was replugged (its node changed). A device that comes
// back reports the same Info().UUID, which the service maps to its device
// id.
//
// # Holding ports
//
// A serial port is held (serial.Claim) from the first time a device loads
// on it: between a Lost and the reopen no other hapticd opens it and takes
// the device. The hold ends when the device goes (its node goes or is
// replaced, or the port hangs up: a replugged device is a new node, claimed
// afresh) or at Release, when the service stops. A port that never loaded
// is held only while it is being opened. While the Handler refuses devices
// (Handler.Refuses: serial devices disabled) no port is opened or held.
//
// # Concurrency
//
// Run scans from its own goroutine and calls the Handler from it, one call
// at a time. Scan, Lost and Report may be called from any goroutine; scans
// never overlap.
//
// # Locks
//
// Watcher.scanMu, then Watcher.mu. scanMu serialises scans, so a port is
// never opened twice: it is held across a whole scan, port I/O and Handler
// calls included, so a Handler must not call Scan. mu is a leaf, never
// held across I/O or a Handler call, so Report and Lost answer during a
// scan.
package discovery
