package protocol

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

func TestCodeTable(t *testing.T) {
	seen := map[Code]bool{}
	for _, c := range Codes() {
		if seen[c] {
			t.Errorf("%s listed twice", c)
		}
		seen[c] = true
		if c.HTTPStatus() < 400 || c.DefaultMessage() == "" {
			t.Errorf("%s: status %d message %q", c, c.HTTPStatus(), c.DefaultMessage())
		}
	}
	tests := []struct {
		code    Code
		status  int
		warning bool
	}{
		{CodeInvalidJSON, http.StatusBadRequest, false},
		{CodeOutOfRange, http.StatusBadRequest, false},
		{CodeAmbiguousSelector, http.StatusBadRequest, false},
		{CodeUnknownDevice, http.StatusNotFound, false},
		{CodeUnknownSession, http.StatusNotFound, false},
		{CodeMethodNotAllowed, http.StatusMethodNotAllowed, false},
		{CodeBodyTooLarge, http.StatusRequestEntityTooLarge, false},
		{CodeHeadersTooLarge, http.StatusRequestHeaderFieldsTooLarge, false},
		{CodeForbiddenOrigin, http.StatusForbidden, false},
		{CodeDeviceBusy, http.StatusConflict, false},
		{CodeUnknownField, http.StatusBadRequest, true},
		{CodeCommandIgnored, http.StatusConflict, true},
		{CodeEffectsDropped, http.StatusGone, true},
		{CodeInternal, http.StatusInternalServerError, false},
		{CodeUnavailable, http.StatusServiceUnavailable, false},
		{Code("no_such_code"), http.StatusInternalServerError, false},
	}
	// Whether a code is a warning is where the decoder lists it: under
	// "warnings" (the rest of the message applies) or "errors".
	produce := map[Code]string{
		CodeInvalidJSON:    `{"arm3":`,
		CodeOutOfRange:     `{"arm3":[{"device_id":"049D","configure":{"force_gate":{"gain":2}}}]}`,
		CodeUnknownField:   `{"arm3":[{"device_id":"049D","configure":{"force_gate":{"gain":0.5,"x":1}}}]}`,
		CodeCommandIgnored: `{"arm3":[{"device_id":"049D","commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":1}},"set_cursor_position":{"position":{"x":0,"y":0,"z":0}}}}]}`,
	}
	has := func(list []Error, c Code) bool {
		for _, e := range list {
			if e.Code == c {
				return true
			}
		}
		return false
	}
	for _, tt := range tests {
		if tt.code.HTTPStatus() != tt.status {
			t.Errorf("%s: status %d, want %d", tt.code, tt.code.HTTPStatus(), tt.status)
		}
		msg, ok := produce[tt.code]
		if !ok {
			continue
		}
		var m ClientMessage
		errs := DecodeClientMessage([]byte(msg), nil, &m)
		if has(m.Warnings, tt.code) != tt.warning || has(errs, tt.code) == tt.warning {
			t.Errorf("%s: warning %v, want %v (errors %v, warnings %v)", tt.code, has(m.Warnings, tt.code), tt.warning, errs, m.Warnings)
		}
	}
}

func TestErrorShape(t *testing.T) {
	e := Errorf(CodeOutOfRange, "arm3[0].configure.force_gate.gain", "gain %g is out of range 0..1", 1.5)
	b, _ := json.Marshal(e)
	if string(b) != `{"code":"out_of_range","message":"gain 1.5 is out of range 0..1","path":"arm3[0].configure.force_gate.gain"}` {
		t.Fatal(string(b))
	}
	if !strings.HasPrefix(e.Error(), "protocol: out_of_range") {
		t.Fatal(e.Error())
	}
	b, _ = json.Marshal(Errorf(CodeInvalidJSON, "", ""))
	if !strings.Contains(string(b), `"message":"the body is not valid JSON`) || strings.Contains(string(b), "path") {
		t.Fatal(string(b))
	}
}

