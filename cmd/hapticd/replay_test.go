package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/hapticd/hapticd/actors/recording"
	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/hw/hwtest"
	"github.com/hapticd/hapticd/hw/replay"
	"github.com/hapticd/hapticd/hw/sim"
	"github.com/hapticd/hapticd/protocol/mcap"
)

// lockStepClient is a simulation client that sends one message per frame.
type lockStepClient struct {
	t    *testing.T
	conn *websocket.Conn
}

func dialLockStep(t *testing.T, d *process) (*lockStepClient, map[string]any) {
	t.Helper()
	conn, _, err := websocket.DefaultDialer.Dial("ws://"+d.addr["http"]+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	c := &lockStepClient{t: t, conn: conn}
	return c, c.read()
}

func (c *lockStepClient) read() map[string]any {
	c.t.Helper()
	_ = c.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	var m map[string]any
	if err := c.conn.ReadJSON(&m); err != nil {
		c.t.Fatalf("read frame: %v", err)
	}
	return m
}

func (c *lockStepClient) roundTrip(msg string) map[string]any {
	c.t.Helper()
	if err := c.conn.WriteMessage(websocket.TextMessage, []byte(msg)); err != nil {
		c.t.Fatal(err)
	}
	return c.read()
}

func armState(frame map[string]any, key string) [3]float64 {
	arms, _ := frame["arm3"].([]any)
	if len(arms) == 0 {
		return [3]float64{math.NaN(), math.NaN(), math.NaN()}
	}
	st, _ := arms[0].(map[string]any)["state"].(map[string]any)
	v, _ := st[key].(map[string]any)
	f := func(k string) float64 { x, _ := v[k].(float64); return x }
	return [3]float64{f("x"), f("y"), f("z")}
}

// recordSession records a lock-step session pushing the arm around with
// --record, stops the service cleanly and returns the file. The service
// simulates one arm and the grips given (those rock and click in a
// scripted hand, as they do by default).
func recordSession(t *testing.T, bin string, grips int) (string, string) {
	t.Helper()
	dir := t.TempDir()
	d := startProcess(t, bin, "--state-dir", t.TempDir(), "--record", dir, "--sim-arms", "1", "--sim-grips", strconv.Itoa(grips))
	// The session starts once the arm is up, as a user's would.
	hwtest.EventuallyNil(t, 10*time.Second, "the arm to be ready", func() error {
		if _, env := httpDo(t, "GET", d.url("/devices"), ""); !strings.Contains(fmt.Sprint(env["arm3"]), "ready:true") {
			return fmt.Errorf("GET /devices: %v", env)
		}
		return nil
	})
	c, inv := dialLockStep(t, d)
	id, _ := inv["arm3"].([]any)[0].(map[string]any)["device_id"].(string)
	// The longest lease: a machine busy with other tests may stall the
	// client (or, later, --drive) for more than the default 100 ms, and a
	// lapse is a real difference --drive would report.
	c.roundTrip(`{"session":{"configure":{"lease":{"ms":1000}}}}`)
	// A client at the loop's 1 kHz, paced as such clients pace themselves.
	start := time.Now()
	for i := 0; time.Since(start) < 1500*time.Millisecond; i++ {
		if wait := time.Duration(i)*time.Millisecond - time.Since(start); wait > 0 {
			time.Sleep(wait)
		}
		ph := float64(i) / 200
		c.roundTrip(fmt.Sprintf(`{"arm3":[{"device_id":%q,"commands":{"set_cursor_force":{"vector":{"x":%g,"y":%g,"z":0}}}}]}`, id, 0.5*math.Sin(ph), 0.5*math.Cos(ph)))
	}
	_ = c.conn.Close()
	return stopRecording(t, d, dir), id
}

func TestReplayAsVirtualDeviceAndDrive(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)
	file, id := recordSession(t, bin, 0)
	f := readCompleteRecording(t, file)
	states := recording.MessagesOf(f, recording.KindState)
	var recorded, forces [][]float64
	for _, ms := range states {
		for _, m := range ms {
			var st recording.State
			_ = json.Unmarshal(m.Data, &st)
			recorded = append(recorded, st.Position[:])
			forces = append(forces, st.Force[:])
		}
	}
	if len(recorded) < 100 {
		t.Fatalf("%d states recorded", len(recorded))
	}

	t.Run("virtual device", func(t *testing.T) {
		d := startProcess(t, bin, "replay", "--speed", "2", file)
		c, inv := dialLockStep(t, d)
		arms, _ := inv["arm3"].([]any)
		if len(arms) != 1 || arms[0].(map[string]any)["device_id"] != id {
			t.Fatalf("replay serves %v, want the recorded arm %s", arms, id)
		}
		playsRecorded(t, c, recorded, func(frame map[string]any) ([]float64, bool) {
			p := armState(frame, "cursor_position")
			return p[:], p != [3]float64{} // zero: not exchanged yet
		})
	})

	// A recording a client makes on the replayed service outlives the
	// replay: its path is kept, though the replay's state directory is
	// thrown away (docs/recording.md: the service never removes a
	// recording's file). It went with the directory at every exit.
	t.Run("recording made on the replay", func(t *testing.T) {
		d := startProcess(t, bin, "replay", file)
		status, doc := httpDo(t, "POST", d.url("/recordings"), `{"name":"onreplay"}`)
		if status != 200 {
			t.Fatalf("POST /recordings on the replay: %d %v", status, doc)
		}
		rec, _ := doc["data"].(map[string]any)
		path, _ := rec["path"].(string)
		id, _ := rec["id"].(float64)
		if status, doc := httpDo(t, "DELETE", d.url(fmt.Sprintf("/recordings/%d", int(id))), ""); status != 200 {
			t.Fatalf("DELETE /recordings/%d: %d %v", int(id), status, doc)
		}
		if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if err := d.cmd.Wait(); err != nil {
			t.Fatalf("the replay did not stop cleanly: %v", err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("the recording the listing placed at %q after the replay's stop: %v", path, err)
		}
		if f, err := mcap.Read(b); err != nil || !f.Complete {
			t.Fatalf("the kept recording: %v (complete %v)", err, f != nil && f.Complete)
		}
		if entries, _ := os.ReadDir(filepath.Dir(filepath.Dir(path))); len(entries) != 1 {
			t.Errorf("the replay's state directory keeps %d entries, want only recordings/", len(entries))
		}
	})

	// A replayed arm's frames show the recorded force as they show the
	// recorded position. The loop used to take a simulated arm's gravity
	// feed-forward off a replayed state that never held it: a replayed arm
	// at rest showed -1.96 N in z, and every recorded force 1.96 N lower.
	t.Run("virtual device's force", func(t *testing.T) {
		d := startProcess(t, bin, "replay", "--speed", "2", file)
		c, _ := dialLockStep(t, d)
		playsRecorded(t, c, forces, func(frame map[string]any) ([]float64, bool) {
			f := armState(frame, "current_cursor_force")
			return f[:], true
		})
	})

	// A replayed arm's frames show the joint angles of the recorded
	// position, as a live arm there would: the recording keeps the position,
	// and the replay showed every angle 0 (and the body unturned) whatever it.
	t.Run("virtual device's pose", func(t *testing.T) {
		d := startProcess(t, bin, "replay", "--speed", "2", file)
		c, _ := dialLockStep(t, d)
		hwtest.EventuallyNil(t, 30*time.Second, "a replayed state", func() error {
			f := c.roundTrip(`{}`)
			p := armState(f, "cursor_position")
			if p == [3]float64{} {
				return errors.New("no state exchanged yet")
			}
			want, _ := sim.InverseKinematics(hw.Vec3{X: p[0], Y: p[1], Z: p[2]}, false)
			arms, _ := f["arm3"].([]any)
			got, _ := arms[0].(map[string]any)["state"].(map[string]any)["angular_position"].(map[string]any)
			for k, w := range map[string]float64{"a0": want.A0, "a1": want.A1, "a2": want.A2} {
				if g, _ := got[k].(float64); math.Abs(g-w) > 0.01 {
					t.Fatalf("replayed arm at %v shows angular_position %v, want %v", p, got, want)
				}
			}
			return nil
		})
	})

	t.Run("drive", func(t *testing.T) {
		fresh := startProcess(t, bin, "--state-dir", t.TempDir(), "--sim-arms", "1", "--sim-grips", "0")
		// A wide window: on a machine busy with other tests either loop may
		// stall for tens of milliseconds, a timing difference, not a
		// behaviour one.
		out, err := exec.Command(bin, "replay", "--drive", "ws://"+fresh.addr["http"]+"/", "--window", "250ms", file).CombinedOutput()
		if err != nil || !bytes.Contains(out, []byte(" 0 differences beyond tolerance")) {
			t.Fatalf("--drive against a fresh service: %v\n%s", err, out)
		}
		// The re-driven session ended as a client ends it, with a close
		// frame: it was listed as dropped (read_error, 1001).
		if _, doc := httpDo(t, "GET", fresh.url("/sessions/closed"), ""); !strings.Contains(fmt.Sprint(doc["data"]), "close_code:1000") || !strings.Contains(fmt.Sprint(doc["data"]), "reason:client_closed") {
			t.Fatalf("GET /sessions/closed after --drive: %v, want the session closed by its client (client_closed, 1000)", doc["data"])
		}
		// A service with another arm answers other frames: reported.
		other := startProcess(t, bin, "--state-dir", t.TempDir(), "--sim-arms", "2", "--sim-grips", "0")
		out, err = exec.Command(bin, "replay", "--drive", "ws://"+other.addr["http"]+"/", file).CombinedOutput()
		if err == nil || !strings.Contains(string(out), "not in the recording") && !strings.Contains(string(out), "recorded 1 elements") {
			t.Fatalf("--drive against a service with two arms: %v\n%s", err, out)
		}
	})

	t.Run("export", func(t *testing.T) {
		for _, format := range []string{"csv", "jsonl"} {
			out, err := exec.Command(bin, "export", file, "--format", format).Output()
			if err != nil {
				t.Fatalf("export --format %s: %v", format, err)
			}
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			want := len(f.Messages)
			if format == "csv" {
				want = len(recorded) + 1 // the header
			}
			if len(lines) != want {
				t.Fatalf("export --format %s: %d lines, want %d", format, len(lines), want)
			}
		}
	})
}

// docs/recording.md re-drives a recording against a service started as
// the docs start it, which simulates a grip its scripted hand keeps
// moving. No client message moves a grip (it has no actuator), so its
// orientation, buttons, hall and battery in a re-driven frame are never
// the recorded ones: --drive compared them and failed every such replay.
func TestReplayDriveLeavesOutTheGripsHand(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)
	file, _ := recordSession(t, bin, 1)
	fresh := startProcess(t, bin, "--state-dir", t.TempDir(), "--sim-arms", "1", "--sim-grips", "1")
	// The wide window of TestReplayAsVirtualDeviceAndDrive, for the same
	// reason: a loaded machine stalls either loop now and then.
	out, err := exec.Command(bin, "replay", "--drive", "ws://"+fresh.addr["http"]+"/", "--window", "250ms", file).CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte(" 0 differences beyond tolerance")) {
		t.Fatalf("--drive against a fresh service with a grip: %v\n%s", err, out)
	}
}

