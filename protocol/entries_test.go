package protocol

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func ptr[T any](v T) *T { return &v }

func TestDecodeEntry(t *testing.T) {
	tests := []struct {
		name string
		key  Key
		body string
		want Entry
		code Code // "" when valid
		path string
	}{
		// preset
		{"preset", KeyPreset, `{"preset":"arm_front"}`, Preset{"arm_front"}, "", ""},
		{"preset every name", KeyPreset, `{"preset":"led_front_centered"}`, Preset{"led_front_centered"}, "", ""},
		{"preset unknown", KeyPreset, `{"preset":"upside_down"}`, nil, CodeUnknownPreset, "preset"},
		{"preset custom is a reading, not input", KeyPreset, `{"preset":"custom"}`, nil, CodeUnknownPreset, "preset"},
		{"preset missing", KeyPreset, `{}`, nil, CodeInvalidValue, ""},
		{"preset null is absent", KeyPreset, `{"preset":null}`, nil, CodeInvalidValue, ""},
		{"preset number", KeyPreset, `{"preset":1}`, nil, CodeInvalidValue, "preset"},
		{"preset bare string", KeyPreset, `"arm_front"`, nil, CodeInvalidValue, ""},
		{"preset unknown field ignored", KeyPreset, `{"preset":"defaults","extra":1}`, Preset{"defaults"}, "", ""},
		{"not JSON", KeyPreset, `{preset:1}`, nil, CodeInvalidJSON, ""},
		{"empty body", KeyPreset, ``, nil, CodeInvalidJSON, ""},
		{"trailing data", KeyPreset, `{"preset":"defaults"} x`, nil, CodeInvalidJSON, ""},

		// basis
		{"basis", KeyBasis, `{"permutation":"XZY"}`, Basis{"XZY"}, "", ""},
		{"basis plus signs dropped", KeyBasis, `{"permutation":"+X-Z+Y"}`, Basis{"X-ZY"}, "", ""},
		{"basis repeated axis", KeyBasis, `{"permutation":"XXY"}`, nil, CodeInvalidPermutation, "permutation"},
		{"basis too short", KeyBasis, `{"permutation":"XY"}`, nil, CodeInvalidPermutation, "permutation"},
		{"basis double sign", KeyBasis, `{"permutation":"+-XYZ"}`, nil, CodeInvalidPermutation, "permutation"},
		{"basis trailing sign", KeyBasis, `{"permutation":"XYZ-"}`, nil, CodeInvalidPermutation, "permutation"},
		{"basis spaces", KeyBasis, `{"permutation":"X Y Z"}`, nil, CodeInvalidPermutation, "permutation"},
		{"basis missing", KeyBasis, `{}`, nil, CodeInvalidValue, ""},
		{"basis wrong type", KeyBasis, `{"permutation":["X","Y","Z"]}`, nil, CodeInvalidValue, "permutation"},

		// mount
		{"mount identity parts optional", KeyMount, `{"transform":{}}`, Mount{IdentityTransformForTest()}, "", ""},
		{"mount full", KeyMount, `{"transform":{"position":{"x":0.1,"y":0,"z":-0.2},"rotation":{"w":2,"x":0,"y":0,"z":0},"scale":{"x":2,"y":2,"z":-1}}}`,
			Mount{Transform{Position: Vec3{X: 0.1, Z: -0.2}, Rotation: Quat{W: 1}, Scale: Vec3{X: 2, Y: 2, Z: -1}}}, "", ""},
		{"mount rotation normalised", KeyMount, `{"transform":{"rotation":{"w":0,"x":0,"y":0,"z":3}}}`,
			Mount{Transform{Rotation: Quat{Z: 1}, Scale: Vec3{X: 1, Y: 1, Z: 1}}}, "", ""},
		{"mount unit rotation keeps its bits", KeyMount, `{"transform":{"rotation":{"w":0.7071067811865475,"x":0.7071067811865475,"y":0,"z":0}}}`,
			Mount{Transform{Rotation: Quat{W: 0.7071067811865475, X: 0.7071067811865475}, Scale: Vec3{X: 1, Y: 1, Z: 1}}}, "", ""},
		{"mount zero rotation", KeyMount, `{"transform":{"rotation":{"w":0,"x":0,"y":0,"z":0}}}`, nil, CodeOutOfRange, "transform.rotation"},
		{"mount zero scale component", KeyMount, `{"transform":{"scale":{"x":1,"y":0,"z":1}}}`, nil, CodeOutOfRange, "transform.scale"},
		{"mount missing transform", KeyMount, `{"position":{"x":0,"y":0,"z":0}}`, nil, CodeInvalidValue, ""},
		{"mount string number", KeyMount, `{"transform":{"position":{"x":"1","y":0,"z":0}}}`, nil, CodeInvalidValue, "transform.position.x"},
		{"mount overflow", KeyMount, `{"transform":{"position":{"x":1e400,"y":0,"z":0}}}`, nil, CodeInvalidValue, "transform.position.x"},
		{"mount NaN literal", KeyMount, `{"transform":{"position":{"x":NaN,"y":0,"z":0}}}`, nil, CodeInvalidJSON, ""},
		{"mount NaN string", KeyMount, `{"transform":{"position":{"x":"NaN","y":0,"z":0}}}`, nil, CodeInvalidValue, "transform.position.x"},
		{"mount partial vector", KeyMount, `{"transform":{"position":{"x":1}}}`, nil, CodeInvalidValue, "transform.position"},

		// damping
		{"damping scalar", KeyDamping, `{"scalar":2.5}`, Damping{Scalar: ptr(2.5)}, "", ""},
		{"damping vector", KeyDamping, `{"vector":{"x":1,"y":2,"z":20}}`, Damping{Vector: &Vec3{X: 1, Y: 2, Z: 20}}, "", ""},
		{"damping both", KeyDamping, `{"scalar":0,"vector":{"x":1,"y":2,"z":3}}`, Damping{Scalar: ptr(0.0), Vector: &Vec3{X: 1, Y: 2, Z: 3}}, "", ""},
		{"damping empty", KeyDamping, `{}`, nil, CodeDampingEmpty, ""},
		{"damping nulls are absent", KeyDamping, `{"scalar":null,"vector":null}`, nil, CodeDampingEmpty, ""},
		{"damping scalar out of range", KeyDamping, `{"scalar":20.5}`, nil, CodeOutOfRange, "scalar"},
		{"damping negative", KeyDamping, `{"scalar":-1}`, nil, CodeOutOfRange, "scalar"},
		{"damping vector component out of range", KeyDamping, `{"vector":{"x":1,"y":21,"z":0}}`, nil, CodeOutOfRange, "vector.y"},
		{"damping string", KeyDamping, `{"scalar":"2"}`, nil, CodeInvalidValue, "scalar"},

		// force_gate
		{"force_gate", KeyForceGate, `{"gain":0.3}`, ForceGate{0.3}, "", ""},
		{"force_gate bounds", KeyForceGate, `{"gain":1}`, ForceGate{1}, "", ""},
		{"force_gate out of range", KeyForceGate, `{"gain":1.5}`, nil, CodeOutOfRange, "gain"},
		{"force_gate missing", KeyForceGate, `{}`, nil, CodeInvalidValue, ""},
		{"force_gate bool", KeyForceGate, `{"gain":true}`, nil, CodeInvalidValue, "gain"},
		{"force_gate array body", KeyForceGate, `[0.3]`, nil, CodeInvalidValue, ""},

		// handedness
		{"handedness bare", KeyHandedness, `"left"`, HandednessLeft, "", ""},
		{"handedness object", KeyHandedness, `{"handedness":"right"}`, HandednessRight, "", ""},
		{"handedness bad", KeyHandedness, `"both"`, nil, CodeInvalidValue, ""},
		{"handedness bad in object", KeyHandedness, `{"handedness":"up"}`, nil, CodeInvalidValue, "handedness"},
		{"handedness missing", KeyHandedness, `{}`, nil, CodeInvalidValue, ""},
		{"handedness number", KeyHandedness, `1`, nil, CodeInvalidValue, ""},

		// torque_scaling, home_return
		{"torque_scaling", KeyTorqueScaling, `{"enabled":false}`, TorqueScaling{false}, "", ""},
		{"torque_scaling string bool", KeyTorqueScaling, `{"enabled":"true"}`, nil, CodeInvalidValue, "enabled"},
		{"torque_scaling missing", KeyTorqueScaling, `{}`, nil, CodeInvalidValue, ""},
		{"home_return", KeyHomeReturn, `{"enabled":true}`, HomeReturn{true}, "", ""},
		{"home_return number", KeyHomeReturn, `{"enabled":1}`, nil, CodeInvalidValue, "enabled"},

		// gravity_compensation
		{"gravity", KeyGravityCompensation, `{"enabled":true,"scaling_factor":0.5}`, GravityCompensation{true, 0.5}, "", ""},
		{"gravity max", KeyGravityCompensation, `{"enabled":false,"scaling_factor":2}`, GravityCompensation{false, 2}, "", ""},
		{"gravity out of range", KeyGravityCompensation, `{"enabled":true,"scaling_factor":2.01}`, nil, CodeOutOfRange, "scaling_factor"},
		{"gravity missing factor", KeyGravityCompensation, `{"enabled":true}`, nil, CodeInvalidValue, ""},
		{"gravity missing enabled", KeyGravityCompensation, `{"scaling_factor":1}`, nil, CodeInvalidValue, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeEntry(tt.key, []byte(tt.body), "")
			if tt.code != "" {
				if err == nil {
					t.Fatalf("DecodeEntry(%s, %s) = %#v, want error %s", tt.key, tt.body, got, tt.code)
				}
				if err.Code != tt.code || err.Path != tt.path {
					t.Fatalf("DecodeEntry(%s, %s) error = %s at %q (%s), want %s at %q", tt.key, tt.body, err.Code, err.Path, err.Message, tt.code, tt.path)
				}
				if err.Message == "" || strings.ToLower(err.Message[:1]) != err.Message[:1] {
					t.Errorf("message %q should be a lower-case sentence", err.Message)
				}
				return
			}
			if err != nil {
				t.Fatalf("DecodeEntry(%s, %s): %v", tt.key, tt.body, err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("DecodeEntry(%s, %s) = %#v, want %#v", tt.key, tt.body, got, tt.want)
			}
			if got.Key() != tt.key {
				t.Errorf("Key() = %s, want %s", got.Key(), tt.key)
			}
			// The encoded form decodes to the same value.
			enc, _ := json.Marshal(got)
			again, err := DecodeEntry(tt.key, enc, "")
			if err != nil || !reflect.DeepEqual(again, got) {
				t.Errorf("round trip of %s: %#v, %v", enc, again, err)
			}
		})
	}
}

