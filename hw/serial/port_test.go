package serial_test

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/hw/emulator"
	"github.com/hapticd/hapticd/hw/hwtest"
	"github.com/hapticd/hapticd/hw/serial"
	"github.com/hapticd/hapticd/hw/wire"
)

// TestWriteToADeviceThatTakesNothingEnds: a device that stops taking data
// (hung firmware that still holds its USB link; here a pseudo-terminal
// whose other side nobody reads) fills the port's output buffer, and a
// write then waited for ever: a driver's tick, or a scan probing the port,
// hung with it. A write now fails with ErrWriteStalled once it has waited
// WriteTimeout for room, having written what fitted.
func TestWriteToADeviceThatTakesNothingEnds(t *testing.T) {
	pty, p := openOnPTY(t)

	// A pseudo-terminal holds some KiB; far fewer than 1 MiB.
	writeUntilStalled(t, p, 256, func() { pty.Close() }) // closing the pty ends a blocked write (the port hangs up)
}

// writeUntilStalled writes chunks of 4 KiB to p, whose device takes
// nothing, and fails t unless a write fails with ErrWriteStalled after
// about WriteTimeout, having written what fitted, within maxChunks. A
// write still blocked after 30 s fails t after unblock.
func writeUntilStalled(t *testing.T, p serial.Port, maxChunks int, unblock func()) {
	t.Helper()
	chunk := make([]byte, 4096)
	result := make(chan error, 1)
	var last time.Duration
	go func() {
		for range maxChunks {
			start := time.Now()
			n, err := p.Write(chunk)
			last = time.Since(start)
			if err != nil {
				if n < 0 || n > len(chunk) {
					err = errors.Join(err, errors.New("write count out of range"))
				}
				result <- err
				return
			}
			if n != len(chunk) {
				result <- errors.New("short write without an error")
				return
			}
		}
		result <- nil
	}()
	select {
	case err := <-result:
		if !errors.Is(err, serial.ErrWriteStalled) {
			t.Fatalf("writing to a port nobody reads: %v; want an error wrapping ErrWriteStalled", err)
		}
		if last < serial.WriteTimeout/2 || last > 20*serial.WriteTimeout {
			t.Errorf("the stalled write took %v, want about WriteTimeout (%v)", last, serial.WriteTimeout)
		}
	case <-time.After(30 * time.Second):
		unblock()
		select { // the writer ends if unblock reached it
		case <-result:
		case <-time.After(10 * time.Second):
		}
		t.Fatal("a write to a port nobody reads blocked for 30 s")
	}
}

// ptyLineBuffer is what a pseudo-terminal's master keeps in its own line
// discipline (Linux's N_TTY_BUF_SIZE, less one): bytes there have left the
// slave's output, so no flush of the slave's output can take them back. A
// real port has no such buffer on the device's side of the flush.
const ptyLineBuffer = 4096

// TestStalledWriteDropsQueuedOutput: after a write stalled, the force
// frames already queued in the port's output buffer stayed there, so a
// device that took data again (its USB stack recovered) received forces
// commanded before the stall, and the driver's zero force after the
// failure could not even be queued behind them. A stall now flushes the
// queued output: the next write, a zero force, goes in at once, and of the
// frames queued before the stall the device reads only what a
// pseudo-terminal's master had already taken into its own line buffer.
func TestStalledWriteDropsQueuedOutput(t *testing.T) {
	pty, p := openOnPTY(t)

	force := wire.AppendForce(nil, hw.Vec3{Z: 5})
	queued := 0
	for {
		n, err := p.Write(force)
		queued += n
		if errors.Is(err, serial.ErrWriteStalled) {
			break
		}
		if err != nil {
			t.Fatalf("writing forces to a port nobody reads: %v", err)
		}
		if queued > 1<<20 {
			t.Fatal("1 MiB went into a port nobody reads without a stall")
		}
	}
	if queued < 2*ptyLineBuffer {
		t.Fatalf("only %d bytes queued before the stall; the test needs more than the master's line buffer to tell a flush", queued)
	}
	zero := wire.AppendForce(nil, hw.Vec3{})
	if n, err := p.Write(zero); err != nil || n != len(zero) {
		t.Fatalf("zero force after the stall: wrote %d of %d bytes: %v; want it queued at once", n, len(zero), err)
	}

	// The device takes data again: read up to the zero force.
	var got []byte
	buf := make([]byte, 64<<10)
	if err := pty.Master.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	for !bytes.HasSuffix(got, zero) {
		n, err := pty.Master.Read(buf)
		got = append(got, buf[:n]...)
		if err != nil {
			t.Fatalf("reading the device side after %d bytes: %v; the zero force never arrived", len(got), err)
		}
	}
	if stale := len(got) - len(zero); stale >= ptyLineBuffer {
		t.Errorf("the device read %d of the %d bytes of forces queued before the stall; want at most what its line buffer held (%d)", stale, queued, ptyLineBuffer-1)
	}
}

// newPTY opens a fresh pseudo-terminal, closed when t ends; t is skipped
// where there are none.
func newPTY(t *testing.T) *emulator.PTY {
	t.Helper()
	pty, err := emulator.OpenPTY()
	if err != nil {
		hwtest.SkipIfUnsupported(t, err)
		t.Fatal(err)
	}
	t.Cleanup(func() { pty.Close() })
	return pty
}

// openOnPTY opens a port with serial.Open on a fresh pseudo-terminal, the
// device's side (pty) left to the test; both close when t ends.
func openOnPTY(t *testing.T) (*emulator.PTY, serial.Port) {
	t.Helper()
	pty := newPTY(t)
	p, err := serial.Open(pty.Path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return pty, p
}

// TestSecondOpenOfAPortIsRefused: a second hapticd (or any second Open) on
// a port already open must fail with ErrBusy and leave the first holder
// alone. go.bug.st/serial only sets TIOCEXCL, which root ignores: a
// second hapticd run with sudo opened the arm's port, the two services'
// force commands interleaved and each read the other's replies, and the
// second one's Close cleared the first one's exclusive mode. Open now takes
// an exclusive lock on the port first, which binds root as well.
func TestSecondOpenOfAPortIsRefused(t *testing.T) {
	pty, first := openOnPTY(t)

	for attempt := range 2 { // the refused open must not unlock the port for the next one
		second, err := serial.Open(pty.Path)
		if err == nil {
			second.Close()
			t.Fatalf("open %d of a port already open succeeded; want an error wrapping ErrBusy", attempt+2)
		}
		if !errors.Is(err, serial.ErrBusy) {
			t.Fatalf("open %d of a port already open: %v; want an error wrapping ErrBusy", attempt+2, err)
		}
	}

	// The first holder still gets every byte the device sends.
	want := []byte("reply from the arm")
	if _, err := pty.Master.Write(want); err != nil {
		t.Fatal(err)
	}
	if err := first.SetReadTimeout(100 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	var got []byte
	deadline := time.Now().Add(10 * time.Second)
	for len(got) < len(want) && time.Now().Before(deadline) {
		buf := make([]byte, 64)
		n, err := first.Read(buf)
		if err != nil {
			t.Fatalf("the first holder's read after the refused opens: %v", err)
		}
		got = append(got, buf[:n]...)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("the first holder read %q; want %q", got, want)
	}

	// Once the first holder closes the port, it opens again.
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	again, err := serial.Open(pty.Path)
	if err != nil {
		t.Fatalf("open after the holder closed the port: %v", err)
	}
	again.Close()
}
