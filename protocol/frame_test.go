package protocol

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// sampleFrame is an inventory-like frame: one arm and one grip with config,
// the session view, an error and a warning.
func sampleFrame() *Frame {
	damping := DampingScalar(1.5)
	arm := &DeviceView{
		Info:    DeviceInfo{ID: "049D", UUID: "5f1c-049d", Port: "/dev/ttyACM0", Model: 4, Major: 7, Minor: 2},
		Device:  DefaultDeviceConfig(),
		Session: SessionConfig{Preset: "arm_front_centered", Mount: IdentityTransformForTest(), Damping: damping, ForceGate: ForceGate{Gain: 0.3}},
		Basis:   Basis{Permutation: "XZY"},
		Mount:   Transform{Position: Vec3{X: 0, Y: -0.1, Z: -0.15}, Rotation: Quat{W: 1}, Scale: Vec3{X: 1, Y: 1, Z: 1}},
	}
	grip := &DeviceView{
		Info:    DeviceInfo{ID: "61548", UUID: "grip-61548", Major: 1, Minor: 0},
		Session: DefaultSessionConfig(),
		Basis:   Basis{Permutation: "XYZ"},
		Mount:   IdentityTransformForTest(),
	}
	return &Frame{
		SessionID: 3,
		Arms: []ArmFrame{{
			DeviceID: "049D",
			Config:   arm,
			State: ArmState{
				CursorPosition:     Vec3{X: 0.01, Y: -0.02, Z: 0.125},
				CursorVelocity:     Vec3{X: 1e-7},
				AngularPosition:    Angles3{A0: 10, A1: -20.5, A2: 30},
				BodyOrientation:    Quat{W: 1},
				CurrentCursorForce: Vec3{Z: 1.5},
				ControlMode:        ControlForce,
				Transform:          Transform{Position: Vec3{X: 0.5}, Rotation: Quat{W: 1}, Scale: Vec3{X: 1, Y: 1, Z: 1}},
			},
			Status: ArmStatus{Calibrated: true, InUse: true, Ready: true, Started: true, PowerSupply: true},
		}},
		Grips: []GripFrame{{
			DeviceID: "61548",
			Config:   grip,
			State:    GripState{Orientation: Quat{W: 0.5, X: 0.5, Y: 0.5, Z: 0.5}, Buttons: GripButtons{A: true}, Hall: 0.25, Battery: 0.9},
			Status:   GripStatus{Connected: true, Awake: true, Ready: true},
		}},
		Session:  &SessionView{Profile: &Profile{Name: "co.example.app:main"}, Basis: Basis{Permutation: "XYZ"}, LeaseMs: 100},
		Errors:   []Error{{Code: CodeDeviceBusy, Message: "another session controls 049D", Path: "arm3[0]"}},
		Warnings: []Error{{Code: CodeUnknownKey, Message: `unknown key "x": ignored`}},
	}
}

const goldenArm = `{"device_id":"049D","config":{"type":"%TYPE%","port":"/dev/ttyACM0","device_info":{"id":"049D","uuid":"5f1c-049d","major_version":7,"minor_version":2,"device_type":4},"extended_device_id":"5f1c-049d","streaming_mode":"USB","handedness":"right","torque_scaling":{"enabled":true},"gravity_compensation":{"enabled":true,"scaling_factor":1},"home_return":{"enabled":false},"force_clamp":{"max_force":10},"force_slew_limit":{"max_rate":5000},"passivity_controller":{"enabled":true,"scope":"rendered"},"preset":"arm_front_centered","basis":{"permutation":"XZY"},"mount":{"position":{"x":0,"y":-0.1,"z":-0.15},"rotation":{"w":1,"x":0,"y":0,"z":0},"scale":{"x":1,"y":1,"z":1}},"filters":{"damping":{"scalar":1.5},"force_gate":{"gain":0.3}},"navigation":{"mode":"off","bubble":{"center":{"position":{"x":0,"y":0,"z":0},"mode":"cursor","drift_rate":0},"shape":{"primitive":"sphere","parameters":{"r":0.05}},"velocity_zone_width":0.03,"speed_gain":4,"max_speed":0.5,"easing":"linear","dead_zone_damping":1,"velocity_zone_stiffness":50,"wall_stiffness":800,"wall_damping":4,"collision_detection":{"hysteresis":0.002}}}},"state":{"cursor_position":{"x":0.01,"y":-0.02,"z":0.125},"cursor_velocity":{"x":1e-07,"y":0,"z":0},"angular_position":{"a0":10,"a1":-20.5,"a2":30},"angular_velocity":{"a0":0,"a1":0,"a2":0},"body_orientation":{"w":1,"x":0,"y":0,"z":0},"current_cursor_force":{"x":0,"y":0,"z":1.5},"current_cursor_position":{"x":0,"y":0,"z":0},"current_angular_position":{"a0":0,"a1":0,"a2":0},"current_angular_torques":{"a0":0,"a1":0,"a2":0},"transform":{"position":{"x":0.5,"y":0,"z":0}},"control_mode":"force","control_domain":"cartesian","calibration_state":0},"status":{"calibrated":true,"in_use":true,"ready":true,"started":true,"power_supply":true}}`