func IdentityTransformForTest() Transform {
	return Transform{Rotation: Quat{W: 1}, Scale: Vec3{X: 1, Y: 1, Z: 1}}
}

func TestDecodeEntryPathPrefix(t *testing.T) {
	_, err := DecodeEntry(KeyForceGate, []byte(`{"gain":2}`), "arm3[0].configure.force_gate")
	if err == nil || err.Path != "arm3[0].configure.force_gate.gain" || err.Message != "gain 2 is out of range 0..1" {
		t.Fatalf("got %+v", err)
	}
}

func TestDecodeEntryWarnListsUnknownFields(t *testing.T) {
	e, warns, err := DecodeEntryWarn(KeyDamping, []byte(`{"scalar":1,"vectr":{"x":1}}`), "")
	if err != nil || len(warns) != 1 || warns[0].Code != CodeUnknownField || warns[0].Path != "vectr" {
		t.Fatalf("got %v %+v %v", e, warns, err)
	}
}

func TestPermutations(t *testing.T) {
	all := Permutations()
	if len(all) != 48 {
		t.Fatalf("%d permutations, want 48", len(all))
	}
	seen := map[string]bool{}
	for _, p := range all {
		if seen[p] {
			t.Errorf("%s listed twice", p)
		}
		seen[p] = true
		got, ok := CanonicalPermutation(p)
		if !ok || got != p {
			t.Errorf("CanonicalPermutation(%s) = %s, %v", p, got, ok)
		}
		e, err := DecodeEntry(KeyBasis, []byte(`{"permutation":"`+p+`"}`), "")
		if err != nil || e.(Basis).Permutation != p {
			t.Errorf("basis %s: %v %v", p, e, err)
		}
		// Every letter may carry an explicit '+'.
		plus := strings.NewReplacer("-X", "-X", "-Y", "-Y", "-Z", "-Z").Replace(p)
		var b strings.Builder
		for i := 0; i < len(plus); i++ {
			c := plus[i]
			if c >= 'X' && c <= 'Z' && (i == 0 || plus[i-1] != '-') {
				b.WriteByte('+')
			}
			b.WriteByte(c)
		}
		if got, ok := CanonicalPermutation(b.String()); !ok || got != p {
			t.Errorf("CanonicalPermutation(%s) = %s, %v; want %s", b.String(), got, ok, p)
		}
	}
	for _, bad := range []string{"", "X", "XY", "XXY", "XYZX", "+-XYZ", "--XYZ", "XYZ+", "ABC", "xyz", "X-Y-", " XYZ", "XY Z", "-X-X-Y"} {
		if got, ok := CanonicalPermutation(bad); ok {
			t.Errorf("CanonicalPermutation(%q) = %q, want rejected", bad, got)
		}
	}
}