func TestTypeAliases(t *testing.T) {
	tests := []struct {
		flag    string
		want    map[string]string
		wantErr bool
	}{
		{"", map[string]string{}, false},
		{"inverse3=arm3,verse_grip=grip", map[string]string{"inverse3": "arm3", "verse_grip": "grip"}, false},
		{" inverse3 = arm3 , ", map[string]string{"inverse3": "arm3"}, false},
		{"inverse3", nil, true},
		{"=arm3", nil, true},
		{"a=arm3,a=grip", nil, true},
	}
	for _, tt := range tests {
		got, err := ParseTypeAliases(tt.flag)
		if (err != nil) != tt.wantErr || (!tt.wantErr && !reflect.DeepEqual(got, tt.want)) {
			t.Errorf("ParseTypeAliases(%q) = %v, %v", tt.flag, got, err)
		}
	}
	for _, bad := range []map[string]string{
		{"inverse3": "arm4"},
		{"grip": "arm3"},
		{"wireless_verse_grip": "arm3"},
		{"session": "arm3"},
		{"keep_alive": "grip"},
		{"bad key": "arm3"},
	} {
		if _, err := NewTypeTable(bad); err == nil || !strings.HasPrefix(err.Error(), "protocol: ") {
			t.Errorf("NewTypeTable(%v) = %v, want a protocol: error", bad, err)
		}
	}
	tt, err := NewTypeTable(map[string]string{"inverse3": "arm3", "verse_grip": "grip", "haptic": "arm3"})
	if err != nil {
		t.Fatal(err)
	}
	if got := tt.Keys(TypeArm); !reflect.DeepEqual(got, []string{"arm3", "haptic", "inverse3"}) {
		t.Errorf("arm keys %v", got)
	}
	// Aliases that repeat a known name of the same type add nothing.
	if got := tt.Keys(TypeGrip); !reflect.DeepEqual(got, []string{"custom_verse_grip", "grip", "verse_grip", "wireless_verse_grip"}) {
		t.Errorf("grip keys %v", got)
	}
	for key, want := range map[string]DeviceType{"arm3": TypeArm, "inverse3": TypeArm, "grip": TypeGrip, "verse_grip": TypeGrip, "session": 0, "Arm3": 0} {
		dt, ok := tt.Resolve(key)
		if dt != want || ok != (want != 0) {
			t.Errorf("Resolve(%s) = %v %v", key, dt, ok)
		}
	}
	var none *TypeTable
	if dt, ok := none.Resolve("grip"); !ok || dt != TypeGrip || len(none.Keys(TypeArm)) != 2 {
		t.Error("a nil table should know every built-in name")
	}
	if !reflect.DeepEqual(tt.Types(), []DeviceType{TypeArm, TypeGrip}) || TypeArm.Key() != "arm3" || TypeGrip.Key() != "grip" {
		t.Error(tt.Types())
	}
}