const goldenGrip = `{"device_id":"61548","config":{"type":"%TYPE%","port":"","device_info":{"id":"61548","uuid":"grip-61548","major_version":1,"minor_version":0},"preset":"defaults","basis":{"permutation":"XYZ"},"mount":{"position":{"x":0,"y":0,"z":0},"rotation":{"w":1,"x":0,"y":0,"z":0},"scale":{"x":1,"y":1,"z":1}}},"state":{"orientation":{"w":0.5,"x":0.5,"y":0.5,"z":0.5},"buttons":{"a":true,"b":false,"c":false},"hall":0.25,"battery_level":0.9},"status":{"connected":true,"awake":true,"ready":true}}`

const goldenTail = `"session":{"config":{"profile":{"name":"co.example.app:main"},"basis":{"permutation":"XYZ"},"lease":{"ms":100}}},"errors":[{"code":"device_busy","message":"another session controls 049D","path":"arm3[0]"}],"warnings":[{"code":"unknown_key","message":"unknown key \"x\": ignored"}]}`

// referenceTable writes the reference's names (--type-names reference).
func referenceTable(t testing.TB) *TypeTable {
	t.Helper()
	tt, err := NewNamedTypeTable(NamingReference, nil)
	if err != nil {
		t.Fatal(err)
	}
	return tt
}

func TestAppendFrameGolden(t *testing.T) {
	for _, tt := range []struct {
		naming Naming
		want   string
	}{
		{NamingReference, `{"session_id":3,"arm3":[` + strings.ReplaceAll(goldenArm, "%TYPE%", "arm3") +
			`],"grip":[` + strings.ReplaceAll(goldenGrip, "%TYPE%", "grip") + `],` + goldenTail},
		{NamingHaply, `{"session_id":3,"inverse3":[` + strings.ReplaceAll(goldenArm, "%TYPE%", "inverse3") +
			`],"verse_grip":[],"wireless_verse_grip":[` + strings.ReplaceAll(goldenGrip, "%TYPE%", "wireless_verse_grip") + `],` + goldenTail},
	} {
		types, err := NewNamedTypeTable(tt.naming, nil)
		if err != nil {
			t.Fatal(err)
		}
		got := string(AppendFrame(nil, sampleFrame(), types))
		if got != tt.want {
			t.Fatalf("%v frame\n%s\nwant\n%s", tt.naming, got, tt.want)
		}
		if !json.Valid([]byte(got)) {
			t.Fatal("frame is not valid JSON")
		}
	}
}

// Every device appears exactly once, under the name of its collection,
// whatever aliases are configured: aliases are input names only.
func TestAppendFrameEachDeviceOnce(t *testing.T) {
	f := sampleFrame()
	wired := f.Grips[0]
	wired.DeviceID, wired.Link = "7", LinkWired
	f.Grips[0].Link = LinkWireless
	f.Grips = append(f.Grips, wired)
	for _, tt := range []struct {
		naming Naming
		want   map[string][]string // collection → device ids
	}{
		{NamingHaply, map[string][]string{"inverse3": {"049D"}, "verse_grip": {"7"}, "wireless_verse_grip": {"61548"}}},
		{NamingReference, map[string][]string{"arm3": {"049D"}, "grip": {"61548", "7"}}},
	} {
		types, err := NewNamedTypeTable(tt.naming, map[string]string{"haptic": "arm3", "handle": "grip"})
		if err != nil {
			t.Fatal(err)
		}
		out := AppendFrame(nil, f, types)
		var doc map[string]json.RawMessage
		if err := json.Unmarshal(out, &doc); err != nil {
			t.Fatal(err)
		}
		// The wired grip, and only it, also reports its main button as
		// the wired VerseGrip's "button".
		if n := strings.Count(string(out), `"button":true`); n != 1 {
			t.Errorf("%v: %d grips report \"button\", want the wired one", tt.naming, n)
		}
		got := map[string][]string{}
		for key, raw := range doc {
			var list []struct {
				DeviceID string `json:"device_id"`
				Config   struct{ Type string }
			}
			if key == "errors" || key == "warnings" || json.Unmarshal(raw, &list) != nil {
				continue // not a device collection
			}
			got[key] = []string{}
			for _, d := range list {
				got[key] = append(got[key], d.DeviceID)
				if d.Config.Type != key {
					t.Errorf("%v: %s in %s has config.type %q", tt.naming, d.DeviceID, key, d.Config.Type)
				}
			}
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%v: collections %v, want %v", tt.naming, got, tt.want)
		}
	}
}