// A session recorded on the 3.0 WebSocket (docs/clients.md: 3.0 clients
// run unchanged) is re-driven on the service's 3.0 WebSocket, given with
// --drive-legacy. --drive used to send its 3.0 messages to the 3.x socket
// and report every frame different; without --drive-legacy it now says
// why it cannot re-drive the session.
func TestReplayDrivesALegacySession(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)
	dir := t.TempDir()
	d := startProcess(t, bin, "--state-dir", t.TempDir(), "--record", dir, "--sim-arms", "1", "--sim-grips", "0")
	conn, _, err := websocket.DefaultDialer.Dial("ws://"+d.addr["legacy"]+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	c := &lockStepClient{t: t, conn: conn}
	inv := c.read()
	arms, _ := inv["arm3"].(map[string]any) // 3.0: devices keyed by id
	if len(arms) != 1 {
		t.Fatalf("3.0 inventory: %v", inv)
	}
	var id string
	for id = range arms {
	}
	c.roundTrip(`{"session":{"configure":{"lease":{"ms":1000}}}}`)
	for i := 0; i < 200; i++ {
		time.Sleep(time.Millisecond)
		c.roundTrip(fmt.Sprintf(`{"arm3":{%q:{"commands":{"set_cursor_force":{"vector":{"x":0,"y":%g,"z":0}}}}}}`, id, 0.5*math.Sin(float64(i)/50)))
	}
	_ = conn.Close()
	file := stopRecording(t, d, dir)

	fresh := startProcess(t, bin, "--state-dir", t.TempDir(), "--sim-arms", "1", "--sim-grips", "0")
	out, err := exec.Command(bin, "replay", "--drive", "ws://"+fresh.addr["http"]+"/", "--drive-legacy", "ws://"+fresh.addr["legacy"]+"/", "--window", "250ms", file).CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte(" 0 differences beyond tolerance")) {
		t.Fatalf("--drive-legacy against a fresh service: %v\n%s", err, out)
	}
	out, err = exec.Command(bin, "replay", "--drive", "ws://"+fresh.addr["http"]+"/", file).CombinedOutput()
	if err == nil || !bytes.Contains(out, []byte("--drive-legacy")) || bytes.Contains(out, []byte("differences beyond tolerance")) {
		t.Fatalf("--drive alone of a 3.0 session: %v\n%s\nwant an error naming --drive-legacy, not a comparison", err, out)
	}
}

