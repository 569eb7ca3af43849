package serial_test

import (
	"os"
	"testing"
	"time"

	"github.com/hapticd/hapticd/hw/serial"
)

// TestWindowsWriteToAPortNobodyReadsStalls: a Windows write to a device
// that takes no data waited for ever (go.bug.st/serial sets no write
// timeout), holding a driver's tick or the scan's probe. It now fails with
// ErrWriteStalled after WriteTimeout. Windows has no pseudo-terminal to
// make such a port here: HAPTICD_STALLED_COM names one whose other side
// nobody reads (.ci/platforms maps a Linux pseudo-terminal to a Wine COM
// port); without it the test skips.
func TestWindowsWriteToAPortNobodyReadsStalls(t *testing.T) {
	name := os.Getenv("HAPTICD_STALLED_COM")
	if name == "" {
		t.Skip("HAPTICD_STALLED_COM names no COM port whose other side nobody reads")
	}
	p, err := serial.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	// The driver sets a read timeout before each read: that must not take
	// the write timeout away.
	if err := p.SetReadTimeout(time.Millisecond); err != nil {
		t.Fatal(err)
	}
	writeUntilStalled(t, p, 1024, func() { p.Close() }) // a port holds far fewer than 4 MiB
	// The stall dropped the queued output: a zero force fits at once.
	if n, err := p.Write(make([]byte, 13)); err != nil || n != 13 {
		t.Errorf("a write after the stall: %d bytes, %v; want it queued at once", n, err)
	}
}