func TestDefaultEntries(t *testing.T) {
	want := map[Key]string{
		KeyPreset:              `{"preset":"defaults"}`,
		KeyMount:               `{"transform":{"position":{"x":0,"y":0,"z":0},"rotation":{"w":1,"x":0,"y":0,"z":0},"scale":{"x":1,"y":1,"z":1}}}`,
		KeyBasis:               `{"permutation":"XYZ"}`,
		KeyDamping:             `{"scalar":0}`,
		KeyForceGate:           `{"gain":0.3}`,
		KeyHandedness:          `"right"`,
		KeyTorqueScaling:       `{"enabled":true}`,
		KeyGravityCompensation: `{"enabled":true,"scaling_factor":1}`,
		KeyHomeReturn:          `{"enabled":false}`,
		KeyNavigation:          `{"mode":"off","bubble":{"center":{"position":{"x":0,"y":0,"z":0},"mode":"cursor","drift_rate":0},"shape":{"primitive":"sphere","parameters":{"r":0.05}},"velocity_zone_width":0.03,"speed_gain":4,"max_speed":0.5,"easing":"linear","dead_zone_damping":1,"velocity_zone_stiffness":50,"wall_stiffness":800,"wall_damping":4,"collision_detection":{"hysteresis":0.002}}}`,
		KeyForceClamp:          `{"max_force":10}`,
		KeyForceSlewLimit:      `{"max_rate":5000}`,
		KeyPassivityController: `{"enabled":true,"scope":"rendered"}`,
	}
	for _, k := range Keys() {
		got, _ := json.Marshal(DefaultEntry(k))
		if string(got) != want[k] {
			t.Errorf("default %s = %s, want %s", k, got, want[k])
		}
		if _, err := DecodeEntry(k, got, ""); err != nil {
			t.Errorf("default %s does not decode: %v", k, err)
		}
	}
}