// A recorded Minverse replays as a Minverse (device_info.device_type 6,
// its 4 N limit), not as an Inverse3: the recording keeps each arm's
// device type number, which replay gives the virtual device.
func TestReplayKeepsTheArmsFamily(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)
	dir := t.TempDir()
	d := startProcess(t, bin, "--state-dir", t.TempDir(), "--record", dir, "--sim", "minverse=1")
	deviceType := func(inv map[string]any) any {
		arms, _ := inv["arm3"].([]any)
		if len(arms) != 1 {
			t.Fatalf("inventory: %v", inv)
		}
		return path(arms[0], "config", "device_info", "device_type")
	}
	_, inv := dialLockStep(t, d)
	want := deviceType(inv)
	if want != float64(6) {
		t.Fatalf("the recorded Minverse's device_type is %v, want 6", want)
	}
	// Enough states for a replay: the recording holds them from the start.
	hwtest.EventuallyNil(t, 10*time.Second, "a quarter second recorded", func() error {
		_, env := httpDo(t, "GET", d.url("/recordings"), "")
		if recs, _ := env["data"].([]any); len(recs) == 1 {
			if n, _ := path(recs[0], "messages").(float64); n >= 200 {
				return nil
			}
		}
		return fmt.Errorf("GET /recordings: %v", env)
	})
	file := stopRecording(t, d, dir)
	r := startProcess(t, bin, "replay", file)
	_, inv = dialLockStep(t, r)
	if got := deviceType(inv); got != want {
		t.Errorf("the replayed Minverse's device_type is %v, want %v as recorded", got, want)
	}
}

