package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/hapticd/hapticd/transport/schematest"
)

// buildBinary builds hapticd once per test run into a temp dir.
func buildBinary(t *testing.T) string {
	t.Helper()
	return buildBinaryWith(t, "hapticd")
}

// buildBinaryWith builds hapticd into a temp dir as name, with the build
// flags given (the build cache makes a second build quick).
func buildBinaryWith(t *testing.T, name string, flags ...string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), name)
	cmd := exec.Command("go", append(append([]string{"build"}, flags...), "-o", bin, ".")...)
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("go build %v: %v", flags, err)
	}
	return bin
}

// process is a hapticd process started by a test.
type process struct {
	cmd  *exec.Cmd
	addr map[string]string
	// stderr is the read end of the process's stderr: closing it is a
	// log reader that went away (`| tee` killed).
	stderr io.Closer
}

// startDaemon runs the real binary and waits for its "ready" line, reading
// each listener's real address from the log.
func startProcess(t *testing.T, bin string, args ...string) *process {
	t.Helper()
	// A subcommand (replay) comes first, then the listener flags.
	var sub []string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		sub, args = args[:1], args[1:]
	}
	cmd := exec.Command(bin, append(append(sub, "--port", "0", "--legacy-port", "0", "--events-port", "0", "--log-format", "json", "--type-names", "reference"), args...)...)
	// The process is SIGKILLed at the end, so what it leaves in its
	// temporary directory (replay's state) goes with the test's.
	cmd.Env = append(os.Environ(), "TMPDIR="+t.TempDir())
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	d := &process{cmd: cmd, addr: map[string]string{}, stderr: stderr}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	ready := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		var tail []string // the last lines, to say why it exited
		for sc.Scan() {
			if tail = append(tail, sc.Text()); len(tail) > 8 {
				tail = tail[1:]
			}
			var line map[string]any
			if json.Unmarshal(sc.Bytes(), &line) != nil {
				continue
			}
			if l, ok := line["listener"].(string); ok {
				d.addr[l], _ = line["addr"].(string)
			}
			if line["message"] == "ready" {
				ready <- nil
				_, _ = io.Copy(io.Discard, stderr)
				return
			}
		}
		ready <- fmt.Errorf("hapticd %s exited before ready (read error %v); its last lines:\n%s", strings.Join(args, " "), sc.Err(), strings.Join(tail, "\n"))
	}()
	select {
	case err := <-ready:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("hapticd did not log ready within 20 s")
	}
	return d
}

func (d *process) url(path string) string { return "http://" + d.addr["http"] + path }

func httpDo(t *testing.T, method, url, body string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	var env map[string]any
	b, _ := io.ReadAll(resp.Body)
	_ = json.Unmarshal(b, &env)
	// Every answer of the real binary is checked against the OpenAPI
	// document it serves.
	v := schematest.New("http://" + req.URL.Host)
	defer v.Close()
	if err := v.CheckAnswer(method, req.URL.Path, resp.StatusCode, resp.Header.Get("Content-Type"), b); err != nil {
		t.Errorf("%s %s: %v", method, url, err)
	}
	if method == http.MethodPost && resp.StatusCode == http.StatusOK {
		if err := v.CheckRequest(method, req.URL.Path, []byte(body)); err != nil {
			t.Errorf("%s %s: accepted, but %v", method, url, err)
		}
	}
	return resp.StatusCode, env
}

// A POST answered 200 is durable: it survives SIGKILL right after the
// answer.
func TestConfigSurvivesSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)
	dir := t.TempDir()
	tests := []struct{ route, body, want string }{
		{"/arm3/0/config/gravity_compensation", `{"enabled":false,"scaling_factor":0.25}`, `{"enabled":false,"scaling_factor":0.25}`},
		{"/arm3/0/config/handedness", `"left"`, `"left"`},
		{"/settings/devices/force_scale", `{"value":0.5}`, `0.5`},
	}
	for _, tt := range tests {
		d := startProcess(t, bin, "--state-dir", dir)
		status, env := httpDo(t, "POST", d.url(tt.route), tt.body)
		if status != 200 {
			t.Fatalf("POST %s: %d %v", tt.route, status, env)
		}
		if err := d.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = d.cmd.Wait()

		d2 := startProcess(t, bin, "--state-dir", dir)
		_, env = httpDo(t, "GET", d2.url(tt.route), "")
		got, _ := json.Marshal(env["data"])
		if string(got) != tt.want {
			t.Fatalf("after SIGKILL and restart, %s = %s, want %s", tt.route, got, tt.want)
		}
		_ = d2.cmd.Process.Signal(syscall.SIGTERM)
		_ = d2.cmd.Wait()
	}
}

