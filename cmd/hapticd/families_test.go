package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/rs/zerolog"

	"bytes"
	"flag"
	"github.com/hapticd/hapticd/actors/recording"
	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/hw/hwtest"
	"github.com/hapticd/hapticd/hw/sim"
	"github.com/hapticd/hapticd/protocol"
	"github.com/hapticd/hapticd/protocol/mcap"
	"github.com/hapticd/hapticd/transport"
)

// tutorialSession is a tutorial's WebSocket: the first frame, then one
// message out and its frame back, which must carry no errors or warnings.
type tutorialSession struct {
	t *testing.T
	c *websocket.Conn
}

func (s *tutorialSession) tick(msg string) map[string]any {
	s.t.Helper()
	for try := 0; ; try++ {
		if err := s.c.WriteMessage(websocket.TextMessage, []byte(msg)); err != nil {
			s.t.Fatal(err)
		}
		f := readJSON(s.t, s.c)
		// A message the loaded machine held past the lease before it
		// could be applied is answered stale_command, its commands not
		// applied: sent again, as the warning says and a client's loop
		// does (the full suite's run, 2026-11-29: 234 ms).
		if f["errors"] == nil && onlyStaleCommand(f["warnings"]) && try < 20 {
			continue
		}
		if f["errors"] != nil || f["warnings"] != nil {
			s.t.Fatalf("after %s: errors %v, warnings %v", msg, f["errors"], f["warnings"])
		}
		return f
	}
}

// onlyStaleCommand reports whether a frame's warnings are stale_command
// alone (and there is one).
func onlyStaleCommand(warnings any) bool {
	ws, _ := warnings.([]any)
	for _, w := range ws {
		if hwtest.JSONPath(w, "code") != "stale_command" {
			return false
		}
	}
	return len(ws) > 0
}