func TestAppendFrameShapes(t *testing.T) {
	tests := []struct {
		name  string
		frame Frame
		want  string
	}{
		{"inventory of nothing", Frame{SessionID: 1}, `{"session_id":1,"arm3":[],"grip":[]}`},
		{"GET /devices omits session_id", Frame{}, `{"arm3":[],"grip":[]}`},
		{"state frame without config", Frame{SessionID: 2, Arms: []ArmFrame{{DeviceID: "0A11", State: ArmState{ControlMode: ControlAngle, ControlDomain: DomainAngular}}}},
			`{"session_id":2,"arm3":[{"device_id":"0A11","state":{"cursor_position":{"x":0,"y":0,"z":0},"cursor_velocity":{"x":0,"y":0,"z":0},"angular_position":{"a0":0,"a1":0,"a2":0},"angular_velocity":{"a0":0,"a1":0,"a2":0},"body_orientation":{"w":0,"x":0,"y":0,"z":0},"current_cursor_force":{"x":0,"y":0,"z":0},"current_cursor_position":{"x":0,"y":0,"z":0},"current_angular_position":{"a0":0,"a1":0,"a2":0},"current_angular_torques":{"a0":0,"a1":0,"a2":0},"transform":{},"control_mode":"angle","control_domain":"angular","calibration_state":0},"status":{"calibrated":false,"in_use":false,"ready":false,"started":false,"power_supply":false}}],"grip":[]}`},
		{"profile null", Frame{SessionID: 4, Session: &SessionView{Basis: Basis{"-XZY"}, LeaseMs: 50}},
			`{"session_id":4,"arm3":[],"grip":[],"session":{"config":{"profile":null,"basis":{"permutation":"-XZY"},"lease":{"ms":50}}}}`},
		{"non-finite numbers stay JSON", Frame{Grips: []GripFrame{{DeviceID: "1", State: GripState{Hall: math.NaN(), Battery: math.Inf(1)}}}},
			`{"arm3":[],"grip":[{"device_id":"1","state":{"orientation":{"w":0,"x":0,"y":0,"z":0},"buttons":{"a":false,"b":false,"c":false},"hall":0,"battery_level":0},"status":{"connected":false,"awake":false,"ready":false}}]}`},
	}
	for _, tt := range tests {
		got := string(AppendFrame(nil, &tt.frame, referenceTable(t)))
		if got != tt.want {
			t.Errorf("%s:\n%s\nwant\n%s", tt.name, got, tt.want)
		}
		if !json.Valid([]byte(got)) {
			t.Errorf("%s: not valid JSON", tt.name)
		}
	}
}

func TestAppendStringEscapes(t *testing.T) {
	for _, s := range []string{"", "plain", `q"uote\back`, "tab\tnl\n\x01", "<script>&", "café 😀", "bad\xffutf8", "\u2028\u2029"} {
		out := AppendString(nil, s)
		var back string
		if err := json.Unmarshal(out, &back); err != nil {
			t.Fatalf("%q → %s: %v", s, out, err)
		}
		want := strings.ToValidUTF8(s, "\uFFFD")
		if back != want {
			t.Errorf("%q → %s → %q", s, out, back)
		}
	}
}

