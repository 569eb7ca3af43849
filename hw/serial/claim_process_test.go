//go:build linux || darwin || freebsd || openbsd || windows

package serial_test

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/hapticd/hapticd/hw/hwtest"
	"github.com/hapticd/hapticd/hw/serial"
)

const (
	// claimHolderEnv names the port a claim holder process
	// (TestClaimHolderProcess) claims.
	claimHolderEnv = "HAPTICD_TEST_CLAIM_HOLDER_PORT"
	// holderAnswersWithin is generous: a Windows test binary under Wine
	// takes seconds to start.
	holderAnswersWithin = 60 * time.Second
)

// wantBusy fails t unless the port at path is refused to another opener.
func wantBusy(t *testing.T, path, when string) {
	t.Helper()
	if p, err := serial.Open(path); err == nil {
		p.Close()
		t.Errorf("%s: another Open of the port succeeded; want ErrBusy", when)
	} else if !errors.Is(err, serial.ErrBusy) {
		t.Errorf("%s: another Open: %v; want ErrBusy", when, err)
	}
	if c, err := serial.ClaimPort(path); err == nil {
		c.Release()
		t.Errorf("%s: another ClaimPort succeeded; want ErrBusy", when)
	} else if !errors.Is(err, serial.ErrBusy) {
		t.Errorf("%s: another ClaimPort: %v; want ErrBusy", when, err)
	}
}

// TestClaimKeepsAnotherProcessOff: on Windows a port was held only while
// it was open, so between a lost device's close and its reopen a second
// hapticd could take the arm (two safety loops on one arm). A claim held
// by one process now keeps every other process's Open and ClaimPort off
// until it is released, or its holder dies.
func TestClaimKeepsAnotherProcessOff(t *testing.T) {
	path := claimablePort(t)

	holder := startClaimHolder(t, path)
	holder.Expect(t, "claimed", holderAnswersWithin)
	wantBusy(t, path, "claimed by another process")
	holder.Send(t, "reopen")
	holder.Expect(t, "reopened", holderAnswersWithin)
	wantBusy(t, path, "claimed by another process, between its port's close and reopen")
	holder.Send(t, "release")
	holder.Expect(t, "released", holderAnswersWithin)
	c, err := serial.ClaimPort(path)
	if err != nil {
		t.Fatalf("claim after the other process released it: %v", err)
	}
	if err := c.Release(); err != nil {
		t.Fatal(err)
	}

	holder = startClaimHolder(t, path)
	holder.Expect(t, "claimed", holderAnswersWithin)
	wantBusy(t, path, "claimed by another process, again")
	holder.Kill(t)
	hwtest.EventuallyNil(t, 30*time.Second, "the port to be free once its holder died", func() error {
		c, err := serial.ClaimPort(path)
		if err != nil {
			return err
		}
		return c.Release()
	})
}

// TestClaimHolderProcess is the other process of
// TestClaimKeepsAnotherProcessOff: it claims the port named by
// claimHolderEnv and says "claimed"; told "reopen", it opens the port
// under the claim and closes it again, as a service reconnecting a lost
// device does, and says "reopened" (an open that fails, as it does on a
// Windows name with no port behind it, must leave the claim held all the
// same); told "release", it releases the claim and says "released"; it
// exits when its input closes.
func TestClaimHolderProcess(t *testing.T) {
	path := os.Getenv(claimHolderEnv)
	if path == "" {
		t.Skip("run by TestClaimKeepsAnotherProcessOff as its other process")
	}
	c, err := serial.ClaimPort(path)
	if err != nil {
		fmt.Printf("claim failed: %v\n", err)
		return
	}
	fmt.Println("claimed")
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		switch in.Text() {
		case "reopen":
			if p, err := c.Open(); err == nil {
				p.Close()
			}
			fmt.Println("reopened")
		case "release":
			if err := c.Release(); err != nil {
				fmt.Printf("release failed: %v\n", err)
				return
			}
			fmt.Println("released")
		}
	}
}

// startClaimHolder starts a TestClaimHolderProcess on path; it ends when t
// ends.
func startClaimHolder(t *testing.T, path string) *hwtest.TestProcess {
	t.Helper()
	return hwtest.StartTestProcess(t, "TestClaimHolderProcess", claimHolderEnv+"="+path)
}