// playsRecorded round-trips empty messages until 20 distinct recorded
// states have played, and fails unless every state the client sees (read
// from a frame; false: not exchanged yet) is a recorded one (as a frame's
// float32), in the recorded order.
func playsRecorded(t *testing.T, c *lockStepClient, recorded [][]float64, read func(map[string]any) ([]float64, bool)) {
	t.Helper()
	last, distinct := -1, 0
	hwtest.EventuallyNil(t, 30*time.Second, "20 distinct recorded states to play", func() error {
		got, ok := read(c.roundTrip(`{}`))
		if got == nil {
			t.Fatal("the frame does not list the replayed device")
		}
		if !ok && last < 0 {
			return errors.New("no state exchanged yet")
		}
		at := slices.IndexFunc(recorded[max(last, 0):], func(rec []float64) bool {
			for i := range got {
				if math.Abs(float64(float32(rec[i]))-got[i]) > 1e-6 {
					return false
				}
			}
			return true
		})
		if at < 0 {
			t.Fatalf("state %v is not on the recorded timeline after sample %d", got, last)
		}
		if at += max(last, 0); at != last {
			distinct++
		}
		last = at
		if distinct < 20 {
			return fmt.Errorf("%d so far", distinct)
		}
		return nil
	})
}

// gripState is the orientation (w x y z) and hall value a frame reports
// for grip id, and whether it lists the grip.
func gripState(frame map[string]any, id string) ([]float64, bool) {
	for _, v := range frame {
		devs, _ := v.([]any)
		for _, d := range devs {
			dm, _ := d.(map[string]any)
			if dm["device_id"] != id {
				continue
			}
			st, _ := dm["state"].(map[string]any)
			q, _ := st["orientation"].(map[string]any)
			f := func(m map[string]any, k string) float64 { x, _ := m[k].(float64); return x }
			return []float64{f(q, "w"), f(q, "x"), f(q, "y"), f(q, "z"), f(st, "hall")}, true
		}
	}
	return nil, false
}

