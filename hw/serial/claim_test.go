//go:build linux || darwin || freebsd || openbsd

package serial_test

import (
	"errors"
	"testing"
	"time"

	"github.com/hapticd/hapticd/hw/emulator"
	"github.com/hapticd/hapticd/hw/hwtest"
	"github.com/hapticd/hapticd/hw/serial"
)

// claimablePort is a fresh pseudo-terminal's port, closed when t ends.
func claimablePort(t *testing.T) string { return newPTY(t).Path }

// claimOnPTY claims a fresh pseudo-terminal's port; the claim is released
// when t ends.
func claimOnPTY(t *testing.T) (*emulator.PTY, *serial.Claim) {
	t.Helper()
	pty := newPTY(t)
	c, err := serial.ClaimPort(pty.Path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Release() })
	return pty, c
}

// TestClaimHoldsThePortBetweenOpens: a port's lock lived only while the
// port was open, so a service that closed a failing device's port to reopen
// it lost the device to the next opener in between. A Claim holds the port
// across closes and reopens, and after Release until its last port closes.
func TestClaimHoldsThePortBetweenOpens(t *testing.T) {
	pty, c := claimOnPTY(t)
	wantBusy(t, pty.Path, "claimed, never opened")

	p, err := c.Open()
	if err != nil {
		t.Fatal(err)
	}
	wantBusy(t, pty.Path, "open under the claim")
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	wantBusy(t, pty.Path, "closed, still claimed")

	p, err = c.Open()
	if err != nil {
		t.Fatalf("reopen under the claim: %v", err)
	}
	if err := c.Release(); err != nil {
		t.Fatal(err)
	}
	wantBusy(t, pty.Path, "released with a port still open")
	if _, err := c.Open(); !errors.Is(err, serial.ErrReleased) {
		t.Errorf("Open after Release: %v; want ErrReleased", err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	again, err := serial.Open(pty.Path)
	if err != nil {
		t.Fatalf("open once the claim is released and its port closed: %v", err)
	}
	again.Close()
}

// TestClaimSeesItsDeviceGo: a claim kept on a port whose device was
// unplugged holds a dead node (and on Linux keeps the tty's number from
// the device plugged back in): its holder must be able to tell.
func TestClaimSeesItsDeviceGo(t *testing.T) {
	pty, c := claimOnPTY(t)
	if c.Gone() {
		t.Fatal("Gone on a port whose device is there")
	}
	pty.Close() // unplugged: the port hangs up
	hwtest.Eventually(t, 10*time.Second, "the claim to see its device gone", c.Gone)
}