// The vendor's tutorials against the families --sim makes, on the real
// binary with its default names, as a user runs them.
func TestTutorialsAgainstSimulatedFamilies(t *testing.T) {
	bin := buildBinary(t)
	t.Run("T02 print VerseGrip with --sim verse_grip=1", func(t *testing.T) {
		d := startProcess(t, bin, "--state-dir", t.TempDir(), "--type-names", "haply", "--sim", "verse_grip=1")
		s := &tutorialSession{t: t, c: dialWS(t, "ws://"+d.addr["http"]+"/")}
		inv := readJSON(t, s.c)
		grip, _ := hwtest.JSONPath(inv, "verse_grip", 0, "device_id").(string)
		if grip == "" {
			t.Fatalf("no wired grip in the first frame: %v", inv)
		}
		for _, key := range []string{"inverse3", "wireless_verse_grip"} {
			if l, _ := inv[key].([]any); len(l) != 0 {
				t.Fatalf("--sim verse_grip=1 also made %s: %v", key, inv[key])
			}
		}
		if hwtest.JSONPath(inv, "verse_grip", 0, "config", "type") != "verse_grip" || hwtest.JSONPath(inv, "verse_grip", 0, "config", "device_info", "device_type") != float64(sim.ModelVerseGrip) {
			t.Fatalf("the wired grip's config: %v", hwtest.JSONPath(inv, "verse_grip", 0, "config"))
		}
		probe := fmt.Sprintf(`"verse_grip":[{"device_id":%q,"commands":{"probe_orientation":{}}}]`, grip)
		s.tick(`{"session":{"configure":{"profile":{"name":"co.haply.inverse.tutorials:print-verse-grip"}}},` + probe + `}`)
		// What T02 prints every tick: orientation, hall level, button. The
		// grip must move: its orientation changes and its button goes both
		// down and up.
		orientations := map[string]bool{}
		button := map[bool]bool{}
		hwtest.EventuallyNil(t, 20*time.Second, "the grip to turn and press its button", func() error {
			f := s.tick(`{` + probe + `}`)
			q, _ := hwtest.JSONPath(f, "verse_grip", 0, "state", "orientation").(map[string]any)
			hall, hallOK := hwtest.JSONPath(f, "verse_grip", 0, "state", "hall").(float64)
			b, bOK := hwtest.JSONPath(f, "verse_grip", 0, "state", "button").(bool)
			code, errOK := hwtest.JSONPath(f, "verse_grip", 0, "status", "error").(float64)
			if len(q) != 4 || !hallOK || hall < 0 || hall > 1 || !bOK || !errOK || code != 0 {
				t.Fatalf("the wired grip's state and status: %v", hwtest.JSONPath(f, "verse_grip", 0))
			}
			orientations[fmt.Sprintf("%.4f %.4f %.4f %.4f", q["w"], q["x"], q["y"], q["z"])] = true
			button[b] = true
			if len(orientations) < 10 || len(button) < 2 {
				return fmt.Errorf("%d orientations and button states %v so far", len(orientations), button)
			}
			return nil
		})
	})
	t.Run("T05 Minverse branch with --sim minverse=1", func(t *testing.T) {
		d := startProcess(t, bin, "--state-dir", t.TempDir(), "--type-names", "haply", "--sim", "minverse=1")
		s := &tutorialSession{t: t, c: dialWS(t, "ws://"+d.addr["http"]+"/")}
		inv := readJSON(t, s.c)
		arm, _ := hwtest.JSONPath(inv, "inverse3", 0, "device_id").(string)
		if arm == "" {
			t.Fatalf("no arm in the inverse3 array: %v", inv)
		}
		if hwtest.JSONPath(inv, "inverse3", 0, "status", "calibrated") != true {
			t.Fatalf("status %v: the tutorial waits for calibrated", hwtest.JSONPath(inv, "inverse3", 0, "status"))
		}
		// The tutorial's choice: 0.04 m for a Minverse, 0.10 m for the rest.
		radius := 0.10
		if hwtest.JSONPath(inv, "inverse3", 0, "config", "type") == "minverse" {
			radius = 0.04
		}
		if radius != 0.04 || hwtest.JSONPath(inv, "inverse3", 0, "config", "device_info", "device_type") != float64(sim.ModelMinverse) {
			t.Fatalf("config %v: the tutorial would not take the Minverse branch", hwtest.JSONPath(inv, "inverse3", 0, "config"))
		}
		s.tick(fmt.Sprintf(`{"session":{"configure":{"profile":{"name":"co.haply.inverse.tutorials:position-control"}}},"inverse3":[{"device_id":%q,"configure":{"preset":{"preset":"arm_front_centered"}}}]}`, arm))
		// Hold D (+x), then W (+y), then E (+z): the target moves 0.00005 m
		// a tick and is clamped to the sphere, as the tutorial does.
		const speed = 0.00005
		var target [3]float64
		limit := sim.MinverseWorkspaceRadiusM + sim.EndStopMarginM
		var cursor [3]float64
		send := func() {
			f := s.tick(fmt.Sprintf(`{"inverse3":[{"device_id":%q,"commands":{"set_cursor_position":{"position":{"x":%g,"y":%g,"z":%g}}}}]}`, arm, target[0], target[1], target[2]))
			for i, c := range []string{"x", "y", "z"} {
				cursor[i], _ = hwtest.JSONPath(f, "inverse3", 0, "state", "cursor_position", c).(float64)
			}
			if r := math.Sqrt(cursor[0]*cursor[0] + cursor[1]*cursor[1] + cursor[2]*cursor[2]); r > limit {
				t.Fatalf("cursor %v is %.4f m from the centre, outside the Minverse's workspace (%.3f m)", cursor, r, limit)
			}
		}
		for _, axis := range []int{0, 1, 2} {
			for range 1200 {
				target[axis] += speed
				if n := math.Sqrt(target[0]*target[0] + target[1]*target[1] + target[2]*target[2]); n > radius {
					for i := range target {
						target[i] *= radius / n
					}
				}
				send()
			}
		}
		if math.Abs(math.Sqrt(target[0]*target[0]+target[1]*target[1]+target[2]*target[2])-radius) > 1e-9 {
			t.Fatalf("target %v is not on the tutorial's sphere", target)
		}
		hwtest.EventuallyNil(t, 10*time.Second, fmt.Sprintf("the cursor to reach the target %v on the 0.04 m sphere", target), func() error {
			if math.Hypot(math.Hypot(cursor[0]-target[0], cursor[1]-target[1]), cursor[2]-target[2]) > 0.003 {
				send()
				return fmt.Errorf("cursor %v", cursor)
			}
			return nil
		})
	})
}

