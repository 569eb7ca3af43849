package protocol

import (
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
)

func aliasTable(t testing.TB) *TypeTable {
	t.Helper()
	tt, err := NewTypeTable(map[string]string{"inverse3": "arm3", "verse_grip": "grip"})
	if err != nil {
		t.Fatal(err)
	}
	return tt
}

func codesAt(errs []Error) []string {
	out := []string{}
	for _, e := range errs {
		out = append(out, string(e.Code)+"@"+e.Path)
	}
	sort.Strings(out)
	return out
}

func TestDecodeClientMessage(t *testing.T) {
	tests := []struct {
		name     string
		msg      string
		errors   []string // code@path, sorted
		warnings []string
		devices  []DeviceEntry // compared without Configure when nil there
		check    func(t *testing.T, m *ClientMessage)
	}{
		{
			name:    "force with vector",
			msg:     `{"arm3":[{"device_id":"049D","commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":1.5}}}}]}`,
			devices: []DeviceEntry{{Type: TypeArm, TypeKey: "arm3", Path: "arm3[0]", DeviceID: "049D", Command: DeviceCommand{Kind: CmdSetCursorForce, Vec: Vec3{Z: 1.5}}}},
		},
		{
			name:    "force with values",
			msg:     `{"arm3":[{"device_id":"049D","commands":{"set_cursor_force":{"values":{"x":1,"y":-2,"z":0.5}}}}]}`,
			devices: []DeviceEntry{{Type: TypeArm, TypeKey: "arm3", Path: "arm3[0]", DeviceID: "049D", Command: DeviceCommand{Kind: CmdSetCursorForce, Vec: Vec3{X: 1, Y: -2, Z: 0.5}}}},
		},
		{
			name:     "vector wins over values",
			msg:      `{"arm3":[{"device_id":"049D","commands":{"set_cursor_force":{"values":{"x":9,"y":9,"z":9},"vector":{"x":1,"y":0,"z":0}}}}]}`,
			warnings: []string{"unknown_field@arm3[0].commands.set_cursor_force.values"},
			devices:  []DeviceEntry{{Type: TypeArm, TypeKey: "arm3", Path: "arm3[0]", DeviceID: "049D", Command: DeviceCommand{Kind: CmdSetCursorForce, Vec: Vec3{X: 1}}}},
		},
		{
			name:    "position with values",
			msg:     `{"arm3":[{"device_id":"049D","commands":{"set_cursor_position":{"values":{"x":0.1,"y":0.2,"z":0.3}}}}]}`,
			devices: []DeviceEntry{{Type: TypeArm, TypeKey: "arm3", Path: "arm3[0]", DeviceID: "049D", Command: DeviceCommand{Kind: CmdSetCursorPosition, Vec: Vec3{X: 0.1, Y: 0.2, Z: 0.3}}}},
		},
		{
			name: "precedence: position beats everything",
			msg: `{"arm3":[{"device_id":"049D","commands":{
				"set_angular_torques":{"torques":{"a0":1,"a1":2,"a2":3}},
				"set_cursor_force":{"vector":{"x":1,"y":1,"z":1}},
				"set_angular_position":{"angles":{"a0":10,"a1":20,"a2":30}},
				"set_cursor_position":{"position":{"x":0,"y":0.1,"z":0}}}}]}`,
			warnings: []string{
				"command_ignored@arm3[0].commands.set_angular_position",
				"command_ignored@arm3[0].commands.set_angular_torques",
				"command_ignored@arm3[0].commands.set_cursor_force",
			},
			devices: []DeviceEntry{{Type: TypeArm, TypeKey: "arm3", Path: "arm3[0]", DeviceID: "049D", Command: DeviceCommand{Kind: CmdSetCursorPosition, Vec: Vec3{Y: 0.1}}}},
		},
		{
			name: "precedence: angular position beats force and torques",
			msg: `{"arm3":[{"device_id":"049D","commands":{"set_cursor_force":{"vector":{"x":1,"y":1,"z":1}},
				"set_angular_position":{"angles":{"a0":10,"a1":20,"a2":30}}}}]}`,
			warnings: []string{"command_ignored@arm3[0].commands.set_cursor_force"},
			devices:  []DeviceEntry{{Type: TypeArm, TypeKey: "arm3", Path: "arm3[0]", DeviceID: "049D", Command: DeviceCommand{Kind: CmdSetAngularPosition, Angles: Angles3{A0: 10, A1: 20, A2: 30}}}},
		},
		{
			name: "precedence: force beats torques",
			msg: `{"arm3":[{"device_id":"049D","commands":{"set_angular_torques":{"torques":{"a0":1,"a1":2,"a2":3}},
				"set_cursor_force":{"vector":{"x":1,"y":1,"z":1}}}}]}`,
			warnings: []string{"command_ignored@arm3[0].commands.set_angular_torques"},
			devices:  []DeviceEntry{{Type: TypeArm, TypeKey: "arm3", Path: "arm3[0]", DeviceID: "049D", Command: DeviceCommand{Kind: CmdSetCursorForce, Vec: Vec3{X: 1, Y: 1, Z: 1}}}},
		},
		{
			name:    "torques alone",
			msg:     `{"arm3":[{"device_id":"049D","commands":{"set_angular_torques":{"torques":{"a0":1,"a1":2,"a2":3}}}}]}`,
			devices: []DeviceEntry{{Type: TypeArm, TypeKey: "arm3", Path: "arm3[0]", DeviceID: "049D", Command: DeviceCommand{Kind: CmdSetAngularTorques, Angles: Angles3{A0: 1, A1: 2, A2: 3}}}},
		},
		{
			name: "probes; a control command outranks a probe",
			msg: `{"arm3":[{"device_id":"049D","commands":{"probe_position":{}}},
				{"device_id":"0A11","commands":{"probe_position":{},"set_cursor_force":{"vector":{"x":0,"y":0,"z":0}}}}],
				"grip":[{"device_id":"61548","commands":{"probe_orientation":{}}}]}`,
			devices: []DeviceEntry{
				{Type: TypeArm, TypeKey: "arm3", Path: "arm3[0]", DeviceID: "049D", Command: DeviceCommand{Kind: CmdProbePosition}},
				{Type: TypeArm, TypeKey: "arm3", Path: "arm3[1]", DeviceID: "0A11", Command: DeviceCommand{Kind: CmdSetCursorForce}},
				{Type: TypeGrip, TypeKey: "grip", Path: "grip[0]", DeviceID: "61548", Command: DeviceCommand{Kind: CmdProbeOrientation}},
			},
		},
		{
			name: "unknown and misplaced commands are warnings, the rest applies",
			msg: `{"grip":[{"device_id":"61548","commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":1}},"vibrate":{},"probe_orientation":{}}}],
				"arm3":[{"device_id":"049D","commands":{"probe_orientation":{},"set_cursor_force":{"vector":{"x":0,"y":0,"z":1,"w":5}}}}]}`,
			warnings: []string{
				"unknown_command@arm3[0].commands.probe_orientation",
				"unknown_command@grip[0].commands.set_cursor_force",
				"unknown_command@grip[0].commands.vibrate",
				"unknown_field@arm3[0].commands.set_cursor_force.vector.w",
			},
			devices: []DeviceEntry{
				{Type: TypeGrip, TypeKey: "grip", Path: "grip[0]", DeviceID: "61548", Command: DeviceCommand{Kind: CmdProbeOrientation}},
				{Type: TypeArm, TypeKey: "arm3", Path: "arm3[0]", DeviceID: "049D", Command: DeviceCommand{Kind: CmdSetCursorForce, Vec: Vec3{Z: 1}}},
			},
		},
		{
			name: "aliases resolve and keep the key as sent; unknown types are warnings",
			msg: `{"inverse3":[{"device_id":"049D","commands":{"probe_position":{}}}],"verse_grip":[],"quest":[{"device_id":"1"}],
				"verse_grip":[{"device_id":"7"}]}`,
			warnings: []string{"unknown_device_type@quest"},
			devices: []DeviceEntry{
				{Type: TypeArm, TypeKey: "inverse3", Path: "inverse3[0]", DeviceID: "049D", Command: DeviceCommand{Kind: CmdProbePosition}},
				{Type: TypeGrip, TypeKey: "verse_grip", Path: "verse_grip[0]", DeviceID: "7"},
			},
		},
		{
			name: "configure: flat and filters spellings, in key order",
			msg: `{"arm3":[{"device_id":"049D","configure":{"force_gate":{"gain":0.5},"damping":{"scalar":2},"basis":{"permutation":"XZY"},"preset":{"preset":"arm_front"}}},
				{"device_id":"0A11","configure":{"filters":{"force_gate":{"gain":0.5},"damping":{"scalar":2}},"mount":{"transform":{}}}}]}`,
			check: func(t *testing.T, m *ClientMessage) {
				want0 := []Entry{Preset{"arm_front"}, Basis{"XZY"}, DampingScalar(2), ForceGate{0.5}}
				want1 := []Entry{Mount{IdentityTransformForTest()}, DampingScalar(2), ForceGate{0.5}}
				if !reflect.DeepEqual(m.Devices[0].Configure, want0) || !reflect.DeepEqual(m.Devices[1].Configure, want1) {
					t.Fatalf("configure %#v / %#v", m.Devices[0].Configure, m.Devices[1].Configure)
				}
			},
		},
		{
			name:     "configure: unknown keys and filters are warnings",
			msg:      `{"arm3":[{"device_id":"049D","configure":{"teleport":{},"filters":{"lowpass":{},"damping":{"scalar":1}}}}]}`,
			warnings: []string{"unknown_key@arm3[0].configure.filters.lowpass", "unknown_key@arm3[0].configure.teleport"},
			check: func(t *testing.T, m *ClientMessage) {
				if !reflect.DeepEqual(m.Devices[0].Configure, []Entry{DampingScalar(1)}) {
					t.Fatalf("%#v", m.Devices[0].Configure)
				}
			},
		},
		{
			name:     "grip: preset, basis and mount apply; filters are ignored",
			msg:      `{"grip":[{"device_id":"61548","configure":{"preset":{"preset":"led_front"},"damping":{"scalar":1}}}]}`,
			warnings: []string{"unknown_key@grip[0].configure.damping"},
			check: func(t *testing.T, m *ClientMessage) {
				if !reflect.DeepEqual(m.Devices[0].Configure, []Entry{Preset{"led_front"}}) {
					t.Fatalf("%#v", m.Devices[0].Configure)
				}
			},
		},
		{
			name:   "HTTP-only keys are errors naming the route",
			msg:    `{"inverse3":[{"device_id":"049D","configure":{"gravity_compensation":{"enabled":true,"scaling_factor":1}}}]}`,
			errors: []string{"http_only_key@inverse3[0].configure.gravity_compensation"},
			check: func(t *testing.T, m *ClientMessage) {
				if got := m.Errors[0].Message; got != "gravity_compensation is HTTP-only: use POST /inverse3/049D/config/gravity_compensation" {
					t.Fatal(got)
				}
			},
		},
		{name: "handedness over WebSocket", msg: `{"arm3":[{"configure":{"handedness":"left"},"device_id":"049D"}]}`, errors: []string{"http_only_key@arm3[0].configure.handedness"}},
		{name: "torque_scaling over WebSocket", msg: `{"arm3":[{"device_id":"049D","configure":{"torque_scaling":{"enabled":true}}}]}`, errors: []string{"http_only_key@arm3[0].configure.torque_scaling"}},
		{name: "home_return over WebSocket", msg: `{"arm3":[{"device_id":"049D","configure":{"home_return":{"enabled":true}}}]}`, errors: []string{"http_only_key@arm3[0].configure.home_return"}},
		{name: "preset with mount", msg: `{"arm3":[{"device_id":"049D","configure":{"preset":{"preset":"defaults"},"mount":{"transform":{}}}}]}`, errors: []string{"preset_mount_conflict@arm3[0].configure"}},
		{name: "damping given twice", msg: `{"arm3":[{"device_id":"049D","configure":{"damping":{"scalar":1},"filters":{"damping":{"scalar":2}}}}]}`, errors: []string{"invalid_value@arm3[0].configure.filters.damping"}},
		{name: "damping empty", msg: `{"arm3":[{"device_id":"049D","configure":{"filters":{"damping":{}}}}]}`, errors: []string{"damping_empty@arm3[0].configure.filters.damping"}},
		{name: "out of range", msg: `{"arm3":[{"device_id":"049D","configure":{"force_gate":{"gain":1.5}}}]}`, errors: []string{"out_of_range@arm3[0].configure.force_gate.gain"}},
		{name: "string for a number", msg: `{"arm3":[{"device_id":"049D","commands":{"set_cursor_force":{"vector":{"x":"1","y":0,"z":0}}}}]}`, errors: []string{"invalid_value@arm3[0].commands.set_cursor_force.vector.x"}},
		{name: "overflowing number", msg: `{"arm3":[{"device_id":"049D","commands":{"set_cursor_force":{"vector":{"x":1e400,"y":0,"z":0}}}}]}`, errors: []string{"invalid_value@arm3[0].commands.set_cursor_force.vector.x"}},
		{name: "missing component", msg: `{"arm3":[{"device_id":"049D","commands":{"set_cursor_force":{"vector":{"x":1,"y":0}}}}]}`, errors: []string{"invalid_value@arm3[0].commands.set_cursor_force.vector"}},
		{name: "command without its field", msg: `{"arm3":[{"device_id":"049D","commands":{"set_cursor_position":{}}}]}`, errors: []string{"invalid_value@arm3[0].commands.set_cursor_position"}},
		{name: "missing device_id", msg: `{"arm3":[{"commands":{"probe_position":{}}}]}`, errors: []string{"invalid_value@arm3[0].device_id"}},
		{name: "numeric device_id", msg: `{"grip":[{"device_id":61548}]}`, errors: []string{"invalid_value@grip[0].device_id"}},
		{name: "device list not an array", msg: `{"arm3":{"device_id":"049D"}}`, errors: []string{"invalid_value@arm3"}},
		{name: "device entry not an object", msg: `{"arm3":["049D"]}`, errors: []string{"invalid_value@arm3[0]"}},
		{name: "not an object", msg: `[{"arm3":[]}]`, errors: []string{"invalid_json@"}},
		{name: "not JSON", msg: `{"arm3":[}`, errors: []string{"invalid_json@"}},
		{name: "NaN literal", msg: `{"arm3":[{"device_id":"049D","commands":{"set_cursor_force":{"vector":{"x":NaN,"y":0,"z":0}}}}]}`, errors: []string{"invalid_json@"}},
		{name: "one error blocks the message but all are listed", msg: `{"arm3":[{"device_id":"049D","commands":{"set_cursor_force":{"vector":{"x":1,"y":0,"z":0}}}},{"device_id":"0A11","configure":{"force_gate":{"gain":-1}}}],"session":{"configure":{"lease":{"ms":5}}}}`,
			errors: []string{"out_of_range@arm3[1].configure.force_gate.gain", "out_of_range@session.configure.lease.ms"}},
		{
			name: "nulls are absent",
			msg:  `{"session":null,"arm3":[{"device_id":"049D","commands":null,"configure":null}],"grip":null}`,
			devices: []DeviceEntry{
				{Type: TypeArm, TypeKey: "arm3", Path: "arm3[0]", DeviceID: "049D"},
			},
		},
		{
			name: "empty message is a ping",
			msg:  ` {} `,
			check: func(t *testing.T, m *ClientMessage) {
				if !m.Empty || len(m.Devices) != 0 {
					t.Fatal("{} should be Empty")
				}
			},
		},
		{
			name: "session: profile, basis, lease, full state",
			msg: `{"session":{"configure":{"profile":{"name":"co.example.app:main","required_version":">=3.5"},"basis":{"permutation":"+X-ZY"},"lease":{"ms":250}},
				"force_render_full_state":{"device_types":["inverse3","grip","arm3","quest"]}}}`,
			warnings: []string{"unknown_device_type@session.force_render_full_state.device_types[3]"},
			check: func(t *testing.T, m *ClientMessage) {
				s := m.Session
				if m.Empty || s.Profile == nil || *s.Profile != (Profile{"co.example.app:main", ">=3.5"}) || s.Basis == nil || s.Basis.Permutation != "X-ZY" || s.LeaseMs != 250 ||
					s.FullState == nil || !reflect.DeepEqual(s.FullState.DeviceTypes, []DeviceType{TypeArm, TypeGrip}) {
					t.Fatalf("%+v", s)
				}
			},
		},
		{
			name: "session: full state for every type, deprecated commands",
			msg:  `{"session":{"force_render_full_state":{},"set_coordinate_origin":{"coordinate_origin":"workspace_center"},"set_basis":{"basis":{"permutation":"YXZ"}}}}`,
			check: func(t *testing.T, m *ClientMessage) {
				s := m.Session
				if s.FullState == nil || s.FullState.DeviceTypes != nil || s.SetCoordinateOrigin != "arm_front_centered" || s.SetBasis == nil || s.SetBasis.Permutation != "YXZ" || s.Basis != nil {
					t.Fatalf("%+v", s)
				}
			},
		},
		{
			name: "session: empty device_types selects none",
			msg:  `{"session":{"force_render_full_state":{"device_types":[]}}}`,
			check: func(t *testing.T, m *ClientMessage) {
				if fs := m.Session.FullState; fs == nil || fs.DeviceTypes == nil || len(fs.DeviceTypes) != 0 {
					t.Fatalf("%+v", fs)
				}
			},
		},
		{name: "session: version mismatch is a warning", msg: `{"session":{"configure":{"profile":{"name":"a","required_version":">=4.0"}}}}`, warnings: []string{"version_mismatch@session.configure.profile.required_version"}},
		{name: "session: unreadable version", msg: `{"session":{"configure":{"profile":{"name":"a","required_version":"latest"}}}}`, errors: []string{"invalid_value@session.configure.profile.required_version"}},
		{name: "session: profile without name", msg: `{"session":{"configure":{"profile":{}}}}`, errors: []string{"invalid_value@session.configure.profile.name"}},
		{name: "session: unknown origin", msg: `{"session":{"set_coordinate_origin":{"coordinate_origin":"ceiling"}}}`, errors: []string{"invalid_value@session.set_coordinate_origin.coordinate_origin"}},
		{name: "session: lease not whole", msg: `{"session":{"configure":{"lease":{"ms":10.5}}}}`, errors: []string{"invalid_value@session.configure.lease.ms"}},
		{name: "session: lease too long", msg: `{"session":{"configure":{"lease":{"ms":1001}}}}`, errors: []string{"out_of_range@session.configure.lease.ms"}},
		{name: "session: bad basis", msg: `{"session":{"configure":{"basis":{"permutation":"XYY"}}}}`, errors: []string{"invalid_permutation@session.configure.basis.permutation"}},
		{name: "session: unknown keys are warnings", msg: `{"session":{"subscribe":{},"configure":{"theme":"dark","lease":{"ms":10,"grace":1}}}}`,
			warnings: []string{"unknown_field@session.configure.lease.grace", "unknown_key@session.configure.theme", "unknown_key@session.subscribe"},
			check: func(t *testing.T, m *ClientMessage) {
				if m.Session.LeaseMs != 10 {
					t.Fatal(m.Session.LeaseMs)
				}
			}},
	}
	types := aliasTable(t)
	var m ClientMessage
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := DecodeClientMessage([]byte(tt.msg), types, &m)
			if got := codesAt(errs); !reflect.DeepEqual(got, nonNil(tt.errors)) {
				t.Fatalf("errors %v, want %v (%+v)", got, tt.errors, errs)
			}
			if got := codesAt(m.Warnings); !reflect.DeepEqual(got, nonNil(tt.warnings)) {
				t.Fatalf("warnings %v, want %v (%+v)", got, tt.warnings, m.Warnings)
			}
			for _, e := range append(append([]Error(nil), errs...), m.Warnings...) {
				if e.Message == "" {
					t.Errorf("%s has no message", e.Code)
				}
			}
			if tt.devices != nil {
				got := make([]DeviceEntry, len(m.Devices))
				copy(got, m.Devices)
				for i := range got {
					got[i].Configure = nil
				}
				if !reflect.DeepEqual(got, tt.devices) {
					t.Fatalf("devices\n%+v\nwant\n%+v", got, tt.devices)
				}
			}
			if tt.check != nil {
				tt.check(t, &m)
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

func TestDecodeReusesMessage(t *testing.T) {
	var m ClientMessage
	types := aliasTable(t)
	DecodeClientMessage([]byte(`{"arm3":[{"device_id":"049D","configure":{"damping":{"scalar":1}},"commands":{"set_cursor_force":{"vector":{"x":1,"y":2,"z":3}}}}],"session":{"configure":{"profile":{"name":"p"}}}}`), types, &m)
	id := m.Devices[0].DeviceID
	errs := DecodeClientMessage([]byte(`{"arm3":[{"device_id":"049D","commands":{"probe_position":{}}}]}`), types, &m)
	if len(errs) != 0 || len(m.Devices) != 1 || len(m.Devices[0].Configure) != 0 || m.Devices[0].Command.Kind != CmdProbePosition || m.Session.Profile != nil {
		t.Fatalf("state leaked between messages: %+v", m)
	}
	if m.Devices[0].DeviceID != id {
		t.Fatal(m.Devices[0].DeviceID)
	}
	// Escaped strings decode to their text.
	DecodeClientMessage([]byte(`{"arm3":[{"device_id":"0\u00349D"}],"session":{"configure":{"profile":{"name":"caf\u00e9 \ud83d\ude00"}}}}`), types, &m)
	if m.Devices[0].DeviceID != "049D" || m.Session.Profile.Name != "café 😀" {
		t.Fatalf("%q %q", m.Devices[0].DeviceID, m.Session.Profile.Name)
	}
}

func TestDecodeTypicalMessageAllocations(t *testing.T) {
	types := aliasTable(t)
	msg := []byte(`{"arm3":[{"device_id":"049D","commands":{"set_cursor_force":{"vector":{"x":0.125,"y":-0.5,"z":1.5}}}}]}`)
	observer := []byte(`{"inverse3":[{"device_id":"049D","commands":{"probe_position":{}}}],"grip":[{"device_id":"61548","commands":{"probe_orientation":{}}}]}`)
	lease := []byte(`{"session":{"configure":{"lease":{"ms":100},"basis":{"permutation":"XZY"}}},"arm3":[{"device_id":"049D","commands":{"set_cursor_position":{"position":{"x":0.01,"y":0.02,"z":0.03}}}}]}`)
	configure := []byte(`{"arm3":[{"device_id":"049D","commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":1}}},"configure":{"preset":{"preset":"arm_front"},"basis":{"permutation":"XZY"},"filters":{"damping":{"scalar":2,"vector":{"x":1,"y":1,"z":1}},"force_gate":{"gain":0.3}}}}]}`)
	saw := []byte(`{"inverse3":[{"device_id":"049D","commands":{"set_cursor_force":{"values":{"x":0,"y":0,"z":1}},"set_gravity_compensation":true}}],"verse_grip":[{"device_id":"61548","commands":{"probe_orientation":{}}}],"custom_verse_grip":[{"device_id":"61548","commands":{"probe_orientation":{}}}],"wireless_verse_grip":[{"device_id":"61548","commands":{"probe_orientation":{},"keep_alive":{}}}]}`)
	navigator := []byte(`{"inverse3":[{"device_id":"049D","commands":{"set_transform":{"position":{"x":0.1,"y":0,"z":0}},"probe_position":{}}}]}`)
	for name, data := range map[string][]byte{"force": msg, "observer": observer, "lease and basis": lease, "configure every tick": configure, "sawHaplyService cycle": saw, "set_transform every tick": navigator} {
		var m ClientMessage
		DecodeClientMessage(data, types, &m) // warm the buffers
		allocs := testing.AllocsPerRun(200, func() {
			if errs := DecodeClientMessage(data, types, &m); len(errs) != 0 {
				t.Fatal(errs)
			}
		})
		if allocs != 0 {
			t.Errorf("%s: %v allocations per decode, want 0", name, allocs)
		}
	}
}

func TestConfigureReuseNeverReturnsStaleValues(t *testing.T) {
	types := aliasTable(t)
	var m ClientMessage
	for _, gain := range []string{"0.1", "0.1", "0.2", "0.2", "0.9"} {
		msg := `{"arm3":[{"device_id":"049D","configure":{"force_gate":{"gain":` + gain + `},"damping":{"scalar":` + gain + `}}}]}`
		if errs := DecodeClientMessage([]byte(msg), types, &m); len(errs) != 0 {
			t.Fatal(errs)
		}
		got := m.Devices[0].Configure
		g := got[1].(ForceGate).Gain
		d := got[0].(Damping).ScalarOrZero()
		if formatted := strconv.FormatFloat(g, 'g', -1, 64); formatted != gain || d != g {
			t.Fatalf("gain %s decoded as %v / damping %v", gain, g, d)
		}
	}
}

func TestProfileNameLength(t *testing.T) {
	types, _ := NewTypeTable(nil)
	for _, tt := range []struct {
		name string
		ok   bool
	}{{strings.Repeat("é", MaxProfileNameLen), true}, {strings.Repeat("a", MaxProfileNameLen+1), false}} {
		var m ClientMessage
		errs := DecodeClientMessage([]byte(`{"session":{"configure":{"profile":{"name":"`+tt.name+`"}}}}`), types, &m)
		if (len(errs) == 0) != tt.ok {
			t.Fatalf("profile name of %d characters: errors %v, want ok=%v", len([]rune(tt.name)), errs, tt.ok)
		}
	}
}

// The session members with one known member follow the last-occurrence rule
// of TestRepeatedMemberLastOccurrenceWins.
func TestSessionRepeatedMemberLastOccurrenceWins(t *testing.T) {
	types := aliasTable(t)
	tests := []struct {
		msg    string
		errors []string
		check  func(s *SessionPart) bool
	}{
		{msg: `{"session":{"configure":{"lease":{"ms":100,"ms":null}}}}`, errors: []string{"invalid_value@session.configure.lease"}},
		{msg: `{"session":{"configure":{"lease":{"ms":5,"ms":100}}}}`, check: func(s *SessionPart) bool { return s.LeaseMs == 100 }},
		{msg: `{"session":{"set_coordinate_origin":{"coordinate_origin":"workspace_center","coordinate_origin":null}}}`,
			errors: []string{"invalid_value@session.set_coordinate_origin.coordinate_origin"}},
		{msg: `{"session":{"set_coordinate_origin":{"coordinate_origin":"ceiling","coordinate_origin":"device_base"}}}`,
			check: func(s *SessionPart) bool { return s.SetCoordinateOrigin != "" }},
		{msg: `{"session":{"set_basis":{"basis":{"permutation":"YXZ"},"basis":null}}}`, errors: []string{"invalid_value@session.set_basis"}},
		{msg: `{"session":{"set_basis":{"basis":1,"basis":{"permutation":"YXZ"}}}}`,
			check: func(s *SessionPart) bool { return s.SetBasis != nil && s.SetBasis.Permutation == "YXZ" }},
	}
	for _, tt := range tests {
		var m ClientMessage
		errs := DecodeClientMessage([]byte(tt.msg), types, &m)
		if got := codesAt(errs); !reflect.DeepEqual(got, nonNil(tt.errors)) {
			t.Errorf("%s: errors %v, want %v", tt.msg, got, tt.errors)
			continue
		}
		if tt.check != nil && !tt.check(&m.Session) {
			t.Errorf("%s: session %+v", tt.msg, m.Session)
		}
	}
}

// The state commands real clients send among "commands": decoded, validated
// as the HTTP entries are, never warned about.
func TestDecodeStateCommands(t *testing.T) {
	tests := []struct {
		msg       string
		errors    []string // code@path
		warns     []string
		transform TransformPatch
		gravity   OptionalBool
	}{
		{msg: `{"inverse3":[{"device_id":"049D","commands":{"set_transform":{"position":{"x":1,"y":2,"z":3}}}}]}`,
			transform: TransformPatch{Position: Vec3{X: 1, Y: 2, Z: 3}, HasPosition: true}},
		{msg: `{"inverse3":[{"device_id":"049D","commands":{"set_transform":{"rotation":{"w":2,"x":0,"y":0,"z":0},"scale":{"x":2,"y":2,"z":2},"position":null}}}]}`,
			transform: TransformPatch{Rotation: Quat{W: 1}, Scale: Vec3{X: 2, Y: 2, Z: 2}, HasRotation: true, HasScale: true}},
		{msg: `{"inverse3":[{"device_id":"049D","commands":{"set_transform":{"scale":{"x":0,"y":1,"z":1}}}}]}`,
			errors: []string{"out_of_range@inverse3[0].commands.set_transform.scale"}},
		{msg: `{"inverse3":[{"device_id":"049D","commands":{"set_transform":{"rotation":{"w":0,"x":0,"y":0,"z":0}}}}]}`,
			errors: []string{"out_of_range@inverse3[0].commands.set_transform.rotation"}},
		// The wrapped shape (the vendor's Rust client), partial as the flat one.
		{msg: `{"inverse3":[{"device_id":"049D","commands":{"set_transform":{"transform":{"position":{"x":1,"y":2,"z":3}}}}}]}`,
			transform: TransformPatch{Position: Vec3{X: 1, Y: 2, Z: 3}, HasPosition: true}},
		{msg: `{"inverse3":[{"device_id":"049D","commands":{"set_transform":{"transform":{"rotation":{"w":2,"x":0,"y":0,"z":0},"scale":{"x":2,"y":2,"z":2}}}}}]}`,
			transform: TransformPatch{Rotation: Quat{W: 1}, Scale: Vec3{X: 2, Y: 2, Z: 2}, HasRotation: true, HasScale: true}},
		{msg: `{"inverse3":[{"device_id":"049D","commands":{"set_transform":{"transform":{"scale":{"x":0,"y":1,"z":1}}}}}]}`,
			errors: []string{"out_of_range@inverse3[0].commands.set_transform.transform.scale"}},
		{msg: `{"inverse3":[{"device_id":"049D","commands":{"set_transform":{"transform":{"position":{"x":1,"y":2,"z":3}},"position":{"x":0,"y":0,"z":0}}}}]}`,
			errors: []string{"invalid_value@inverse3[0].commands.set_transform"}},
		{msg: `{"inverse3":[{"device_id":"049D","commands":{"set_transform":{"transform":[]}}}]}`,
			errors: []string{"invalid_value@inverse3[0].commands.set_transform.transform"}},
		{msg: `{"inverse3":[{"device_id":"049D","commands":{"set_transform":{"transform":{"position":{"x":1,"y":2,"z":3}},"extra":1}}}]}`,
			warns:     []string{"unknown_field@inverse3[0].commands.set_transform.extra"},
			transform: TransformPatch{Position: Vec3{X: 1, Y: 2, Z: 3}, HasPosition: true}},
		{msg: `{"inverse3":[{"device_id":"049D","commands":{"set_gravity_compensation":false}}]}`,
			gravity: OptionalBool{Given: true}},
		{msg: `{"arm3":[{"device_id":"049D","commands":{"set_gravity_compensation":{"enabled":true}}}]}`,
			gravity: OptionalBool{Given: true, Value: true}},
		{msg: `{"arm3":[{"device_id":"049D","commands":{"set_gravity_compensation":1}}]}`,
			errors: []string{"invalid_value@arm3[0].commands.set_gravity_compensation"}},
		{msg: `{"wireless_verse_grip":[{"device_id":"1","commands":{"set_transform":{}}}]}`,
			warns: []string{"unknown_command@wireless_verse_grip[0].commands.set_transform"}},
		{msg: `{"keep_alive":true,"session":{"keep_alive":{}},"wireless_verse_grip":[{"device_id":"1","commands":{"keep_alive":{}}}],"inverse3":[{"device_id":"049D","commands":{"keep_alive":1}}]}`},
	}
	for _, tt := range tests {
		var m ClientMessage
		errs := DecodeClientMessage([]byte(tt.msg), nil, &m)
		if got := codesAt(errs); !reflect.DeepEqual(got, append([]string{}, tt.errors...)) {
			t.Errorf("%s: errors %v, want %v", tt.msg, got, tt.errors)
		}
		if got := codesAt(m.Warnings); !reflect.DeepEqual(got, append([]string{}, tt.warns...)) {
			t.Errorf("%s: warnings %v, want %v", tt.msg, got, tt.warns)
		}
		if len(errs) > 0 || len(m.Devices) == 0 {
			continue
		}
		e := m.Devices[0]
		if e.Transform != tt.transform || e.GravityCompensation != tt.gravity || e.Command.Kind != CmdNone {
			t.Errorf("%s: transform %+v gravity %+v command %v", tt.msg, e.Transform, e.GravityCompensation, e.Command.Kind)
		}
	}
	// A reused message forgets the previous one's state commands.
	var m ClientMessage
	DecodeClientMessage([]byte(tests[0].msg), nil, &m)
	DecodeClientMessage([]byte(`{"inverse3":[{"device_id":"049D","commands":{"probe_position":{}}}]}`), nil, &m)
	if m.Devices[0].Transform.Given() || m.Devices[0].GravityCompensation.Given {
		t.Fatalf("state leaked between messages: %+v", m.Devices[0])
	}
}

// The members inside a device entry's effects and a subscribed device
// follow the last-occurrence rule too: an invalid earlier occurrence is
// superseded, an invalid (or null, for a required member: absent) last one
// is the error.
func TestNestedRepeatedMemberLastOccurrenceWins(t *testing.T) {
	types := aliasTable(t)
	sub := func(device string) string {
		return `{"session":{"configure":{"subscribe":{"devices":[` + device + `]}}}}`
	}
	subscribed := func(dt DeviceType, id string) func(m *ClientMessage) bool {
		return func(m *ClientMessage) bool {
			s := m.Session.Subscribe
			return s != nil && len(s.Devices) == 1 && s.Devices[0] == SubscribedDevice{Type: dt, ID: id}
		}
	}
	clear := func(want bool) func(m *ClientMessage) bool {
		return func(m *ClientMessage) bool {
			return len(m.Devices) == 1 && m.Devices[0].HasEffects && m.Devices[0].Effects.Clear == want
		}
	}
	tests := []struct {
		name   string
		msg    string
		errors []string
		check  func(m *ClientMessage) bool
	}{
		{"clear: a bad one, then true", `{"arm3":[{"device_id":"049D","effects":{"clear":"yes","clear":true}}]}`, nil, clear(true)},
		{"clear: true, then null", `{"arm3":[{"device_id":"049D","effects":{"clear":true,"clear":null}}]}`, nil, clear(false)},
		{"clear: true, then a bad one", `{"arm3":[{"device_id":"049D","effects":{"clear":true,"clear":"yes"}}]}`, []string{"invalid_value@arm3[0].effects.clear"}, nil},
		{"device_type: a bad one, then arm3", sub(`{"device_type":1,"device_type":"arm3","device_id":"049D"}`), nil, subscribed(TypeArm, "049D")},
		{"device_type: unknown, then grip", sub(`{"device_type":"toaster","device_type":"grip","device_id":"1"}`), nil, subscribed(TypeGrip, "1")},
		{"device_type: arm3, then unknown", sub(`{"device_type":"arm3","device_type":"toaster","device_id":"049D"}`), []string{"invalid_value@session.configure.subscribe.devices[0].device_type"}, nil},
		{"device_type: arm3, then null", sub(`{"device_type":"arm3","device_type":null,"device_id":"049D"}`), []string{"invalid_value@session.configure.subscribe.devices[0]"}, nil},
		{"device_id: empty, then 049D", sub(`{"device_type":"arm3","device_id":"","device_id":"049D"}`), nil, subscribed(TypeArm, "049D")},
		{"device_id: a number, then 049D", sub(`{"device_type":"arm3","device_id":7,"device_id":"049D"}`), nil, subscribed(TypeArm, "049D")},
		{"device_id: 049D, then empty", sub(`{"device_type":"arm3","device_id":"049D","device_id":""}`), []string{"invalid_value@session.configure.subscribe.devices[0].device_id"}, nil},
		{"device_id: 049D, then null", sub(`{"device_type":"arm3","device_id":"049D","device_id":null}`), []string{"invalid_value@session.configure.subscribe.devices[0]"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var m ClientMessage
			errs := DecodeClientMessage([]byte(tt.msg), types, &m)
			if got := codesAt(errs); !reflect.DeepEqual(got, nonNil(tt.errors)) {
				t.Fatalf("errors %v, want %v", got, nonNil(tt.errors))
			}
			if tt.check != nil && !tt.check(&m) {
				t.Fatalf("decoded devices %+v, session %+v", m.Devices, m.Session)
			}
		})
	}
}