func TestSettings(t *testing.T) {
	tests := []struct {
		key  SettingKey
		path string
		body string
		want any
		code Code
	}{
		{SettingForceScale, "devices/force_scale", `{"value":0.5}`, 0.5, ""},
		{SettingForceScale, "devices/force_scale", `0.25`, 0.25, ""},
		{SettingForceScale, "devices/force_scale", `{"value":1.5}`, nil, CodeOutOfRange},
		{SettingForceScale, "devices/force_scale", `"0.5"`, nil, CodeInvalidValue},
		{SettingForceScale, "devices/force_scale", `{}`, nil, CodeInvalidValue},
		{SettingSerialEnable, "system/serial_enable", `{"value":false}`, false, ""},
		{SettingGripHook, "features/grip_hook/enabled", `true`, true, ""},
		{SettingScreensaver, "features/screensaver/enabled", `{"value":1}`, nil, CodeInvalidValue},
		{SettingScreensaver, "features/screensaver/enabled", `{value}`, nil, CodeInvalidJSON},
	}
	for _, tt := range tests {
		if k, ok := SettingFromPath(tt.path); !ok || k != tt.key || k.Path() != tt.path {
			t.Errorf("SettingFromPath(%s) = %v %v", tt.path, k, ok)
		}
		got, err := DecodeSetting(tt.key, []byte(tt.body))
		if tt.code != "" {
			if err == nil || err.Code != tt.code {
				t.Errorf("DecodeSetting(%s, %s) = %v, %v; want %s", tt.path, tt.body, got, err, tt.code)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("DecodeSetting(%s, %s) = %v, %v", tt.path, tt.body, got, err)
		}
		s := DefaultSettings()
		if !s.Set(tt.key, got) || s.Get(tt.key) != tt.want {
			t.Errorf("Set/Get %s", tt.path)
		}
		s.Reset(tt.key)
		if d := DefaultSettings(); s.Get(tt.key) != d.Get(tt.key) {
			t.Errorf("Reset %s", tt.path)
		}
	}
	if _, ok := SettingFromPath("devices"); ok {
		t.Error("a settings group is not a setting")
	}
	s := DefaultSettings()
	if s.Set(SettingForceScale, true) || s.Set(SettingGripHook, 1.0) || s.Set(SettingForceScale, 3.0) {
		t.Error("Set accepted a wrong type or range")
	}
	b, _ := json.Marshal(DefaultSettings())
	if string(b) != `{"devices":{"force_scale":1},"system":{"serial_enable":true},"features":{"grip_hook":{"enabled":false},"screensaver":{"enabled":false}}}` {
		t.Fatal(string(b))
	}
	s = Settings{ForceScale: 0.5, SerialEnable: false, GripHook: true, Screensaver: true}
	b, _ = json.Marshal(s)
	var back Settings
	if err := json.Unmarshal(b, &back); err != nil || back != s {
		t.Fatalf("%s → %+v %v", b, back, err)
	}
}

func TestDeviceSelector(t *testing.T) {
	ids := []string{"049D", "1", "0A11", "049D"}
	tests := []struct {
		sel  string
		want []int
	}{
		{"*", []int{0, 1, 2, 3}},
		{"049D", []int{0, 3}},
		{"049d", []int{0, 3}},
		{"0A11", []int{2}},
		{"2", []int{2}},
		{"1", []int{1}}, // an exact id wins over the index reading
		{"4", nil},
		{"FFFF", nil},
		{"-1", nil},
	}
	for _, tt := range tests {
		s, err := ParseDeviceSelector(tt.sel)
		if err != nil {
			t.Fatalf("%s: %v", tt.sel, err)
		}
		if got := s.Match(ids); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s matches %v, want %v", tt.sel, got, tt.want)
		}
	}
	if _, err := ParseDeviceSelector(""); err == nil {
		t.Error("empty selector accepted")
	}
}

