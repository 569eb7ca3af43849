//go:build unix

package main

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/hw/emulator"
	"github.com/hapticd/hapticd/hw/hwtest"
)

// Every signal that ends hapticd stops it cleanly: the arm's firmware,
// which holds a force until it is replaced, is sent the zero, and a
// profile value acknowledged over the WebSocket just before the signal
// (written behind, not yet on disk) is there after a restart. SIGHUP (the
// ssh session that started a lab node closed) and SIGQUIT (Ctrl-\) used
// to kill the process on the spot with the force left on and the value
// lost.
func TestStopSignalsZeroTheArmAndKeepTheAcknowledged(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary against an emulated arm")
	}
	bin := buildBinary(t)
	tests := []struct {
		sig      syscall.Signal
		wantExit int
	}{
		{syscall.SIGTERM, 0},
		{syscall.SIGINT, 0},
		{syscall.SIGHUP, 0},
		// As Go's own SIGQUIT dump exits, after the clean stop.
		{syscall.SIGQUIT, 2},
	}
	for _, tt := range tests {
		t.Run(tt.sig.String(), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "state")
			emu, pts := plugEmulatedArm(t)
			d := startProcess(t, bin, emulatedArmArgs(dir, pts)...)
			c, id := holdForce(t, d, emu)
			const profile = `{"session":{"configure":{"profile":{"name":"co.example.app:main"}}}}`
			c.roundTrip(profile)
			ack := c.roundTrip(fmt.Sprintf(`{"arm3":[{"device_id":%q,"configure":{"filters":{"damping":{"scalar":7}}}}]}`, id))
			if ack["errors"] != nil {
				t.Fatalf("damping refused: %v", ack["errors"])
			}
			if err := d.cmd.Process.Signal(tt.sig); err != nil {
				t.Fatal(err)
			}
			if code := waitExit(t, d); code != tt.wantExit {
				t.Errorf("after %v hapticd exited %d, want %d (-1: killed by the signal)", tt.sig, code, tt.wantExit)
			}
			if f := emu.Stats().LastForce; !isZero(f) {
				t.Errorf("after %v the arm's firmware holds %+v N, want zero", tt.sig, f)
			}
			_ = emu.Close()

			// The same arm (same index: same UUID and id) on a new pty.
			_, pts = plugEmulatedArm(t)
			d2 := startProcess(t, bin, emulatedArmArgs(dir, pts)...)
			c2, inv := dialLockStep(t, d2)
			waitArmListed(t, c2)
			c2.roundTrip(profile)
			session := fmt.Sprint(inv["session_id"])
			_, env := httpDo(t, "GET", d2.url("/arm3/"+id+"/config/filters/damping?session="+session), "")
			if got := hwtest.JSONPath(env, "data", "scalar"); got != 7.0 {
				t.Errorf("after %v and a restart, the profile's damping is %v, want the acknowledged 7 (%v)", tt.sig, got, env)
			}
			_ = d2.cmd.Process.Signal(syscall.SIGTERM)
			waitExit(t, d2)
		})
	}
}

// A log reader that went away (`hapticd 2>&1 | tee log` with tee killed)
// does not end the service at its next log line: it keeps serving, and
// SIGTERM still brings the arm to zero and exits 0.
func TestClosedLogPipeKeepsServing(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary against an emulated arm")
	}
	bin := buildBinary(t)
	emu, pts := plugEmulatedArm(t)
	d := startProcess(t, bin, emulatedArmArgs(filepath.Join(t.TempDir(), "state"), pts)...)
	holdForce(t, d, emu)
	_ = d.stderr.Close()

	// A request from a foreign page is refused with a warning logged: the
	// first write to the closed pipe.
	req, _ := http.NewRequest("GET", d.url("/devices"), nil)
	req.Header.Set("Origin", "http://elsewhere.example")
	if resp, err := http.DefaultClient.Do(req); err != nil {
		t.Errorf("the refused browser request after the log pipe closed: %v", err)
	} else {
		resp.Body.Close()
	}
	if status, env := httpDo(t, "GET", d.url("/devices"), ""); status != 200 {
		t.Fatalf("GET /devices after the log pipe closed: %d %v", status, env)
	}
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := waitExit(t, d); code != 0 {
		t.Errorf("SIGTERM with the log pipe closed: exit %d, want 0", code)
	}
	if f := emu.Stats().LastForce; !isZero(f) {
		t.Errorf("after SIGTERM the arm's firmware holds %+v N, want zero", f)
	}
}