// --sim parses into a fleet, keeps the shorthands, and refuses what is
// ambiguous or wrong with a message that says how to fix it.
func TestSimFlag(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string // the fleet, or the error's start
	}{
		{nil, "inverse3=1,wireless_verse_grip=1"},
		{[]string{"--sim-arms", "3", "--sim-grips", "0"}, "inverse3=3,wireless_verse_grip=0"},
		{[]string{"--sim", "inverse3=2,minverse=1,inverse3x=1,verse_grip=1,wireless_verse_grip=2"}, "inverse3=2,minverse=1,inverse3x=1,verse_grip=1,wireless_verse_grip=2"},
		{[]string{"--sim", "verse_grip=1"}, "verse_grip=1"},
		{[]string{"--sim", "minverse=1", "--sim", "verse_grip=2"}, "minverse=1,verse_grip=2"},
		{[]string{"--sim", "minverse=1", "--sim-arms", "2"}, "minverse=1,inverse3=2"},
		{[]string{"--sim", "inverse3=1", "--sim-arms", "2"}, "error: --sim-arms and --sim inverse3=1"},
		{[]string{"--sim", "minverse=1,minverse=2"}, "error: invalid value"},
		{[]string{"--sim", "gadget=1"}, "error: invalid value"},
		{[]string{"--sim", "minverse"}, "error: invalid value"},
		{[]string{"--sim", "minverse=-1"}, "error: invalid value"},
		{[]string{"--sim", "minverse=20000"}, "error: invalid value"},
		// A family owns 16384 indices: past them an Inverse3 takes an
		// Inverse3x's id and UUID (and its stored config). The shorthands
		// and the default fleet are held to it as --sim is.
		{[]string{"--sim", "inverse3=1", "--sim-index-base", "16384"}, "error: --sim inverse3=1 with --sim-index-base 16384"},
		{[]string{"--sim-arms", "16385"}, "error: --sim-arms 16385 with --sim-index-base 0"},
		{[]string{"--sim-grips", "16385"}, "error: --sim-grips 16385 with --sim-index-base 0"},
		{[]string{"--sim-index-base", "16384"}, "error: --sim-arms 1 with --sim-index-base 16384"},
		{[]string{"--sim", "minverse=1", "--sim-arms", "2", "--sim-index-base", "16383"}, "error: --sim-arms 2 with --sim-index-base 16383"},
		{[]string{"--sim-index-base", "16383"}, "inverse3=1,wireless_verse_grip=1"},
		{[]string{"--sim-index-base", "16384", "--sim-arms", "0", "--sim-grips", "0"}, "inverse3=0,wireless_verse_grip=0"},
	} {
		o, err := parseFlags(tt.args)
		got := ""
		if err != nil {
			got = "error: " + err.Error()
		} else {
			got = o.fleet.String()
		}
		if !strings.HasPrefix(got, tt.want) {
			t.Errorf("%q: %s, want %s", tt.args, got, tt.want)
		}
	}
}