func TestSessionSelector(t *testing.T) {
	refs := []SessionRef{
		{1, "co.example.app:main"},
		{2, ""},
		{5, "co.example.app:tool"},
		{7, "org.lab.viewer"},
		{9, "co.example.app:main"},
		{11, "rig:2"},
		{12, "co.haply.hub::demo-orb"},
		{13, "co.haply.hub::demo-orb"},
	}
	tests := []struct {
		sel  string
		want []uint64
	}{
		{"5", []uint64{5}},
		{"#7", []uint64{7}},
		{"3", nil},
		{":0", []uint64{1}},
		{":-1", []uint64{13}},
		{":-8", []uint64{1}},
		{":8", nil},
		// Profile names with "::" (the vendor's Hub demos): NAME, not NAME:I.
		{"co.haply.hub::demo-orb", []uint64{12, 13}},
		{"co.haply.hub::demo-orb:1", []uint64{13}},
		{"co.haply.hub::demo-orb:-2", []uint64{12}},
		{"co.haply.hub::*", []uint64{12, 13}},
		{"co.haply.hub:", nil},
		{"co.example.app:main", []uint64{1, 9}},
		{"co.example.app:*", []uint64{1, 5, 9}},
		{"co.example.app:*:-1", []uint64{9}},
		{"co.example.app:main:1", []uint64{9}},
		{"*", []uint64{1, 5, 7, 9, 11, 12, 13}},
		{"*viewer", []uint64{7}},
		{"rig:2", []uint64{11}}, // a profile literally named NAME:I wins
		{"nobody", nil},
		// The vendor's :NAME:I, always an index among NAME's sessions.
		{":co.example.app:main:0", []uint64{1}},
		{":co.example.app:main:-1", []uint64{9}},
		{":co.haply.hub::*:-1", []uint64{13}},
		{":rig:0", nil}, // no profile "rig": not the profile literally named "rig:0"
		{":default:0", nil},
	}
	for _, tt := range tests {
		s, err := ParseSessionSelector(tt.sel)
		if err != nil {
			t.Fatalf("%s: %v", tt.sel, err)
		}
		if got := s.Match(refs); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s matches %v, want %v", tt.sel, got, tt.want)
		}
		if s.String() != tt.sel {
			t.Errorf("String() = %s", s.String())
		}
	}
	for _, bad := range []string{"", "#", "#x", ":", ":x", ":x:", "::0", ":x:+1", "0", "#0", "#-1"} {
		if _, err := ParseSessionSelector(bad); err == nil || err.Code != CodeInvalidValue {
			t.Errorf("ParseSessionSelector(%q) = %v", bad, err)
		}
	}
}

func TestGlobMatch(t *testing.T) {
	tests := []struct {
		pattern, name string
		want          bool
	}{
		{"a*b", "ab", true},
		{"a*b", "axxb", true},
		{"a*b", "axxbc", false},
		{"*", "", true},
		{"a?b", "a?b", true},
		{"a?b", "axb", false},
		{"[ab]", "[ab]", true},
		{"**a", "ba", true},
		{"*a*a*a*b", "aaaaaaaaaaaaaaaaaaaaa", false},
	}
	for _, tt := range tests {
		if got := globMatch(tt.pattern, tt.name); got != tt.want {
			t.Errorf("globMatch(%q, %q) = %v", tt.pattern, tt.name, got)
		}
	}
}

func TestVersionSatisfies(t *testing.T) {
	tests := []struct {
		constraint   string
		match, valid bool
	}{
		{">=3.5", true, true},
		{">=3.1", true, true},
		{">3.5", false, true},
		{">=4", false, true},
		{"3.x", true, true},
		{"3", true, true},
		{"3.5", true, true},
		{"3.0", false, true},
		{"^3.1", true, true},
		{"~3.4", false, true},
		{">=3.1,<4", true, true},
		{">=3.1 <3.5", false, true},
		{"v3.5", true, true},
		{"", false, false},
		{">=three", false, false},
		{"3.x.1", false, false},
	}
	for _, tt := range tests {
		match, valid := VersionSatisfies(APIVersion, tt.constraint)
		if match != tt.match || valid != tt.valid {
			t.Errorf("VersionSatisfies(%s, %q) = %v %v, want %v %v", APIVersion, tt.constraint, match, valid, tt.match, tt.valid)
		}
	}
}

