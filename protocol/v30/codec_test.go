package v30_test

import (
	"encoding/json"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/hapticd/hapticd/protocol"
	"github.com/hapticd/hapticd/protocol/v30"
)

func table(t testing.TB) *protocol.TypeTable {
	t.Helper()
	tt, err := protocol.NewTypeTable(map[string]string{"inverse3": "arm3"})
	if err != nil {
		t.Fatal(err)
	}
	return tt
}

func codes(errs []protocol.Error) []string {
	out := []string{}
	for _, e := range errs {
		out = append(out, string(e.Code)+"@"+e.Path)
	}
	sort.Strings(out)
	return out
}

// TestSameMessageBothFormats decodes the same content spelled in 3.x and
// 3.0 and expects the same result, paths aside.
func TestSameMessageBothFormats(t *testing.T) {
	tests := []struct {
		name   string
		v3x    string
		v30    string
		errors []string // 3.0 paths
		warns  []string
	}{
		{
			name: "force and configure",
			v3x:  `{"arm3":[{"device_id":"049D","commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":1.5}}},"configure":{"filters":{"damping":{"scalar":2}},"preset":{"preset":"arm_front"}}}]}`,
			v30:  `{"arm3":{"049D":{"commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":1.5}}},"configure":{"filters":{"damping":{"scalar":2}},"preset":{"preset":"arm_front"}}}}}`,
		},
		{
			name:  "precedence, aliases, session",
			v3x:   `{"session":{"configure":{"lease":{"ms":20}}},"inverse3":[{"device_id":"049D","commands":{"set_cursor_force":{"values":{"x":1,"y":0,"z":0}},"set_cursor_position":{"values":{"x":0,"y":0,"z":0.1}}}}],"grip":[{"device_id":"61548","commands":{"probe_orientation":{}}}]}`,
			v30:   `{"session":{"configure":{"lease":{"ms":20}}},"inverse3":{"049D":{"commands":{"set_cursor_force":{"values":{"x":1,"y":0,"z":0}},"set_cursor_position":{"values":{"x":0,"y":0,"z":0.1}}}}},"grip":{"61548":{"commands":{"probe_orientation":{}}}}}`,
			warns: []string{"command_ignored@inverse3.049D.commands.set_cursor_force"},
		},
		{
			name:   "HTTP-only key",
			v3x:    `{"arm3":[{"device_id":"049D","configure":{"handedness":"left"}}]}`,
			v30:    `{"arm3":{"049D":{"configure":{"handedness":"left"}}}}`,
			errors: []string{"http_only_key@arm3.049D.configure.handedness"},
		},
		{
			name:   "out of range",
			v3x:    `{"arm3":[{"device_id":"049D","configure":{"force_gate":{"gain":3}}}]}`,
			v30:    `{"arm3":{"049D":{"configure":{"force_gate":{"gain":3}}}}}`,
			errors: []string{"out_of_range@arm3.049D.configure.force_gate.gain"},
		},
		{
			name:   "every bad key is listed",
			v3x:    `{"arm3":[{"device_id":"049D","configure":{"handedness":"left","force_gate":{"gain":3},"basis":{"permutation":"XXY"}}}],"session":{"configure":{"lease":{"ms":1},"basis":{"permutation":"Q"}}}}`,
			v30:    `{"arm3":{"049D":{"configure":{"handedness":"left","force_gate":{"gain":3},"basis":{"permutation":"XXY"}}}},"session":{"configure":{"lease":{"ms":1},"basis":{"permutation":"Q"}}}}`,
			errors: []string{"http_only_key@arm3.049D.configure.handedness", "invalid_permutation@arm3.049D.configure.basis.permutation", "invalid_permutation@session.configure.basis.permutation", "out_of_range@arm3.049D.configure.force_gate.gain", "out_of_range@session.configure.lease.ms"},
		},
		{
			name: "effects and navigation",
			v3x:  `{"arm3":[{"device_id":"049D","effects":{"set":[{"id":"floor","type":"wall","position":{"x":0,"y":0,"z":0},"normal":{"x":0,"y":0,"z":1},"stiffness":2000}]},"configure":{"navigation":{"mode":"bubble"}}}]}`,
			v30:  `{"arm3":{"049D":{"effects":{"set":[{"id":"floor","type":"wall","position":{"x":0,"y":0,"z":0},"normal":{"x":0,"y":0,"z":1},"stiffness":2000}]},"configure":{"navigation":{"mode":"bubble"}}}}}`,
		},
		{
			name:   "bad effect",
			v3x:    `{"arm3":[{"device_id":"049D","effects":{"set":[{"id":"v","type":"vibration","frequency":2000,"amplitude":1}]}}]}`,
			v30:    `{"arm3":{"049D":{"effects":{"set":[{"id":"v","type":"vibration","frequency":2000,"amplitude":1}]}}}}`,
			errors: []string{"out_of_range@arm3.049D.effects.set[0].frequency"},
		},
	}
	types := table(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var a, b protocol.ClientMessage
			errA := protocol.DecodeClientMessage([]byte(tt.v3x), types, &a)
			errB := v30.DecodeClientMessage([]byte(tt.v30), types, &b)
			if got := codes(errB); !reflect.DeepEqual(got, nonNil(tt.errors)) {
				t.Fatalf("3.0 errors %v, want %v", got, tt.errors)
			}
			if got := codes(b.Warnings); !reflect.DeepEqual(got, nonNil(tt.warns)) {
				t.Fatalf("3.0 warnings %v, want %v", got, tt.warns)
			}
			if len(errA) != len(errB) || len(a.Warnings) != len(b.Warnings) {
				t.Fatalf("3.x gave %v %v", errA, a.Warnings)
			}
			if len(a.Devices) != len(b.Devices) {
				t.Fatalf("devices %d vs %d", len(a.Devices), len(b.Devices))
			}
			for i := range a.Devices {
				da, db := a.Devices[i], b.Devices[i]
				if db.Path != da.TypeKey+"."+da.DeviceID {
					t.Errorf("3.0 path %s", db.Path)
				}
				da.Path, db.Path = "", ""
				if !reflect.DeepEqual(da, db) {
					t.Errorf("device %d:\n3.x %+v\n3.0 %+v", i, da, db)
				}
			}
			if !reflect.DeepEqual(a.Session, b.Session) {
				t.Errorf("session %+v vs %+v", a.Session, b.Session)
			}
		})
	}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func TestDecode30Layout(t *testing.T) {
	types := table(t)
	tests := []struct {
		msg           string
		errors, warns []string
	}{
		{`{"arm3":[{"device_id":"049D"}]}`, []string{"invalid_value@arm3"}, nil},
		{`{"arm3":{"049D":[]}}`, []string{"invalid_value@arm3.049D"}, nil},
		{`{"arm3":{"":{}}}`, []string{"invalid_value@arm3."}, nil},
		{`{"arm3":{"049D":{"device_id":"0A11"}}}`, nil, []string{"unknown_field@arm3.049D.device_id"}},
		{`{"arm3":{"049D":{"device_id":"049D"}}}`, nil, nil},
		{`{"arm4":{}}`, nil, []string{"unknown_device_type@arm4"}},
		{`{}`, nil, nil},
		{`[]`, []string{"invalid_json@"}, nil},
	}
	for _, tt := range tests {
		var m protocol.ClientMessage
		errs := v30.DecodeClientMessage([]byte(tt.msg), types, &m)
		if got := codes(errs); !reflect.DeepEqual(got, nonNil(tt.errors)) {
			t.Errorf("%s: errors %v, want %v", tt.msg, got, tt.errors)
		}
		if got := codes(m.Warnings); !reflect.DeepEqual(got, nonNil(tt.warns)) {
			t.Errorf("%s: warnings %v, want %v", tt.msg, got, tt.warns)
		}
	}
}

