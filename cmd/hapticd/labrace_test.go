//go:build linux

// A lab of real processes built with -race: Linux only (127.0.0.x), as
// the other lab tests.

package main

import (
	"fmt"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// TestLabUnderRace runs one lab scenario with hapticd built with -race
// (only when the test binary is: go test -race): a gateway and two nodes
// (automanaged membership, the default), a client of the gateway taking
// node a's arm with a force, declaring a spring and a damper and removing
// the damper, another navigating node b's arm, config written and read
// through the gateway over HTTP, node b SIGKILLed and restarted, the
// gateway SIGTERMed and restarted and a client driving again through the
// new one. Each process writes its race reports to a file (GORACE
// log_path, halt_on_error=0, exitcode=0); once all have stopped, the test
// fails with every report that is not one of the pinned protoactor's own
// known races (protoactorRaces, racereport_test.go; docs/lab.md, "Data
// races in the pinned protoactor"), printed whole, and logs the tolerated
// ones with their counts. A failure is a race to fix in hapticd, or a
// protoactor race not seen before: read its two access stacks (named by
// their innermost frames of protoactor or hapticd; look for hapticd's
// further out too) and the goroutines' creation stacks; only a race that
// is protoactor's alone goes on the list.
func TestLabUnderRace(t *testing.T) {
	if !raceEnabled {
		t.Skip("the test binary is built without -race: go test -race runs this lab under the race detector")
	}
	if testing.Short() {
		t.Skip("builds hapticd with -race and runs three processes")
	}
	started := time.Now()
	bin := buildBinaryWith(t, "hapticd-race", "-race")
	t.Logf("go build -race of hapticd took %v", time.Since(started).Round(time.Millisecond))

	logs := filepath.Join(t.TempDir(), "race")
	t.Setenv("GORACE", "log_path="+logs+" halt_on_error=0 exitcode=0")
	// Registered first, so it runs last: after every process the test
	// started is stopped (a test that failed on the way too).
	t.Cleanup(func() {
		reports, odd := readRaceLogs(t, logs)
		failOnOurRaces(t, reports, odd)
	})

	const wait = 30 * time.Second // the race build is several times slower
	lab := newTestLab(t, bin, labHostA, labHostB, labHostGW)
	a, b := lab.node(labHostA), lab.node(labHostB)
	gw := lab.gateway(labHostGW)
	armA, armB := onlyArm(t, a), onlyArm(t, b)
	waitLab(t, wait, "both nodes' arms on the gateway", func() bool { return len(labArms(t, gw)) == 2 })

	// A client of the gateway takes a's arm: a force, a spring and a
	// damper; then it removes the damper and keeps the force on.
	stopA := driveAndRemove(t, gw, a, armA, wait)
	// Another navigates b's arm.
	nav := pushNavigating(t, gw, armB)
	nav.set(1)
	waitLab(t, wait, "the navigating client's push on node b", func() bool { return controlMode(labArms(t, b)[armB]) == "force" })

	// Config through the gateway, written and read back, and the reads a
	// dashboard makes.
	gc := "/arm3/" + armA + "/config/gravity_compensation"
	for _, op := range []struct{ method, route, body string }{
		{"POST", gc, `{"enabled":false,"scaling_factor":0.25}`},
		{"GET", gc, ""},
		{"POST", "/arm3/" + armB + "/config/handedness", `"left"`},
		{"GET", "/arm3/" + armB + "/config/handedness", ""},
		{"DELETE", "/arm3/" + armB + "/config/handedness", ""},
		{"GET", "/stats", ""},
		{"GET", "/devices", ""},
		{"GET", "/arm3/" + armA + "/effects", ""},
	} {
		if status, env := httpDo(t, op.method, gw.url(op.route), op.body); status != 200 {
			t.Errorf("%s %s through the gateway: %d %v", op.method, op.route, status, env)
		}
	}

	// SIGKILL b while its arm is navigated, and start it again.
	if err := b.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = b.cmd.Wait()
	waitLab(t, wait, "the killed node's arm gone from the gateway", func() bool {
		ids, err := armIDs(gw)
		return err == nil && !ids[armB]
	})
	nav.stop()
	b = lab.node(labHostB)
	waitLab(t, wait, "the restarted node's arm back on the gateway", func() bool {
		ids, err := armIDs(gw)
		return err == nil && ids[armB]
	})

	// SIGTERM the gateway while the client holds a's arm, and start it
	// again: a client drives the arm through the new one.
	stopMember(t, gw, "the gateway")
	stopA()
	gw = lab.gateway(labHostGW)
	waitLab(t, wait, "both arms on the restarted gateway", func() bool { return len(labArms(t, gw)) == 2 })
	stopA = driveAndRemove(t, gw, a, armA, wait)
	if status, env := httpDo(t, "GET", gw.url(gc), ""); status != 200 {
		t.Errorf("GET %s through the restarted gateway: %d %v", gc, status, env)
	}
	stopA()

	for _, m := range []struct {
		m    *labMember
		what string
	}{{gw, "the gateway"}, {a, "node a"}, {b, "node b"}} {
		stopMember(t, m.m, m.what)
	}
	t.Logf("the lab under the race detector took %v with the build", time.Since(started).Round(time.Millisecond))
}

// driveAndRemove opens a session on gw that takes node's arm id with a
// force and a spring and a damper, waits for both effects on the node,
// removes the damper, waits for the node to drop it, and keeps the force
// and the spring on (every 10 ms, 1 s lease) until the returned stop. A
// gateway just restarted may answer device_busy while the old session's
// lease lapses on the node: the declaration is sent again until taken.
func driveAndRemove(t *testing.T, gw, node *labMember, id string, wait time.Duration) (stop func()) {
	t.Helper()
	conn := dialWS(t, "ws://"+gw.addr["http"]+"/")
	readJSON(t, conn) // the inventory
	roundTrip := func(msg string) map[string]any {
		t.Helper()
		if err := conn.WriteMessage(websocket.TextMessage, []byte(msg)); err != nil {
			t.Fatal(err)
		}
		return readJSON(t, conn)
	}
	if f := roundTrip(`{"session":{"configure":{"lease":{"ms":1000}}}}`); f["errors"] != nil {
		t.Fatalf("lease on the gateway: %v", f["errors"])
	}
	force := `"commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":0.5}}}`
	declare := fmt.Sprintf(`{"arm3":[{"device_id":%q,%s,"effects":{"set":[`+
		`{"id":"spring","type":"spring","position":{"x":0,"y":0,"z":0},"stiffness":20},`+
		`{"id":"damper","type":"damper","scalar":2}]}}]}`, id, force)
	waitLab(t, wait, "the client's force and effects on the node", func() bool {
		if f := roundTrip(declare); f["errors"] != nil {
			return false
		}
		return slices.Equal(effectIDs(t, node, id), []string{"damper", "spring"}) && controlMode(labArms(t, node)[id]) == "force"
	})
	if f := roundTrip(fmt.Sprintf(`{"arm3":[{"device_id":%q,%s,"effects":{"remove":["damper"]}}]}`, id, force)); f["errors"] != nil {
		t.Fatalf("removing the damper: %v", f["errors"])
	}
	waitLab(t, wait, "the damper gone from the node", func() bool { return slices.Equal(effectIDs(t, node, id), []string{"spring"}) })
	renew := fmt.Sprintf(`{"arm3":[{"device_id":%q,%s,"effects":{}}]}`, id, force)
	return holdSession(t, conn, func() string { return renew }, nil)
}

// stopMember SIGTERMs m and waits for it to exit (its race reports are
// then all written).
func stopMember(t *testing.T, m *labMember, what string) {
	t.Helper()
	if err := m.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- m.cmd.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("%s exited with %v after SIGTERM, want status 0 (GORACE exitcode=0)", what, err)
		}
	case <-time.After(30 * time.Second):
		t.Errorf("%s did not exit within 30 s of SIGTERM", what)
	}
}
