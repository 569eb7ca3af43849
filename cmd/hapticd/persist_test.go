package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hapticd/hapticd/hw/hwtest"
)

// Every change the service acknowledged survives SIGKILL right after the
// last answer: POSTs (device-global, session-scoped under a profile,
// settings, navigation) and DELETEs are on disk before their 200; a
// WebSocket configure under a profile is on disk within the write-behind's
// second (PROTOCOL 4), and then survives too.
func TestAcknowledgedChangesSurviveSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)
	dir := t.TempDir()
	const profile = "co.example.app:persist"
	pick := `{"session":{"configure":{"profile":{"name":"` + profile + `"}}}}`

	d := startProcess(t, bin, "--state-dir", dir)
	// Set, then reset, so that the DELETE is what must survive.
	if status, env := httpDo(t, "POST", d.url("/arm3/0/config/torque_scaling"), `{"enabled":false}`); status != 200 {
		t.Fatalf("POST torque_scaling: %d %v", status, env)
	}
	ws, inv := dialLockStep(t, d)
	arm, _ := hwtest.JSONPath(inv, "arm3", 0, "device_id").(string)
	if arm == "" {
		t.Fatalf("no arm in the first frame: %v", inv)
	}
	ws.roundTrip(pick)
	session := fmt.Sprint(inv["session_id"])
	posts := []struct{ method, route, body string }{
		{"POST", "/arm3/0/config/passivity/force_clamp", `{"max_force":7}`},
		{"POST", "/arm3/0/config/navigation?session=" + session, `{"mode":"bubble","bubble":{"max_speed":0.25}}`},
		{"POST", "/arm3/0/config/basis?session=" + session, `{"permutation":"-YXZ"}`},
		{"POST", "/settings/features/screensaver/enabled", `{"value":true}`},
		{"DELETE", "/arm3/0/config/torque_scaling", ""},
	}
	for _, p := range posts {
		if status, env := httpDo(t, p.method, d.url(p.route), p.body); status != 200 {
			t.Fatalf("%s %s: %d %v", p.method, p.route, status, env)
		}
	}
	// Last, the WebSocket client's own change, acknowledged by a frame
	// without errors, to the document the POSTs above wrote.
	f := ws.roundTrip(fmt.Sprintf(`{"arm3":[{"device_id":%q,"configure":{"damping":{"scalar":3.5}}}]}`, arm))
	if errs := f["errors"]; errs != nil {
		t.Fatalf("configure answered errors: %v", errs)
	}
	// The configure's damping is written behind: wait until it is on disk
	// (PROTOCOL 4: within one second; generous here, on a shared machine).
	acked := time.Now()
	took := hwtest.EventuallyNil(t, 10*time.Second, "the configure's damping on disk", func() error {
		files, _ := filepath.Glob(filepath.Join(dir, "profiles.v2", "*", "arm3-"+arm+".json"))
		for _, p := range files {
			if b, err := os.ReadFile(p); err == nil && strings.Contains(string(b), "3.5") {
				return nil
			}
		}
		return fmt.Errorf("not in %v", files)
	})
	t.Logf("the WebSocket configure reached the disk %v after its ack (found after %v of polling)", time.Since(acked).Round(time.Millisecond), took.Round(time.Millisecond))
	if err := d.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = d.cmd.Wait()

	d2 := startProcess(t, bin, "--state-dir", dir)
	ws2, inv2 := dialLockStep(t, d2)
	ws2.roundTrip(pick)
	session2 := fmt.Sprint(inv2["session_id"])
	gets := []struct{ route, path, want string }{
		{"/arm3/0/config/torque_scaling", "enabled", "true"},
		{"/arm3/0/config/passivity/force_clamp", "max_force", "7"},
		{"/arm3/0/config/filters/damping?session=" + session2, "scalar", "3.5"},
		{"/arm3/0/config/navigation?session=" + session2, "config.mode", `"bubble"`},
		{"/arm3/0/config/navigation?session=" + session2, "config.bubble.max_speed", "0.25"},
		{"/arm3/0/config/basis?session=" + session2, "permutation", `"-YXZ"`},
		{"/settings/features/screensaver/enabled", "", "true"},
	}
	for _, g := range gets {
		status, env := httpDo(t, "GET", d2.url(g.route), "")
		var v any = env["data"]
		if g.path != "" {
			for _, k := range strings.Split(g.path, ".") {
				v = hwtest.JSONPath(v, k)
			}
		}
		got, _ := json.Marshal(v)
		if status != 200 || string(got) != g.want {
			t.Errorf("after SIGKILL and restart, GET %s: %d, %s = %s, want %s (%v)", g.route, status, g.path, got, g.want, env)
		}
	}
	_ = ws2.conn.Close()
	_ = d2.cmd.Process.Signal(syscall.SIGTERM)
	_ = d2.cmd.Wait()
}