// The simulator's families and the wire's are one list: same names, same
// device type numbers, grips on the same links.
func TestFamilyTablesAgree(t *testing.T) {
	wire := map[string]protocol.Family{}
	for _, f := range protocol.Families() {
		wire[f.Name] = f
	}
	if len(wire) != len(sim.Families()) {
		t.Fatalf("protocol has %d families, hw/sim %d", len(wire), len(sim.Families()))
	}
	for _, s := range sim.Families() {
		w, ok := wire[s.Name]
		if !ok || w.DeviceType != int(s.Model) || (s.Kind == hw.KindGrip) != (w.Type == protocol.TypeGrip) {
			t.Errorf("%s: hw/sim %+v, protocol %+v", s.Name, s, w)
		}
		link := protocol.LinkAny
		switch s.Link {
		case hw.LinkWired:
			link = protocol.LinkWired
		case hw.LinkWireless:
			link = protocol.LinkWireless
		}
		dt := protocol.TypeArm
		if s.Kind == hw.KindGrip {
			dt = protocol.TypeGrip
		}
		if got := protocol.FamilyOf(dt, link, int(s.Model)); got != w {
			t.Errorf("%s: FamilyOf gives %+v", s.Name, got)
		}
	}
}

// A mixed fleet is created in the order docs/protocol.md's family table
// gives (so /inverse3/1/... is the arm the docs say), every device has its
// own id and UUID, and a restart on the same state directory, with the
// families written in another order, brings back the same devices in the
// same order with their stored config.
func TestMixedFleetOrderAndIdentity(t *testing.T) {
	// The docs' order: the config.type column of the family table.
	var docOrder []string
	inTable := false
	for _, line := range strings.Split(readPage(t, "docs/protocol.md"), "\n") {
		switch {
		case strings.HasPrefix(line, "| Family | Array"):
			inTable = true
		case inTable && strings.HasPrefix(line, "|---"):
		case inTable && strings.HasPrefix(line, "|"):
			cells := strings.Split(line, "|")
			docOrder = append(docOrder, strings.Trim(strings.TrimSpace(cells[3]), "`"))
		default:
			inTable = false
		}
	}
	if len(docOrder) != len(sim.Families()) {
		t.Fatalf("docs/protocol.md's family table lists %v, want one row per family", docOrder)
	}
	state := filepath.Join(t.TempDir(), "state")
	type device struct{ array, configType, id, uuid string }
	// run starts the service with fleet, optionally sets the second
	// Minverse left-handed, and lists every device as GET /devices does.
	run := func(fleet string, setLeft bool) (list []device, minverseHand string) {
		t.Helper()
		o, err := parseFlags([]string{"--port", "0", "--legacy-port", "-1", "--events-port", "-1", "--hw-scan-period", "0",
			"--state-dir", state, "--sim", fleet})
		if err != nil {
			t.Fatal(err)
		}
		sv, err := startService(context.Background(), o, zerolog.Nop())
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = sv.stop(nil) }()
		base := "http://" + sv.srv.Addr(transport.ListenerHTTP).String()
		status, doc := httpDo(t, "GET", base+"/devices", "")
		if status != 200 {
			t.Fatalf("GET /devices: %d %v", status, doc)
		}
		var minverses []string
		for _, array := range []string{"inverse3", "verse_grip", "wireless_verse_grip"} {
			entries, _ := doc[array].([]any)
			for _, e := range entries {
				d := device{array: array}
				d.configType, _ = hwtest.JSONPath(e, "config", "type").(string)
				d.id, _ = hwtest.JSONPath(e, "device_id").(string)
				d.uuid, _ = hwtest.JSONPath(e, "config", "device_info", "uuid").(string)
				list = append(list, d)
				if d.configType == "minverse" {
					minverses = append(minverses, d.id)
				}
			}
		}
		if len(minverses) != 2 {
			t.Fatalf("Minverses %v in %v", minverses, list)
		}
		if setLeft {
			if status, env := httpDo(t, "POST", base+"/inverse3/"+minverses[1]+"/config/handedness", `"left"`); status != 200 {
				t.Fatalf("POST handedness: %d %v", status, env)
			}
		}
		_, env := httpDo(t, "GET", base+"/inverse3/"+minverses[1]+"/config/handedness", "")
		minverseHand, _ = env["data"].(string)
		return list, minverseHand
	}
	first, _ := run("wireless_verse_grip=2,verse_grip=2,minverse=2,inverse3x=2,inverse3=2", true)
	var order []string
	ids, uuids := map[string]bool{}, map[string]bool{}
	for _, d := range first {
		if len(order) == 0 || order[len(order)-1] != d.configType {
			order = append(order, d.configType)
		}
		if ids[d.array+"/"+d.id] || uuids[d.uuid] || d.uuid == "" {
			t.Fatalf("%+v shares its id or UUID (or has none): %+v", d, first)
		}
		ids[d.array+"/"+d.id], uuids[d.uuid] = true, true
	}
	if len(first) != 10 || strings.Join(order, ",") != strings.Join(docOrder, ",") {
		t.Fatalf("GET /devices lists the families in the order %v (%d devices), docs/protocol.md says %v", order, len(first), docOrder)
	}
	again, hand := run("inverse3=2,inverse3x=2,minverse=2,verse_grip=2,wireless_verse_grip=2", false)
	if fmt.Sprint(again) != fmt.Sprint(first) || hand != "left" {
		t.Fatalf("after a restart: %v with the second Minverse %q-handed, before %v and left", again, hand, first)
	}
}