// A recorded grip replays as a virtual grip: a client sees its recorded
// orientation and hall sensor, in the recorded order.
func TestReplayGrip(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)
	dir := t.TempDir()
	d := startProcess(t, bin, "--state-dir", t.TempDir(), "--record", dir, "--sim-arms", "0", "--sim-grips", "1", "--sim-motion", "circle")
	checkGrips := func(f *mcap.File) (recorded [][]float64, id string) {
		for _, ms := range recording.MessagesOf(f, recording.KindState) {
			for _, m := range ms {
				var st recording.State
				if err := json.Unmarshal(m.Data, &st); err != nil {
					t.Fatal(err)
				}
				if st.IsGrip() {
					id = st.Device
					q := st.Orientation
					recorded = append(recorded, []float64{q[0], q[1], q[2], q[3], st.Hall})
				}
			}
		}
		return recorded, id
	}
	// A second of the scripted hand turning the grip.
	hwtest.EventuallyNil(t, 30*time.Second, "1000 grip states recorded", func() error {
		f, err := readRecording(t, dir)
		if f == nil {
			return fmt.Errorf("no recording yet: %v", err)
		}
		if rec, _ := checkGrips(f); len(rec) < 1000 {
			return fmt.Errorf("%d so far", len(rec))
		}
		return nil
	})
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := d.cmd.Wait(); err != nil {
		t.Fatalf("hapticd did not stop cleanly: %v", err)
	}
	f, err := readRecording(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	recorded, id := checkGrips(f)
	files, _ := filepath.Glob(filepath.Join(dir, "*.mcap"))

	r := startProcess(t, bin, "replay", "--speed", "2", files[0])
	c, inv := dialLockStep(t, r)
	if _, ok := gripState(inv, id); !ok {
		t.Fatalf("replay serves %v, want the recorded grip %s", inv, id)
	}
	playsRecorded(t, c, recorded, func(frame map[string]any) ([]float64, bool) {
		g, _ := gripState(frame, id)
		// Before its first exchange a grip's zero state shows as the
		// identity.
		return g, !slices.Equal(g, []float64{1, 0, 0, 0, 0}) && !slices.Equal(g, []float64{0, 0, 0, 0, 0})
	})
}