func TestKeyNamesAndPaths(t *testing.T) {
	tests := []struct {
		key           Key
		name, path    string
		sessionScoped bool
	}{
		{KeyPreset, "preset", "preset", true},
		{KeyMount, "mount", "mount", true},
		{KeyBasis, "basis", "basis", true},
		{KeyDamping, "damping", "filters/damping", true},
		{KeyForceGate, "force_gate", "filters/force_gate", true},
		{KeyHandedness, "handedness", "handedness", false},
		{KeyTorqueScaling, "torque_scaling", "torque_scaling", false},
		{KeyGravityCompensation, "gravity_compensation", "gravity_compensation", false},
		{KeyHomeReturn, "home_return", "home_return", false},
		{KeyNavigation, "navigation", "navigation", true},
		{KeyForceClamp, "force_clamp", "passivity/force_clamp", false},
		{KeyForceSlewLimit, "force_slew_limit", "passivity/force_slew_limit", false},
		{KeyPassivityController, "passivity_controller", "passivity/controller", false},
	}
	if len(Keys()) != len(tests) {
		t.Fatalf("Keys() has %d keys, want %d", len(Keys()), len(tests))
	}
	for _, tt := range tests {
		if tt.key.Name() != tt.name || tt.key.Path() != tt.path || tt.key.SessionScoped() != tt.sessionScoped {
			t.Errorf("%d: %s %s %v", tt.key, tt.key.Name(), tt.key.Path(), tt.key.SessionScoped())
		}
		if k, ok := KeyFromPath(tt.path); !ok || k != tt.key {
			t.Errorf("KeyFromPath(%s) = %v %v", tt.path, k, ok)
		}
		if k, ok := keyFromNameBytes([]byte(tt.name)); !ok || k != tt.key {
			t.Errorf("keyFromNameBytes(%s) = %v %v", tt.name, k, ok)
		}
	}
	for _, bad := range []string{"damping", "filters", "force_clamp", "passivity", ""} {
		if k, ok := KeyFromPath(bad); ok {
			t.Errorf("KeyFromPath(%q) = %s, want unknown", bad, k)
		}
	}
}