func sampleFrame() *protocol.Frame {
	view := &protocol.DeviceView{
		Info:    protocol.DeviceInfo{ID: "049D", UUID: "u-049d", Major: 7, Minor: 2},
		Device:  protocol.DefaultDeviceConfig(),
		Session: protocol.DefaultSessionConfig(),
		Basis:   protocol.Basis{Permutation: "XYZ"},
		Mount:   protocol.Transform{Rotation: protocol.Quat{W: 1}, Scale: protocol.Vec3{X: 1, Y: 1, Z: 1}},
	}
	return &protocol.Frame{
		SessionID: 9,
		Arms: []protocol.ArmFrame{
			{DeviceID: "049D", Config: view, State: protocol.ArmState{CursorPosition: protocol.Vec3{X: 0.1}, ControlMode: protocol.ControlPosition}},
			{DeviceID: "0A11", State: protocol.ArmState{ControlMode: protocol.ControlIdle}},
		},
		Grips:    []protocol.GripFrame{{DeviceID: "61548", State: protocol.GripState{Hall: 0.5}}},
		Session:  &protocol.SessionView{Basis: protocol.Basis{Permutation: "XYZ"}, LeaseMs: 100},
		Warnings: []protocol.Error{{Code: protocol.CodeUnknownKey, Message: "m", Path: "arm3.049D.configure.x"}},
	}
}

