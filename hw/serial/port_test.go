package serial_test

import (
	"errors"
	"testing"
	"time"

	"github.com/hapticd/hapticd/hw/emulator"
	"github.com/hapticd/hapticd/hw/hwtest"
	"github.com/hapticd/hapticd/hw/serial"
)

// TestWriteToADeviceThatTakesNothingEnds: a device that stops taking data
// (hung firmware that still holds its USB link; here a pseudo-terminal
// whose other side nobody reads) fills the port's output buffer, and a
// write then waited for ever: a driver's tick, or a scan probing the port,
// hung with it. A write now fails with ErrWriteStalled once it has waited
// WriteTimeout for room, having written what fitted.
func TestWriteToADeviceThatTakesNothingEnds(t *testing.T) {
	pty, err := emulator.OpenPTY()
	if err != nil {
		hwtest.SkipIfUnsupported(t, err)
		t.Fatal(err)
	}
	defer pty.Close()
	p, err := serial.Open(pty.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()

	chunk := make([]byte, 4096)
	result := make(chan error, 1)
	var last time.Duration
	go func() {
		// A pseudo-terminal holds some KiB; far fewer than 1 MiB.
		for range 256 {
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
		pty.Close() // ends the blocked write (the port hangs up)
		<-result
		t.Fatal("a write to a port nobody reads blocked for 30 s")
	}
}