func TestSessionConfigPresetAndMountExclude(t *testing.T) {
	c := DefaultSessionConfig()
	m := Mount{Transform{Position: Vec3{X: 1}, Rotation: Quat{W: 1}, Scale: Vec3{X: 1, Y: 1, Z: 1}}}
	c.Set(m)
	if c.Preset != PresetCustom || c.Get(KeyMount) != m {
		t.Fatalf("after mount: %+v", c)
	}
	c.Set(Preset{"arm_front"})
	if c.Preset != "arm_front" || c.Mount != IdentityTransformForTest() {
		t.Fatalf("after preset: %+v", c)
	}
	c.Set(m)
	c.Reset(KeyMount)
	if c.Preset != "defaults" || c.Mount != IdentityTransformForTest() {
		t.Fatalf("after reset: %+v", c)
	}
	if c.Set(HandednessLeft) {
		t.Fatal("a device-global entry was accepted by SessionConfig")
	}
	c.Set(Basis{"XZY"})
	if c.Get(KeyBasis) != (Basis{"XZY"}) {
		t.Fatal(c.Get(KeyBasis))
	}
	c.Reset(KeyBasis)
	if c.Basis != nil {
		t.Fatal("reset basis should fall back to the session basis")
	}
}

func TestDeviceConfigSetGetReset(t *testing.T) {
	c := DefaultDeviceConfig()
	for _, e := range []Entry{HandednessLeft, TorqueScaling{false}, GravityCompensation{false, 0.5}, HomeReturn{true}} {
		if !c.Set(e) {
			t.Fatalf("Set(%#v) refused", e)
		}
		if !reflect.DeepEqual(c.Get(e.Key()), e) {
			t.Errorf("Get(%s) = %#v", e.Key(), c.Get(e.Key()))
		}
		c.Reset(e.Key())
		if !reflect.DeepEqual(c.Get(e.Key()), DefaultEntry(e.Key())) {
			t.Errorf("Reset(%s) left %#v", e.Key(), c.Get(e.Key()))
		}
	}
	if c.Set(ForceGate{0.1}) {
		t.Fatal("a session entry was accepted by DeviceConfig")
	}
}