// stopRecording stops d, a service recording into dir, with SIGTERM (the
// recording ends complete) and returns the one recording it wrote.
func stopRecording(t *testing.T, d *process, dir string) string {
	t.Helper()
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := d.cmd.Wait(); err != nil {
		t.Fatalf("hapticd did not stop cleanly: %v", err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.mcap"))
	if len(files) != 1 {
		t.Fatalf("recordings: %v", files)
	}
	return files[0]
}

// hapticd replay serves the arms in the order the recording lists them
// (the recorded service's), and a left-handed arm left-handed: its
// handedness entry and the joint angles derived from its recorded
// positions. The replay sorted the arms by id and derived every arm's
// angles right-handed.
func TestReplayKeepsHandednessAndOrder(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)
	state, dir := t.TempDir(), t.TempDir()
	// The second arm is left-handed before the recording starts.
	d := startProcess(t, bin, "--state-dir", state, "--sim", "inverse3=4")
	_, env := httpDo(t, "GET", d.url("/devices"), "")
	var order []string
	for _, a := range env["arm3"].([]any) {
		order = append(order, path(a, "device_id").(string))
	}
	if status, env := httpDo(t, "POST", d.url("/arm3/"+order[1]+"/config/handedness"), `"left"`); status != 200 {
		t.Fatalf("POST handedness: %d %v", status, env)
	}
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := d.cmd.Wait(); err != nil {
		t.Fatalf("hapticd did not stop cleanly: %v", err)
	}
	if slices.IsSorted(order) {
		t.Fatalf("the arms' ids %v are in sorted order: the test cannot tell the recorded order from sorting", order)
	}

	d = startProcess(t, bin, "--state-dir", state, "--record", dir, "--sim", "inverse3=4", "--sim-motion", "circle")
	hwtest.EventuallyNil(t, 10*time.Second, "a second recorded", func() error {
		_, env := httpDo(t, "GET", d.url("/recordings"), "")
		if recs, _ := env["data"].([]any); len(recs) == 1 {
			if n, _ := path(recs[0], "messages").(float64); n >= 4000 {
				return nil
			}
		}
		return fmt.Errorf("GET /recordings: %v", env)
	})
	file := stopRecording(t, d, dir)

	f, _, err := recording.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	drivers, err := recording.Replay(f, 1, false)
	if err != nil {
		t.Fatal(err)
	}
	var replayed []string
	for i, drv := range drivers {
		replayed = append(replayed, drv.Info().ID)
		last := drv.(*replay.Device).At(time.Hour)
		want := hw.State{PositionM: last.Position, VelocityMps: last.Velocity}
		sim.DeriveArmState(&want, i == 1)
		if last.Position.X == 0 || last.AnglesDeg != want.AnglesDeg {
			t.Errorf("replayed arm %d (%s) at %v: angles %v, want %v (left-handed %v)", i, drv.Info().ID, last.Position, last.AnglesDeg, want.AnglesDeg, i == 1)
		}
		_ = drv.Close()
	}
	if fmt.Sprint(replayed) != fmt.Sprint(order) {
		t.Errorf("Replay serves the arms as %v, recorded as %v", replayed, order)
	}

	r := startProcess(t, bin, "replay", file)
	_, env = httpDo(t, "GET", r.url("/devices"), "")
	var served []string
	for _, a := range env["arm3"].([]any) {
		served = append(served, path(a, "device_id").(string))
	}
	if fmt.Sprint(served) != fmt.Sprint(order) {
		t.Errorf("hapticd replay lists the arms as %v, recorded as %v", served, order)
	}
	for i, id := range order {
		want := "right"
		if i == 1 {
			want = "left"
		}
		if _, env := httpDo(t, "GET", r.url("/arm3/"+id+"/config/handedness"), ""); env["data"] != want {
			t.Errorf("replayed arm %s's handedness: %v, want %s", id, env, want)
		}
	}
}