// A session-scoped POST answered 200 for a session with a profile is
// durable too: after SIGKILL right after the answer and a restart from the
// same directory, the next session with that profile gets the value.
func TestProfileConfigSurvivesSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)
	dir := t.TempDir()
	const profile = `{"session":{"configure":{"profile":{"name":"co.example.app:main"}}}}`
	tests := []struct{ route, body, want string }{
		{"/arm3/0/config/preset", `{"preset":"arm_front_centered"}`, `{"preset":"arm_front_centered"}`},
		{"/arm3/0/config/filters/force_gate", `{"gain":0.25}`, `{"gain":0.25}`},
	}
	for _, tt := range tests {
		d := startProcess(t, bin, "--state-dir", dir)
		c, inv := dialLockStep(t, d)
		c.roundTrip(profile)
		session := fmt.Sprint(inv["session_id"])
		status, env := httpDo(t, "POST", d.url(tt.route+"?session="+session), tt.body)
		if status != 200 {
			t.Fatalf("POST %s?session=%s: %d %v", tt.route, session, status, env)
		}
		if err := d.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = d.cmd.Wait()

		d2 := startProcess(t, bin, "--state-dir", dir)
		c2, inv2 := dialLockStep(t, d2)
		c2.roundTrip(profile)
		session2 := fmt.Sprint(inv2["session_id"])
		_, env = httpDo(t, "GET", d2.url(tt.route+"?session="+session2), "")
		got, _ := json.Marshal(env["data"])
		if string(got) != tt.want {
			t.Fatalf("after SIGKILL and restart, the profile's next session has %s = %s, want %s", tt.route, got, tt.want)
		}
		_ = c2.conn.Close()
		_ = d2.cmd.Process.Signal(syscall.SIGTERM)
		_ = d2.cmd.Wait()
	}
}

// SIGTERM shuts down cleanly (exit 0) and the same flags give the same
// simulated device ids after a restart.
func TestGracefulShutdownAndStableIDs(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)
	dir := t.TempDir()
	var ids [2]string
	for i := range ids {
		d := startProcess(t, bin, "--state-dir", dir, "--sim-arms", "2")
		_, env := httpDo(t, "GET", d.url("/devices?format=json"), "")
		arms, _ := env["data"].(map[string]any)["arm3"].([]any)
		if len(arms) != 2 {
			t.Fatalf("want 2 arms: %v", env)
		}
		ids[i] = fmt.Sprint(arms[0].(map[string]any)["device_id"], arms[1].(map[string]any)["device_id"])
		if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if err := d.cmd.Wait(); err != nil {
			t.Fatalf("SIGTERM: exit %v, want a clean exit", err)
		}
	}
	if ids[0] != ids[1] {
		t.Fatalf("simulated ids changed across restarts: %s then %s", ids[0], ids[1])
	}
}

// The migration report names what was used and what replaces it.
func TestDeprecationsReport(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)
	d := startProcess(t, bin, "--state-dir", t.TempDir())
	if status, env := httpDo(t, "POST", d.url("/force_scale"), `{"force_scale":0.5}`); status != 200 {
		t.Fatalf("POST /force_scale: %d %v", status, env)
	}
	out, err := exec.Command(bin, "deprecations", "--target", "http://"+d.addr["http"]).CombinedOutput()
	if err != nil {
		t.Fatalf("hapticd deprecations: %v\n%s", err, out)
	}
	for _, want := range []string{"POST /force_scale", "POST /settings/devices/force_scale", "1×"} {
		if !strings.Contains(string(out), want) {
			t.Fatalf("report lacks %q:\n%s", want, out)
		}
	}
}

// path reads v's member at keys, nil where one is missing (the replay tests,
// on every OS, and the lab's, on Linux).
func path(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

// startInProcess runs the service in the test's process with args, stopped
// when the test ends.
func startInProcess(t *testing.T, args ...string) *service {
	t.Helper()
	o, err := parseFlags(args)
	if err != nil {
		t.Fatal(err)
	}
	sv, err := startService(context.Background(), o, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sv.stop(nil) })
	return sv
}