func TestAggregatesJSON(t *testing.T) {
	sc := DefaultSessionConfig()
	sc.Set(Mount{Transform{Position: Vec3{Z: 0.1}, Rotation: Quat{W: 1}, Scale: Vec3{X: 2, Y: 2, Z: 2}}})
	sc.Set(Basis{"-XZY"})
	sc.Set(Damping{Vector: &Vec3{X: 1, Y: 2, Z: 3}})
	sc.Set(ForceGate{0.7})
	b, err := json.Marshal(sc)
	if err != nil {
		t.Fatal(err)
	}
	var back SessionConfig
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Preset != sc.Preset || back.Mount != sc.Mount || *back.Basis != *sc.Basis || !back.Damping.Equal(sc.Damping) || back.ForceGate != sc.ForceGate {
		t.Fatalf("round trip: %s → %+v", b, back)
	}

	dc := DefaultDeviceConfig()
	dc.Set(HandednessLeft)
	dc.Set(GravityCompensation{true, 1.5})
	b, _ = json.Marshal(dc)
	var dback DeviceConfig
	if err := json.Unmarshal(b, &dback); err != nil || dback != dc {
		t.Fatalf("round trip %s: %+v %v", b, dback, err)
	}

	// A hand-edited state file must not smuggle in invalid values.
	bad := []struct {
		name string
		into any
		data string
	}{
		{"gain", &SessionConfig{}, `{"force_gate":{"gain":5}}`},
		{"preset", &SessionConfig{}, `{"preset":"sideways"}`},
		{"custom without mount", &SessionConfig{}, `{"preset":"custom"}`},
		{"basis", &SessionConfig{}, `{"basis":{"permutation":"XXX"}}`},
		{"handedness", &DeviceConfig{}, `{"handedness":"middle"}`},
		{"factor", &DeviceConfig{}, `{"gravity_compensation":{"enabled":true,"scaling_factor":9}}`},
		{"not an object", &DeviceConfig{}, `[]`},
		{"settings", &Settings{}, `{"devices":{"force_scale":3}}`},
		{"settings type", &Settings{}, `{"system":{"serial_enable":"yes"}}`},
	}
	for _, tt := range bad {
		if err := json.Unmarshal([]byte(tt.data), tt.into); err == nil {
			t.Errorf("%s: %s accepted", tt.name, tt.data)
		}
	}
	// Missing keys take defaults.
	var partial SessionConfig
	if err := json.Unmarshal([]byte(`{"force_gate":{"gain":0.9}}`), &partial); err != nil || partial.ForceGate.Gain != 0.9 || partial.Preset != "defaults" || partial.Damping.ScalarOrZero() != 0 || partial.Damping.Scalar == nil {
		t.Fatalf("partial: %+v %v", partial, err)
	}
}

