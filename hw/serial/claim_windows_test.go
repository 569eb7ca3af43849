package serial_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/hapticd/hapticd/hw/serial"
)

// claimablePort names a port to claim. A Windows claim does not open its
// port, so the port need not exist; the name is this process's own, so
// test runs side by side do not meet.
func claimablePort(*testing.T) string { return fmt.Sprintf("COM%d", 1000+os.Getpid()) }

// TestWindowsClaimIgnoresTheNamesCase: Windows opens com3 as COM3, so a
// claim on one must keep the other off.
func TestWindowsClaimIgnoresTheNamesCase(t *testing.T) {
	upper := claimablePort(t)
	c, err := serial.ClaimPort(upper)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	wantBusy(t, strings.ToLower(upper), "claimed in upper case")
}