// TestFrameRoundTrip checks that the 3.0 frame carries the same content as
// the 3.x frame, respelled: objects keyed by id, firmware/hardware versions
// and state.mode.
func TestFrameRoundTrip(t *testing.T) {
	types := table(t)
	f := sampleFrame()
	out30 := v30.AppendFrame(nil, f, types)
	out3x := protocol.AppendFrame(nil, f, types)
	if !json.Valid(out30) {
		t.Fatalf("not valid JSON: %s", out30)
	}
	var doc30 map[string]any
	var doc3x map[string]any
	if err := json.Unmarshal(out30, &doc30); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(out3x, &doc3x); err != nil {
		t.Fatal(err)
	}
	// Respell the 3.x document as 3.0 and compare.
	for _, key := range []string{"inverse3", "verse_grip", "wireless_verse_grip"} {
		byID := map[string]any{}
		for _, el := range doc3x[key].([]any) {
			dev := el.(map[string]any)
			id := dev["device_id"].(string)
			delete(dev, "device_id")
			if cfg, ok := dev["config"].(map[string]any); ok {
				info := cfg["device_info"].(map[string]any)
				info["firmware_version"], info["hardware_version"] = info["major_version"], info["minor_version"]
				delete(info, "major_version")
				delete(info, "minor_version")
			}
			if st, ok := dev["state"].(map[string]any); ok && key == "inverse3" {
				st["mode"] = st["control_mode"]
				delete(st, "control_mode")
			}
			byID[id] = dev
		}
		doc3x[key] = byID
	}
	if !reflect.DeepEqual(doc30, doc3x) {
		t.Fatalf("3.0 frame\n%s\ndiffers from respelled 3.x\n%s", out30, out3x)
	}
	if !strings.Contains(string(out30), `"inverse3":{"049D":{"config":{"type":"inverse3"`) ||
		!strings.Contains(string(out30), `"firmware_version":7,"hardware_version":2`) ||
		!strings.Contains(string(out30), `"mode":"position"`) {
		t.Fatalf("3.0 spellings missing: %s", out30)
	}
}

func TestAllocations(t *testing.T) {
	types := table(t)
	f := sampleFrame()
	buf := v30.AppendFrame(nil, f, types)
	if a := testing.AllocsPerRun(100, func() { buf = v30.AppendFrame(buf[:0], f, types) }); a != 0 {
		t.Errorf("AppendFrame: %v allocations, want 0", a)
	}
	msg := []byte(`{"arm3":{"049D":{"commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":1.5}}}}}}`)
	var m protocol.ClientMessage
	v30.DecodeClientMessage(msg, types, &m)
	if a := testing.AllocsPerRun(100, func() { v30.DecodeClientMessage(msg, types, &m) }); a != 0 {
		t.Errorf("DecodeClientMessage: %v allocations, want 0", a)
	}
}