// A state directory left bad (a torn file, an empty one, a crash's temp
// file, a directory where a document should be) does not stop the
// service: it starts, keeps every document it can read, moves the bad ones
// aside with their bytes, and takes new values.
func TestBadStateFilesAtStart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)
	dir := t.TempDir()
	const profile = "co.example.app:bad-files"
	pick := `{"session":{"configure":{"profile":{"name":"` + profile + `"}}}}`

	d := startProcess(t, bin, "--state-dir", dir)
	ws, inv := dialLockStep(t, d)
	ws.roundTrip(pick)
	arm, _ := hwtest.JSONPath(inv, "arm3", 0, "device_id").(string)
	session := fmt.Sprint(inv["session_id"])
	for _, p := range []struct{ route, body string }{
		{"/arm3/0/config/handedness", `"left"`},
		{"/settings/devices/force_scale", `{"value":0.5}`},
		{"/arm3/0/config/preset?session=" + session, `{"preset":"arm_front_centered"}`},
	} {
		if status, env := httpDo(t, "POST", d.url(p.route), p.body); status != 200 {
			t.Fatalf("POST %s: %d %v", p.route, status, env)
		}
	}
	if err := d.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = d.cmd.Wait()

	settings := filepath.Join(dir, "settings.json")
	profileDocs, _ := filepath.Glob(filepath.Join(dir, "profiles.v2", "*", "arm3-"+arm+".json"))
	if len(profileDocs) != 1 {
		t.Fatalf("profile documents %v, want one", profileDocs)
	}
	profileDoc := profileDocs[0]
	sessionDoc := filepath.Join(filepath.Dir(profileDoc), "session.json")
	leftover := filepath.Join(dir, "devices", ".arm3-"+arm+".json.tmp-4242")
	good, err := os.ReadFile(settings)
	if err != nil {
		t.Fatal(err)
	}
	torn := good[:len(good)/2]
	for _, w := range []struct {
		path string
		data []byte
	}{{settings, torn}, {profileDoc, nil}, {leftover, []byte(`{"handedness": "ri`)}} {
		if err := os.WriteFile(w.path, w.data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	_ = os.Remove(sessionDoc)
	if err := os.MkdirAll(filepath.Join(sessionDoc, "kept"), 0o700); err != nil {
		t.Fatal(err)
	}

	d2 := startProcess(t, bin, "--state-dir", dir)
	ws2, inv2 := dialLockStep(t, d2)
	// The client that resumes the profile is told what it did not get: its
	// basis and lease (session.json) and its entries on the arm.
	picked := ws2.roundTrip(pick)
	var told []string
	warnings, _ := picked["warnings"].([]any)
	for _, w := range warnings {
		if m, _ := w.(map[string]any); m["code"] == "internal" && m["path"] == "session.configure.profile" {
			told = append(told, fmt.Sprint(m["message"]))
		}
	}
	if len(told) != 2 || !strings.Contains(strings.Join(told, " "), arm) {
		t.Errorf("the frame resuming a profile whose session.json and entries on arm %s are bad warns %q; want two internal warnings, one naming the arm", arm, told)
	}
	session2 := fmt.Sprint(inv2["session_id"])
	for _, g := range []struct{ route, want string }{
		{"/arm3/0/config/handedness", `"left"`},                                // a good document is kept
		{"/settings/devices/force_scale", `1`},                                 // a torn one gives defaults
		{"/arm3/0/config/preset?session=" + session2, `{"preset":"defaults"}`}, // so does an empty one
	} {
		status, env := httpDo(t, "GET", d2.url(g.route), "")
		if got, _ := json.Marshal(env["data"]); status != 200 || string(got) != g.want {
			t.Errorf("GET %s over the bad state directory: %d %s, want %s", g.route, status, got, g.want)
		}
	}
	for _, bad := range []struct {
		path string
		data []byte
	}{{settings, torn}, {profileDoc, nil}} {
		moved, _ := filepath.Glob(bad.path + ".corrupt-*")
		if len(moved) != 1 {
			t.Errorf("%s moved aside to %v, want one file", bad.path, moved)
			continue
		}
		if b, err := os.ReadFile(moved[0]); err != nil || string(b) != string(bad.data) {
			t.Errorf("%s = %q, %v; want the bad bytes kept", moved[0], b, err)
		}
	}
	if _, err := os.Stat(leftover); err == nil {
		t.Errorf("the leftover temp file %s is still there", leftover)
	}
	if _, err := os.Stat(filepath.Join(sessionDoc, "kept")); err != nil {
		t.Errorf("the directory in session.json's place was touched: %v", err)
	}
	// New values are taken and answered 200 where the files were bad.
	for _, p := range []struct{ route, body string }{
		{"/settings/devices/force_scale", `{"value":0.75}`},
		{"/arm3/0/config/preset?session=" + session2, `{"preset":"led_front"}`},
	} {
		if status, env := httpDo(t, "POST", d2.url(p.route), p.body); status != 200 {
			t.Errorf("POST %s over a moved-aside file: %d %v", p.route, status, env)
		}
	}
	_ = ws2.conn.Close()
	_ = d2.cmd.Process.Signal(syscall.SIGTERM)
	_ = d2.cmd.Wait()
}

// Two processes on one state directory would each write its own view of
// the shared documents over the other's (settings.json, and the device
// files of simulated devices, which get the same ids), losing what the
// other acknowledged. The second is refused at start, naming the
// directory; once the first is gone (even SIGKILLed) a start succeeds.
func TestSecondProcessOnOneStateDirIsRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)
	dir := t.TempDir()
	first := startProcess(t, bin, "--state-dir", dir)

	second := exec.Command(bin, "--port", "0", "--legacy-port", "-1", "--events-port", "-1", "--log-format", "json", "--state-dir", dir)
	var stderr bytes.Buffer
	second.Stderr = &stderr
	if err := second.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- second.Wait() }()
	select {
	case err := <-exited:
		if err == nil || !strings.Contains(stderr.String(), dir) || !strings.Contains(stderr.String(), "in use") {
			t.Fatalf("a second process on %s exited with %v; want a failure saying the directory is in use:\n%s", dir, err, stderr.String())
		}
	case <-time.After(20 * time.Second):
		_ = second.Process.Kill()
		<-exited
		t.Fatalf("a second process on the state directory of a running one still runs after 20 s:\n%s", stderr.String())
	}

	if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = first.cmd.Wait()
	third := startProcess(t, bin, "--state-dir", dir)
	_ = third.cmd.Process.Signal(syscall.SIGTERM)
	if err := third.cmd.Wait(); err != nil {
		t.Errorf("a process started once the first was SIGKILLed: exit %v", err)
	}
}