// A recording of every family replays every device as its own family: an
// arm by its recorded device type number, a grip by its recorded link (a
// wired grip stays a verse_grip, a wireless one a wireless_verse_grip).
func TestRecordingReplaysEveryFamily(t *testing.T) {
	f, want := recordedRun(t, "--sim", "inverse3=1,minverse=1,inverse3x=1,verse_grip=1,wireless_verse_grip=1")
	drivers, err := recording.Replay(f, 1, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(drivers) != len(want) {
		t.Fatalf("replay serves %d devices, %d were recorded", len(drivers), len(want))
	}
	for _, drv := range drivers {
		got := drv.Info()
		w, ok := want[got.ID]
		if !ok || got.Kind != w.Kind || got.Model != w.Model || got.Link != w.Link || got.MaxForceN != w.MaxForceN || got.WorkspaceCenterM != w.WorkspaceCenterM {
			t.Errorf("replayed %s: kind %v, model %d, link %v, %g N around %v; recorded kind %v, model %d, link %v, %g N around %v",
				got.ID, got.Kind, got.Model, got.Link, got.MaxForceN, got.WorkspaceCenterM, w.Kind, w.Model, w.Link, w.MaxForceN, w.WorkspaceCenterM)
		}
		_ = drv.Close()
	}
}

// An arm's force_clamp reads what its loop clamps at: a Minverse's 4 N by
// default (it read the Inverse3's 10 N while the loop clamped at 4), and a
// value above the family's limit is answered, read back and framed as that
// limit, since the clamp never raises the driver's own.
func TestForceClampReadsEachFamilysLimit(t *testing.T) {
	sv := startInProcess(t, "--type-names", "reference", "--port", "0", "--legacy-port", "-1", "--events-port", "-1", "--hw-scan-period", "0",
		"--state-dir", t.TempDir(), "--sim", "inverse3=1,minverse=1")
	base := "http://" + sv.srv.Addr(transport.ListenerHTTP).String()
	const route = "/config/passivity/force_clamp"
	clampOf := func(env map[string]any) any { return hwtest.JSONPath(env, "data", "max_force") }
	steps := []struct {
		name, method, arm, body string
		want                    float64
	}{
		{"Inverse3 default", "GET", "0", "", hw.ArmMaxForceN},
		{"Minverse default", "GET", "1", "", hw.MinverseMaxForceN},
		{"Minverse set above its limit", "POST", "1", `{"max_force": 10}`, hw.MinverseMaxForceN},
		{"Minverse read back", "GET", "1", "", hw.MinverseMaxForceN},
		{"Minverse set below its limit", "POST", "1", `{"max_force": 2.5}`, 2.5},
		{"Minverse reset", "DELETE", "1", "", hw.MinverseMaxForceN},
		{"Inverse3 set above its limit", "POST", "0", `{"max_force": 20}`, hw.ArmMaxForceN},
		{"Inverse3 set below its limit", "POST", "0", `{"max_force": 7}`, 7},
	}
	for _, s := range steps {
		status, env := httpDo(t, s.method, base+"/arm3/"+s.arm+route, s.body)
		if status != 200 || clampOf(env) != s.want {
			t.Errorf("%s: %s /arm3/%s%s: %d, max_force %v, want %v (%v)", s.name, s.method, s.arm, route, status, clampOf(env), s.want, env)
		}
	}
	c := dialWS(t, "ws://"+sv.srv.Addr(transport.ListenerHTTP).String()+"/")
	first := readJSON(t, c)
	for i, want := range []float64{7, hw.MinverseMaxForceN} {
		if got := hwtest.JSONPath(first, "arm3", i, "config", "force_clamp", "max_force"); got != want {
			t.Errorf("first frame: arm %d's force_clamp %v, want %v", i, got, want)
		}
	}
}

// A force_clamp of 0 N (valid, 0..50) lets no client force through: it
// let the arm's whole force through, the loop reading 0 as "no clamp".
func TestForceClampZeroLetsNoForceThrough(t *testing.T) {
	sv := startInProcess(t, "--type-names", "reference", "--port", "0", "--legacy-port", "-1", "--events-port", "-1", "--hw-scan-period", "0",
		"--state-dir", t.TempDir(), "--sim-arms", "1", "--sim-grips", "0")
	base := "http://" + sv.srv.Addr(transport.ListenerHTTP).String()
	if status, env := httpDo(t, "POST", base+"/arm3/0/config/passivity/force_clamp", `{"max_force": 0}`); status != 200 {
		t.Fatalf("POST force_clamp 0: %d %v", status, env)
	}
	c := dialWS(t, "ws://"+sv.srv.Addr(transport.ListenerHTTP).String()+"/")
	first := readJSON(t, c)
	id, _ := hwtest.JSONPath(first, "arm3", 0, "device_id").(string)
	z0, _ := hwtest.JSONPath(first, "arm3", 0, "state", "cursor_position", "z").(float64)
	send := func(msg string) map[string]any {
		t.Helper()
		if err := c.WriteMessage(websocket.TextMessage, []byte(msg)); err != nil {
			t.Fatal(err)
		}
		return readJSON(t, c)
	}
	send(`{"session":{"configure":{"lease":{"ms":1000}}}}`)
	start := time.Now()
	for time.Since(start) < 500*time.Millisecond {
		f := send(fmt.Sprintf(`{"arm3":[{"device_id":%q,"commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":3}}}}]}`, id))
		if z, _ := hwtest.JSONPath(f, "arm3", 0, "state", "cursor_position", "z").(float64); z > z0+0.005 {
			t.Fatalf("with force_clamp 0 N a 3 N push moved the cursor from z %.4f to %.4f m", z0, z)
		}
	}
}

// The default bubble ({"mode": "bubble"}, as docs/protocol.md suggests)
// moves the workspace on every arm family when the hand pushes toward the
// workspace's edge. It was the Inverse3's 5 cm sphere everywhere: on a
// Minverse, whose whole workspace radius is 5 cm, the workspace's boundary
// stopped the cursor short of the velocity zone and the workspace never
// moved. The default is now sized from the arm (half its workspace radius,
// a zone of 0.3 of it), and GET and POST say so, over either path.
func TestDefaultBubbleMovesTheWorkspaceOnEveryFamily(t *testing.T) {
	sv := startInProcess(t, "--port", "0", "--legacy-port", "-1", "--events-port", "-1", "--hw-scan-period", "0",
		"--state-dir", t.TempDir(), "--sim", "inverse3=1,minverse=1,inverse3x=1")
	base := "http://" + sv.srv.Addr(transport.ListenerHTTP).String()
	radiusOf := map[string]float64{}
	for _, f := range sim.Families() {
		radiusOf[f.Name] = f.WorkspaceRadiusM
	}
	s := &tutorialSession{t: t, c: dialWS(t, "ws://"+sv.srv.Addr(transport.ListenerHTTP).String()+"/")}
	first := readJSON(t, s.c)
	sid := fmt.Sprint(first["session_id"])
	s.tick(`{"session":{"configure":{"profile":{"name":"co.example.nav:bubble"}}}}`)
	arms, _ := first["inverse3"].([]any)
	families := map[string]bool{}
	for i, a := range arms {
		id := fmt.Sprint(hwtest.JSONPath(a, "device_id"))
		family := fmt.Sprint(hwtest.JSONPath(a, "config", "type"))
		families[family] = true
		radius := radiusOf[family]
		if radius == 0 {
			t.Fatalf("arm %s: family %q has no workspace radius", id, family)
		}
		wantR, wantWidth := math.Round(radius/2*1e4)/1e4, math.Round(radius*0.3*1e4)/1e4
		route := fmt.Sprintf("%s/inverse3/%d/config/navigation?session=%s", base, i, sid)
		sizes := func(entry any) (any, any) {
			return hwtest.JSONPath(entry, "bubble", "shape", "parameters", "r"), hwtest.JSONPath(entry, "bubble", "velocity_zone_width")
		}
		// Over HTTP: the echo is the entry in force, sized for the arm.
		status, env := httpDo(t, "POST", route, `{"mode":"bubble"}`)
		if r, w := sizes(env["data"]); status != 200 || r != wantR || w != wantWidth {
			t.Errorf("%s %s: POST {\"mode\":\"bubble\"}: %d, r %v width %v, want %v %v", family, id, status, r, w, wantR, wantWidth)
		}
		httpDo(t, "DELETE", route, "")
		// Over WebSocket, then GET.
		s.tick(fmt.Sprintf(`{"inverse3":[{"device_id":%q,"configure":{"navigation":{"mode":"bubble"}},"commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":0}}}}]}`, id))
		status, env = httpDo(t, "GET", route, "")
		if r, w := sizes(hwtest.JSONPath(env, "data", "config")); status != 200 || r != wantR || w != wantWidth {
			t.Errorf("%s %s: GET after configure: %d, r %v width %v, want %v %v", family, id, status, r, w, wantR, wantWidth)
		}
		var transform, cursor any
		moved := false
		for deadline := time.Now().Add(20 * time.Second); !moved && time.Now().Before(deadline); {
			f := s.tick(fmt.Sprintf(`{"inverse3":[{"device_id":%q,"commands":{"set_cursor_force":{"vector":{"x":1.5,"y":0,"z":0}}}}]}`, id))
			for _, e := range f["inverse3"].([]any) {
				if hwtest.JSONPath(e, "device_id") == id {
					transform, cursor = hwtest.JSONPath(e, "state", "transform"), hwtest.JSONPath(e, "state", "cursor_position")
					m, _ := transform.(map[string]any)
					moved = len(m) > 0
				}
			}
		}
		if !moved {
			t.Errorf("%s %s: pushing +x at 1.5 N never moved the workspace (cursor %v, transform %v)", family, id, cursor, transform)
		}
		s.tick(fmt.Sprintf(`{"inverse3":[{"device_id":%q,"configure":{"navigation":{"mode":"off"}},"commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":0}}}}]}`, id))
	}
	if len(families) != 3 {
		t.Fatalf("families %v, want the three arm families", families)
	}
}

// Simulated grips on two lab nodes of one host, told apart by
// --sim-index-base as their arms are, move apart: with the same motion
// each grip's hand follows its own script, so the gateway's clients do not
// see every node's grip rock, squeeze and click alike. Compared at the
// ticks both services recorded (each grip's script runs on its loop's ticks).
func TestSimIndexBaseSetsGripsMotionApart(t *testing.T) {
	for _, motion := range []string{"circle", "random"} {
		t.Run(motion, func(t *testing.T) {
			first, second := recordedGripOrientations(t, motion, 0), recordedGripOrientations(t, motion, 10)
			both, alike := 0, 0
			for tick, q := range first {
				if q2, ok := second[tick]; ok {
					both++
					if q == q2 {
						alike++
					}
				}
			}
			if both < 500 {
				t.Fatalf("the services recorded %d and %d grip states, %d at the same ticks: too few to compare", len(first), len(second), both)
			}
			if alike*2 > both {
				t.Fatalf("--sim-motion %s: the grips of --sim-index-base 0 and 10 were turned alike at %d of the %d ticks both recorded", motion, alike, both)
			}
		})
	}
}

// recordedGripOrientations records a service with one simulated grip at
// --sim-index-base base and returns the grip's orientation (w, x, y, z)
// by tick.
func recordedGripOrientations(t *testing.T, motion string, base int) map[uint64][4]float64 {
	t.Helper()
	f, _ := recordedRun(t, "--sim-arms", "0", "--sim-grips", "1", "--sim-motion", motion, "--sim-index-base", fmt.Sprint(base))
	out := map[uint64][4]float64{}
	for _, m := range f.Messages {
		if f.Channels[m.ChannelID].Metadata["kind"] != recording.KindState {
			continue
		}
		var st recording.State
		if err := json.Unmarshal(m.Data, &st); err != nil {
			t.Fatal(err)
		}
		if st.IsGrip() {
			out[st.Tick] = st.Orientation
		}
	}
	return out
}

// recordedRun runs a service with args (its simulated devices) recording
// from its start (--record) until 1000 messages are recorded, stops it and
// returns the recording and the devices it served.
func recordedRun(t *testing.T, args ...string) (*mcap.File, map[string]hw.Info) {
	t.Helper()
	dir := t.TempDir()
	o, err := parseFlags(append([]string{"--port", "0", "--legacy-port", "-1", "--events-port", "-1", "--hw-scan-period", "0",
		"--state-dir", filepath.Join(t.TempDir(), "state"), "--record", dir}, args...))
	if err != nil {
		t.Fatal(err)
	}
	sv, err := startService(context.Background(), o, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	devices := map[string]hw.Info{}
	for _, d := range sv.svc.Devices().All() {
		devices[d.ID] = d.Info
	}
	base := "http://" + sv.srv.Addr(transport.ListenerHTTP).String()
	hwtest.EventuallyNil(t, 20*time.Second, "1000 messages recorded", func() error {
		_, env := httpDo(t, "GET", base+"/recordings", "")
		if recs, _ := env["data"].([]any); len(recs) == 1 {
			if n, _ := hwtest.JSONPath(recs[0], "messages").(float64); n >= 1000 {
				return nil
			}
		}
		return fmt.Errorf("GET /recordings: %v", env)
	})
	if err := sv.stop(nil); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.mcap"))
	if len(files) != 1 {
		t.Fatalf("recordings: %v", files)
	}
	f, _, err := recording.Load(files[0])
	if err != nil {
		t.Fatal(err)
	}
	return f, devices
}

// A bad flag is one line: the error, and where the flags are listed, not
// the error buried above every flag of the subcommand (about 90 lines for
// serve; toursim). -h still lists them.
func TestBadFlagIsOneLine(t *testing.T) {
	for _, tt := range []struct {
		args      []string
		wantErr   string
		wantUsage bool
	}{
		{[]string{"--sim", "gadget=1"}, `invalid value "gadget=1" for flag -sim`, false},
		{[]string{"--nope"}, "flag provided but not defined: -nope", false},
		{[]string{"-h"}, flag.ErrHelp.Error(), true},
	} {
		fs := newFlagSet("serve")
		var o options
		fs.Var(&o.sim, "sim", "what to simulate")
		var out bytes.Buffer
		fs.SetOutput(&out)
		err := parseNoArgs(fs, tt.args)
		if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("%q: error %v, want it to say %q", tt.args, err, tt.wantErr)
		}
		if printed := out.String(); tt.wantUsage != strings.Contains(printed, "usage: hapticd serve") {
			t.Errorf("%q: printed %q; want the usage %v", tt.args, printed, tt.wantUsage)
		}
		if !tt.wantUsage && !strings.Contains(err.Error(), "hapticd serve -h lists the flags") {
			t.Errorf("%q: %v does not say where the flags are listed", tt.args, err)
		}
	}
}