func BenchmarkDecode30(b *testing.B) {
	types := table(b)
	msg := []byte(`{"arm3":{"049D":{"commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":1.5}}}}}}`)
	var m protocol.ClientMessage
	b.ReportAllocs()
	b.SetBytes(int64(len(msg)))
	for b.Loop() {
		v30.DecodeClientMessage(msg, types, &m)
	}
}

func BenchmarkAppendFrame30(b *testing.B) {
	types := table(b)
	f := sampleFrame()
	buf := v30.AppendFrame(nil, f, types)
	b.ReportAllocs()
	b.SetBytes(int64(len(buf)))
	for b.Loop() {
		buf = v30.AppendFrame(buf[:0], f, types)
	}
}

func TestAppendFrameWithElements30(t *testing.T) {
	f := &protocol.Frame{SessionID: 2,
		Arms:  []protocol.ArmFrame{{DeviceID: "049D", State: protocol.ArmState{CursorPosition: protocol.Vec3{X: 0.25}, ControlMode: protocol.ControlForce}}},
		Grips: []protocol.GripFrame{{DeviceID: "1A2B", Link: protocol.LinkWired, State: protocol.GripState{Hall: 0.5, Buttons: protocol.GripButtons{A: true}}}}}
	want := string(v30.AppendFrame(nil, f, nil))
	f.Arms[0].Element = v30.Codec{}.AppendArmElement(nil, &f.Arms[0])
	f.Grips[0].Element = v30.Codec{}.AppendGripElement(nil, &f.Grips[0])
	// The elements must carry the id (the key of a 3.0 element) and state.
	f.Arms[0].DeviceID, f.Arms[0].State = "", protocol.ArmState{}
	f.Grips[0].DeviceID, f.Grips[0].State = "", protocol.GripState{}
	if got := string(v30.AppendFrame(nil, f, nil)); got != want {
		t.Fatalf("with bodies %s, want %s", got, want)
	}
}

// TestRepeatedDeviceIDCountsByTheLast: a device id given twice in a 3.0
// collection is one device entry, the last, in a small object (scanned
// forward) and in a large one (counted) alike.
func TestRepeatedDeviceIDCountsByTheLast(t *testing.T) {
	force := `{"commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":2}}}}`
	for _, others := range []int{0, 100} {
		var b strings.Builder
		b.WriteString(`{"arm3":{"049D":` + force)
		for i := range others {
			b.WriteString(`,"` + strings.Repeat("F", 3) + string(rune('A'+i%26)) + string(rune('a'+i/26)) + `":{}`)
		}
		b.WriteString(`,"049D":{}}}`)
		var m protocol.ClientMessage
		if errs := v30.DecodeClientMessage([]byte(b.String()), table(t), &m); len(errs) > 0 {
			t.Fatalf("%d other ids: %v", others, errs)
		}
		n := 0
		for _, e := range m.Devices {
			if e.DeviceID != "049D" {
				continue
			}
			n++
			if e.Command.Kind != protocol.CmdNone {
				t.Errorf("%d other ids: 049D got %v, want the last occurrence's (none)", others, e.Command.Kind)
			}
		}
		if n != 1 {
			t.Errorf("%d other ids: 049D decoded %d times, want once", others, n)
		}
	}
}

// A 3.0 client's mistakes are explained in its own layout: a 3.x device
// array in an error for a message keyed by id told it to send what its
// port refuses (tourmig).
func TestErrorsShowThe30Layout(t *testing.T) {
	for _, tc := range []struct{ msg, refused string }{
		{`[]`, `[...]`},
		{`{"arm3":{"049D":5}}`, `"device_id"`},
	} {
		var m protocol.ClientMessage
		errs := v30.DecodeClientMessage([]byte(tc.msg), table(t), &m)
		if len(errs) != 1 {
			t.Fatalf("%s: errors %v, want one", tc.msg, errs)
		}
		if strings.Contains(errs[0].Message, tc.refused) {
			t.Errorf("%s: %q shows the 3.x layout (%s)", tc.msg, errs[0].Message, tc.refused)
		}
	}
}