// A member given twice counts by its last occurrence, the rule Value.Member
// documents: a later null removes an earlier value (the entry then lacks
// it, as if never sent), and a later value replaces an earlier one.
func TestRepeatedMemberLastOccurrenceWins(t *testing.T) {
	identity := IdentityTransformForTest()
	at123 := identity
	at123.Position = Vec3{X: 1, Y: 2, Z: 3}
	tests := []struct {
		key  Key
		body string
		want Entry
		code Code // "" when valid
		path string
	}{
		{KeyPreset, `{"preset":"arm_front","preset":null}`, nil, CodeInvalidValue, ""},
		{KeyPreset, `{"preset":null,"preset":"arm_front"}`, Preset{"arm_front"}, "", ""},
		{KeyPreset, `{"preset":"upside_down","preset":"arm_front"}`, Preset{"arm_front"}, "", ""},
		{KeyPreset, `{"preset":"arm_front","preset":"upside_down"}`, nil, CodeUnknownPreset, "preset"},
		{KeyBasis, `{"permutation":"XZY","permutation":null}`, nil, CodeInvalidValue, ""},
		{KeyBasis, `{"permutation":"XXY","permutation":"XZY"}`, Basis{"XZY"}, "", ""},
		{KeyMount, `{"transform":{},"transform":null}`, nil, CodeInvalidValue, ""},
		{KeyMount, `{"transform":1,"transform":{}}`, Mount{identity}, "", ""},
		{KeyMount, `{"transform":{"position":{"x":1,"y":2,"z":3},"position":null}}`, Mount{identity}, "", ""},
		{KeyMount, `{"transform":{"position":{"x":1,"y":2,"z":3,"z":null}}}`, nil, CodeInvalidValue, "transform.position"},
		{KeyMount, `{"transform":{"position":{"x":1,"y":2,"z":"3","z":3}}}`, Mount{at123}, "", ""},
		{KeyForceGate, `{"gain":0.3,"gain":null}`, nil, CodeInvalidValue, ""},
		{KeyForceGate, `{"gain":2,"gain":0.3}`, ForceGate{Gain: 0.3}, "", ""},
		{KeyHandedness, `{"handedness":"left","handedness":null}`, nil, CodeInvalidValue, ""},
		{KeyHandedness, `{"handedness":"up","handedness":"left"}`, HandednessLeft, "", ""},
		{KeyTorqueScaling, `{"enabled":true,"enabled":null}`, nil, CodeInvalidValue, ""},
		{KeyTorqueScaling, `{"enabled":1,"enabled":true}`, TorqueScaling{Enabled: true}, "", ""},
		{KeyHomeReturn, `{"enabled":true,"enabled":null}`, nil, CodeInvalidValue, ""},
		{KeyHomeReturn, `{"enabled":"yes","enabled":false}`, HomeReturn{}, "", ""},
		// Entries of several members: an invalid earlier occurrence of one
		// of them is superseded too.
		{KeyPassivityController, `{"enabled":true,"scope":"sideways","scope":"output"}`, PassivityController{Enabled: true, Scope: "output"}, "", ""},
		{KeyPassivityController, `{"enabled":true,"scope":"output","scope":null}`, PassivityController{Enabled: true, Scope: "rendered"}, "", ""},
		{KeyPassivityController, `{"enabled":true,"scope":"output","scope":"sideways"}`, nil, CodeInvalidValue, "scope"},
		{KeyPassivityController, `{"enabled":"yes","enabled":false}`, PassivityController{Enabled: false, Scope: "rendered"}, "", ""},
		{KeyPassivityController, `{"enabled":true,"enabled":null}`, nil, CodeInvalidValue, ""},
		{KeyDamping, `{"scalar":-1,"scalar":2}`, Damping{Scalar: ptr(2.0)}, "", ""},
		{KeyDamping, `{"vector":{"x":-1,"y":0,"z":0},"vector":{"x":1,"y":1,"z":1}}`, Damping{Vector: &Vec3{X: 1, Y: 1, Z: 1}}, "", ""},
		{KeyDamping, `{"scalar":2,"scalar":-1}`, nil, CodeOutOfRange, "scalar"},
		{KeyGravityCompensation, `{"enabled":"on","enabled":true,"scaling_factor":9,"scaling_factor":1}`, GravityCompensation{Enabled: true, ScalingFactor: 1}, "", ""},
		{KeyMount, `{"transform":{"position":{"x":"1"},"position":{"x":1,"y":2,"z":3}}}`, Mount{at123}, "", ""},
		{KeyMount, `{"transform":{"rotation":{"w":0,"x":0,"y":0,"z":0},"rotation":{"w":1,"x":0,"y":0,"z":0}}}`, Mount{identity}, "", ""},
		{KeyMount, `{"transform":{"scale":{"x":0,"y":1,"z":1},"scale":{"x":1,"y":1,"z":1}}}`, Mount{identity}, "", ""},
	}
	for _, tt := range tests {
		got, err := DecodeEntry(tt.key, []byte(tt.body), "")
		if tt.code != "" {
			if err == nil || err.Code != tt.code || err.Path != tt.path {
				t.Errorf("%s %s: got %#v, %v; want %s at %q", tt.key.Name(), tt.body, got, err, tt.code, tt.path)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s %s: got %#v, %v; want %#v", tt.key.Name(), tt.body, got, err, tt.want)
		}
	}
}

// What GET answers for a session's preset after a mount was set, POSTed
// back as docs/protocol.md says a body may be, is refused saying where the
// mount is set: the list of preset names alone left the client guessing.
func TestPresetCustomPostedBackNamesTheMount(t *testing.T) {
	_, err := DecodeEntry(KeyPreset, []byte(`{"preset":"custom"}`), "")
	if err == nil || err.Code != CodeUnknownPreset || !strings.Contains(err.Message, "mount") {
		t.Fatalf(`{"preset":"custom"}: %v, want unknown_preset naming the mount entry`, err)
	}
}