// Lookup resolves keys and aliases to the interned key without allocating,
// on a nil table (no aliases) as on one with aliases.
func TestTypeTableLookup(t *testing.T) {
	aliases := aliasTable(t)
	for _, tt := range []struct {
		table *TypeTable
		key   string
		dt    DeviceType
		ok    bool
	}{
		{nil, "arm3", TypeArm, true},
		{nil, "grip", TypeGrip, true},
		{nil, "inverse3", TypeArm, true},
		{nil, "wireless_verse_grip", TypeGrip, true},
		{nil, "custom_verse_grip", TypeGrip, true},
		{nil, "Inverse3", 0, false},
		{aliases, "inverse3", TypeArm, true},
		{aliases, "verse_grip", TypeGrip, true},
		{aliases, "session", 0, false},
	} {
		key := []byte(tt.key)
		dt, k, ok := tt.table.Lookup(key)
		if dt != tt.dt || ok != tt.ok || (ok && k != tt.key) || (!ok && k != "") {
			t.Errorf("Lookup(%q) = %v, %q, %v", tt.key, dt, k, ok)
		}
		if n := testing.AllocsPerRun(100, func() { tt.table.Lookup(key) }); n != 0 {
			t.Errorf("Lookup(%q) allocates %v times", tt.key, n)
		}
	}
	if got := (*TypeTable)(nil).Keys(TypeArm); !reflect.DeepEqual(got, []string{"arm3", "inverse3"}) {
		t.Errorf("nil table Keys(arm) = %v", got)
	}
	if got := aliases.Keys(DeviceType(9)); got != nil {
		t.Errorf("Keys(9) = %v", got)
	}
}

// The naming table: what each naming writes, each device in one collection,
// every known name accepted, and the family selectors.
func TestNamingTable(t *testing.T) {
	for _, tt := range []struct {
		flag        string
		collections []string
		arm, wired  string
		wireless    string
	}{
		{"haply", []string{"inverse3", "verse_grip", "wireless_verse_grip"}, "inverse3", "verse_grip", "wireless_verse_grip"},
		{"reference", []string{"arm3", "grip"}, "arm3", "grip", "grip"},
	} {
		n, err := ParseNaming(tt.flag)
		if err != nil || n.String() != tt.flag {
			t.Fatalf("ParseNaming(%q) = %v, %v", tt.flag, n, err)
		}
		types, err := NewNamedTypeTable(n, nil)
		if err != nil {
			t.Fatal(err)
		}
		var keys []string
		for _, c := range types.Collections() {
			keys = append(keys, c.Key)
		}
		if !reflect.DeepEqual(keys, tt.collections) {
			t.Errorf("%s: collections %v", tt.flag, keys)
		}
		got := []string{types.Name(TypeArm, LinkAny), types.Name(TypeGrip, LinkWired), types.Name(TypeGrip, LinkWireless), types.Name(TypeGrip, LinkAny)}
		if want := []string{tt.arm, tt.wired, tt.wireless, tt.wireless}; !reflect.DeepEqual(got, want) {
			t.Errorf("%s: names %v, want %v", tt.flag, got, want)
		}
		// Each device in exactly one collection.
		for _, dev := range []struct {
			dt   DeviceType
			link Link
		}{{TypeArm, LinkAny}, {TypeGrip, LinkWired}, {TypeGrip, LinkWireless}, {TypeGrip, LinkAny}} {
			n := 0
			for _, c := range types.Collections() {
				if c.Holds(dev.dt, dev.link) {
					n++
				}
			}
			if n != 1 {
				t.Errorf("%s: %v/%v is in %d collections", tt.flag, dev.dt, dev.link, n)
			}
		}
		for name, want := range map[string]DeviceType{"arm3": TypeArm, "inverse3": TypeArm, "grip": TypeGrip, "verse_grip": TypeGrip, "wireless_verse_grip": TypeGrip, "custom_verse_grip": TypeGrip} {
			if dt, ok := types.Resolve(name); !ok || dt != want {
				t.Errorf("%s: Resolve(%s) = %v, %v", tt.flag, name, dt, ok)
			}
		}
	}
	if _, err := ParseNaming("vendor"); err == nil || !strings.HasPrefix(err.Error(), "protocol: ") {
		t.Errorf("ParseNaming(vendor) = %v", err)
	}
	for seg, want := range map[string]DeviceType{"*inverse": TypeArm, "*verse_grip": TypeGrip, "*grip": 0, "inverse": 0, "*": 0} {
		c, ok := ParseFamilySelector(seg)
		if ok != (want != 0) || c.Type != want || ok && (c.Link != LinkAny || c.Key != seg) {
			t.Errorf("ParseFamilySelector(%q) = %+v, %v", seg, c, ok)
		}
	}
}