// plugEmulatedArm starts the firmware emulator (whose force stays until
// replaced, as a real arm's) on a pseudo-terminal.
func plugEmulatedArm(t *testing.T) (*emulator.Emulator, string) {
	t.Helper()
	e, pts, err := emulator.StartPTY(emulator.Options{Kind: hw.KindArm, Index: 7, PeriodS: 0.001})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	return e, pts
}

func emulatedArmArgs(stateDir, pts string) []string {
	return []string{"--state-dir", stateDir, "--sim-arms", "0", "--sim-grips", "0", "--hw-port", pts, "--hw-scan-period", "0"}
}

// holdForce opens a session on d whose lease outlasts the test's signal
// and holds 2 N up on the emulated arm until its firmware has it.
func holdForce(t *testing.T, d *process, emu *emulator.Emulator) (*lockStepClient, string) {
	t.Helper()
	c, _ := dialLockStep(t, d)
	id := waitArmListed(t, c)
	c.roundTrip(`{"session":{"configure":{"lease":{"ms":5000}}}}`)
	hwtest.EventuallyNil(t, 10*time.Second, "the firmware to hold 2 N", func() error {
		f := c.roundTrip(fmt.Sprintf(`{"arm3":[{"device_id":%q,"commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":2}}}}]}`, id))
		if f["errors"] != nil {
			t.Fatalf("force refused: %v", f["errors"])
		}
		if lf := emu.Stats().LastForce; lf.Z < 1.9 {
			return fmt.Errorf("the firmware holds %+v", lf)
		}
		return nil
	})
	return c, id
}

// waitExit waits for d to end and answers its exit code (-1 when a signal
// killed it).
func waitExit(t *testing.T, d *process) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- d.cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatalf("wait: %v", err)
		}
		return d.cmd.ProcessState.ExitCode()
	case <-time.After(30 * time.Second):
		// Killed, and waited for here: the process's cleanup waits too,
		// and two Waits at once are a race the detector reports over
		// this failure.
		_ = d.cmd.Process.Signal(os.Kill)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
		}
		t.Fatal("hapticd did not exit within 30 s of the signal")
		return 0
	}
}

func isZero(f hw.Vec3) bool { return math.Abs(f.X)+math.Abs(f.Y)+math.Abs(f.Z) < 1e-9 }

// Under nohup, SIGHUP (the ssh session closed) leaves the service serving:
// catching SIGHUP to stop cleanly must not undo the nohup.
func TestNohupKeepsServingPastSIGHUP(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	nohup, err := exec.LookPath("nohup")
	if err != nil {
		t.Skip("no nohup here")
	}
	bin := buildBinary(t)
	// nohup execs hapticd in its own process: the pid is hapticd's.
	d := startProcess(t, nohup, bin, "--state-dir", t.TempDir(), "--sim-arms", "1", "--sim-grips", "0")
	if err := d.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	// Serving well past the signal's delivery: a stop would have closed the
	// listener within this.
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		if status, env := httpDo(t, "GET", d.url("/healthz"), ""); status != 200 {
			t.Fatalf("GET /healthz after SIGHUP under nohup: %d %v", status, env)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := waitExit(t, d); code != 0 {
		t.Errorf("SIGTERM under nohup: exit %d, want 0", code)
	}
}