// TestAppendStringASCIIBytes pins the exact output for every ASCII byte
// between two plain ones: the bytes frames carry must not change with the
// encoder's speed-ups.
func TestAppendStringASCIIBytes(t *testing.T) {
	for c := byte(0); c < utf8.RuneSelf; c++ {
		var esc string
		switch {
		case c == '"' || c == '\\':
			esc = `\` + string(c)
		case c == '\n':
			esc = `\n`
		case c == '\r':
			esc = `\r`
		case c == '\t':
			esc = `\t`
		case c < 0x20 || c == '<' || c == '>' || c == '&':
			esc = fmt.Sprintf(`\u%04x`, c)
		default:
			esc = string(c)
		}
		want := `"a` + esc + `b"`
		if got := string(AppendString(nil, "a"+string(c)+"b")); got != want {
			t.Errorf("byte %#02x: got %s, want %s", c, got, want)
		}
	}
}

func TestAppendFrameAllocations(t *testing.T) {
	types := aliasTable(t)
	f := sampleFrame()
	// A state frame for 8 arms with config, as a full-state frame.
	for i := 0; i < 7; i++ {
		f.Arms = append(f.Arms, f.Arms[0])
	}
	buf := AppendFrame(nil, f, types)
	allocs := testing.AllocsPerRun(200, func() {
		buf = AppendFrame(buf[:0], f, types)
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per frame, want 0", allocs)
	}
	// An arm with effects and navigation: its proxies and centre written
	// exactly cost no allocation either.
	ext := extArmFrame()
	buf = AppendFrame(buf[:0], ext, types)
	if allocs := testing.AllocsPerRun(200, func() { buf = AppendFrame(buf[:0], ext, types) }); allocs != 0 {
		t.Fatalf("%v allocations per frame with extensions, want 0", allocs)
	}
}

func TestFrameDecodesWithEncodingJSON(t *testing.T) {
	// A client using encoding/json reads what the encoder wrote.
	out := AppendFrame(nil, sampleFrame(), referenceTable(t))
	var doc struct {
		SessionID uint64 `json:"session_id"`
		Arm3      []struct {
			DeviceID string `json:"device_id"`
			Config   struct {
				Type    string `json:"type"`
				Filters struct {
					Damping struct{ Scalar float64 } `json:"damping"`
				} `json:"filters"`
				Mount Transform `json:"mount"`
			} `json:"config"`
			State struct {
				CursorPosition Vec3   `json:"cursor_position"`
				ControlMode    string `json:"control_mode"`
			} `json:"state"`
		} `json:"arm3"`
		Errors []Error `json:"errors"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatal(err)
	}
	f := sampleFrame()
	a := doc.Arm3[0]
	if doc.SessionID != 3 || a.DeviceID != "049D" || a.Config.Type != "arm3" || a.Config.Filters.Damping.Scalar != 1.5 ||
		a.Config.Mount != f.Arms[0].Config.Mount || a.State.CursorPosition != f.Arms[0].State.CursorPosition ||
		a.State.ControlMode != "force" || !reflect.DeepEqual(doc.Errors, f.Errors) {
		t.Fatalf("%+v", doc)
	}
}

// Measured state goes out at float32 precision (what devices measure with);
// configuration echoes exactly what was set.
func TestFramePrecision(t *testing.T) {
	f := sampleFrame()
	f.Arms[0].State.CursorPosition.X = 0.20014484226703644
	f.Arms[0].Config.Session.Damping = DampingScalar(0.123456789012345)
	out := string(AppendFrame(nil, f, nil))
	for _, want := range []string{`"cursor_position":{"x":0.20014484,`, `"damping":{"scalar":0.123456789012345}`} {
		if !strings.Contains(out, want) {
			t.Fatalf("frame lacks %s:\n%s", want, out)
		}
	}
	f.Arms[0].State.CursorPosition.X = 1e300 // beyond float32: still finite and right
	if out := string(AppendFrame(nil, f, nil)); !strings.Contains(out, `"x":1e+300`) {
		t.Fatalf("huge value: %s", out)
	}
}

// A frame built from pre-encoded elements is byte for byte the frame
// encoded from the states.
func TestAppendFrameWithElements(t *testing.T) {
	f := sampleFrame()
	f.Arms[0].Config, f.Grips[0].Config = nil, nil
	want := string(AppendFrame(nil, f, nil))
	var c Codec
	f.Arms[0].Element = c.AppendArmElement(nil, &f.Arms[0])
	f.Grips[0].Element = c.AppendGripElement(nil, &f.Grips[0])
	// The elements must carry the id, state and status.
	f.Arms[0].DeviceID, f.Grips[0].DeviceID = "", ""
	f.Arms[0].State, f.Grips[0].State = ArmState{}, GripState{}
	f.Arms[0].Status, f.Grips[0].Status = ArmStatus{}, GripStatus{}
	if got := string(AppendFrame(nil, f, nil)); got != want {
		t.Fatalf("with bodies\n%s\nwant\n%s", got, want)
	}
}

// TestAppendFrameSplice: a frame that splices its marked element leaves
// exactly that element's bytes out, at SplicedAt, in both spellings, and
// copies any later marked element; a frame that does not splice copies it.
func TestAppendFrameSplice(t *testing.T) {
	for _, sp := range []Spelling{Spelling3x(), {KeyedByID: true, MajorVersion: "major", MinorVersion: "minor", ControlMode: "mode"}} {
		base := sampleFrame()
		base.Arms[0].Config = nil
		second := base.Arms[0]
		second.DeviceID = "04A0"
		base.Arms = append(base.Arms, second)
		want := string(AppendFrameAs(nil, base, nil, sp))
		run := AppendArmElement(nil, &base.Arms[0], sp)
		cases := []struct {
			name           string
			splice, marked bool
			wantAt         bool
		}{
			{"spliced", true, true, true},
			{"not asked", false, true, false},
			{"nothing marked", true, false, false},
		}
		for _, c := range cases {
			f := *base
			f.Arms = append([]ArmFrame(nil), base.Arms...)
			f.Arms[0] = ArmFrame{Element: run, Spliced: c.marked}
			// A second marked element is copied: one splice per frame.
			f.Arms[1].Element, f.Arms[1].Spliced = AppendArmElement(nil, &base.Arms[1], sp), c.marked
			f.Splice = c.splice
			got := AppendFrameAs([]byte("xx")[:0], &f, nil, sp)
			if !c.wantAt {
				if (c.splice && f.SplicedAt != -1) || string(got) != want {
					t.Fatalf("%v %s: SplicedAt %d, frame\n%s\nwant\n%s", sp.KeyedByID, c.name, f.SplicedAt, got, want)
				}
				continue
			}
			if f.SplicedAt <= 0 || f.SplicedAt > len(got) {
				t.Fatalf("%v %s: SplicedAt %d in a %d-byte encoding", sp.KeyedByID, c.name, f.SplicedAt, len(got))
			}
			whole := string(got[:f.SplicedAt]) + string(run) + string(got[f.SplicedAt:])
			if whole != want {
				t.Fatalf("%v %s: head, element and tail\n%s\nwant\n%s", sp.KeyedByID, c.name, whole, want)
			}
		}
	}
}

func TestAppendErrorEnvelope(t *testing.T) {
	for _, e := range []*Error{
		{Code: CodeOutOfRange, Message: `gain 1.5 is out of range 0..1`, Path: "gain"},
		{Code: CodeUnknownRoute, Message: "no route \"/x\"\n"},
	} {
		var got map[string]any
		if err := json.Unmarshal(AppendErrorEnvelope(nil, e), &got); err != nil {
			t.Fatalf("%+v: not JSON: %v", e, err)
		}
		if got["ok"] != false || got["error"] != e.Message || got["code"] != string(e.Code) {
			t.Fatalf("envelope %v for %+v", got, e)
		}
		if _, has := got["path"]; has != (e.Path != "") {
			t.Fatalf("path present=%v for %+v", has, e)
		}
	}
}

// TestNumbersAreWrittenAsStrconvWritesThem: the whole-number shortcut of
// appendNumber writes exactly what strconv's shortest form writes, at both
// precisions, at and around its limits (-0 stays "-0"; a million switches
// to the exponent form).
func TestNumbersAreWrittenAsStrconvWritesThem(t *testing.T) {
	values := []float64{0, math.Copysign(0, -1), 1, -1, 2, 42, -42, 0.5, -0.25, 1.5,
		999999, -999999, 1e6, -1e6, 1e6 + 1, 123456, 16777217, 1e21, -1e21, 1e300,
		0.1, 1e-7, math.MaxInt64, math.MinInt64, 9.223372036854776e18, math.MaxFloat32 * 2,
		0.99999999, -0.99999999, 1.0000001, 999999.5, 999999.99}
	for _, bits := range []int{exact, measured} {
		for _, v := range values {
			strconvBits := bits
			if bits == measured && math.Abs(v) > math.MaxFloat32 {
				strconvBits = exact // appendNumber's rule for what float32 cannot hold
			}
			if got, want := string(appendNumber(nil, v, bits)), strconv.FormatFloat(v, 'g', -1, strconvBits); got != want {
				t.Errorf("appendNumber(%v, %d bits) = %s, strconv writes %s", v, bits, got, want)
			}
		}
	}
}

// TestCollectionKeysNeedNoEscaping: AppendFrameAs copies each collection's
// key between quotes without escaping it, which is right only while every
// key of the naming table is written as itself.
func TestCollectionKeysNeedNoEscaping(t *testing.T) {
	for n, list := range outputs {
		for _, c := range list {
			if got, want := string(AppendString(nil, c.Key)), `"`+c.Key+`"`; got != want {
				t.Errorf("naming %d: key %s is written as %s", n, want, got)
			}
		}
	}
}
