//go:build linux || darwin || freebsd || openbsd || windows

package serial_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/hapticd/hapticd/hw/hwtest"
	"github.com/hapticd/hapticd/hw/serial"
)

// claimHolderEnv names the port a claim holder process
// (TestClaimHolderProcess) claims.
const claimHolderEnv = "HAPTICD_TEST_CLAIM_HOLDER_PORT"

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
	holder.expect(t, "claimed")
	wantBusy(t, path, "claimed by another process")
	holder.send(t, "reopen")
	holder.expect(t, "reopened")
	wantBusy(t, path, "claimed by another process, between its port's close and reopen")
	holder.send(t, "release")
	holder.expect(t, "released")
	c, err := serial.ClaimPort(path)
	if err != nil {
		t.Fatalf("claim after the other process released it: %v", err)
	}
	if err := c.Release(); err != nil {
		t.Fatal(err)
	}

	holder = startClaimHolder(t, path)
	holder.expect(t, "claimed")
	wantBusy(t, path, "claimed by another process, again")
	holder.kill(t)
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

// claimHolder is a running TestClaimHolderProcess.
type claimHolder struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string // its output, closed when it ends
}

// startClaimHolder starts a process that claims path; it is ended when t
// ends.
func startClaimHolder(t *testing.T, path string) *claimHolder {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestClaimHolderProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), claimHolderEnv+"="+path)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h := &claimHolder{cmd: cmd, stdin: stdin, lines: make(chan string, 16)}
	go func() {
		defer close(h.lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			h.lines <- strings.TrimSpace(sc.Text())
		}
	}()
	t.Cleanup(func() {
		_ = stdin.Close() // the holder exits
		for range h.lines {
		}
		_ = cmd.Wait()
	})
	return h
}

// expect fails t unless the holder's next line is want. A Windows test
// binary under Wine takes seconds to start.
func (h *claimHolder) expect(t *testing.T, want string) {
	t.Helper()
	select {
	case line, ok := <-h.lines:
		if !ok {
			t.Fatalf("the claim holder process ended before saying %q", want)
		}
		if line != want {
			t.Fatalf("the claim holder process said %q; want %q", line, want)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("the claim holder process did not say %q within 60 s", want)
	}
}

func (h *claimHolder) send(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(h.stdin, line+"\n"); err != nil {
		t.Fatal(err)
	}
}

// kill ends the holder without a release, as a crash would, and waits for
// it to be gone.
func (h *claimHolder) kill(t *testing.T) {
	t.Helper()
	if err := h.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	for range h.lines {
	}
	_ = h.cmd.Wait()
}
