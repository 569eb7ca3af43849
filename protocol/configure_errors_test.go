package protocol

import (
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestConfigureListsEveryError: a configure (or session.configure) with
// several bad keys is refused whole and lists each of them, so a client
// fixing its configuration sees every bad key at once rather than one per
// round trip.
func TestConfigureListsEveryError(t *testing.T) {
	types := aliasTable(t)
	tests := []struct {
		name   string
		msg    string
		errors []string // code@path, sorted
	}{
		{
			name: "two bad keys",
			msg:  `{"arm3":[{"device_id":"049D","configure":{"force_gate":{"gain":7},"basis":{"permutation":"XXY"}}}]}`,
			errors: []string{
				"invalid_permutation@arm3[0].configure.basis.permutation",
				"out_of_range@arm3[0].configure.force_gate.gain",
			},
		},
		{
			name: "a bad key beside a good one, and a bad filter",
			msg:  `{"arm3":[{"device_id":"049D","configure":{"preset":{"preset":"ceiling"},"damping":{"scalar":2},"filters":{"force_gate":{"gain":-1}}}}]}`,
			errors: []string{
				"out_of_range@arm3[0].configure.filters.force_gate.gain",
				"unknown_preset@arm3[0].configure.preset.preset",
			},
		},
		{
			name: "two bad filters",
			msg:  `{"arm3":[{"device_id":"049D","configure":{"filters":{"damping":{},"force_gate":{"gain":2}}}}]}`,
			errors: []string{
				"damping_empty@arm3[0].configure.filters.damping",
				"out_of_range@arm3[0].configure.filters.force_gate.gain",
			},
		},
		{
			name: "an HTTP-only key and a bad value",
			msg:  `{"arm3":[{"device_id":"049D","configure":{"handedness":"left","force_gate":{"gain":2}}}]}`,
			errors: []string{
				"http_only_key@arm3[0].configure.handedness",
				"out_of_range@arm3[0].configure.force_gate.gain",
			},
		},
		{
			name: "preset with mount beside a bad value",
			msg:  `{"arm3":[{"device_id":"049D","configure":{"preset":{"preset":"arm_front"},"mount":{"transform":{}},"damping":{"scalar":-1}}}]}`,
			errors: []string{
				"out_of_range@arm3[0].configure.damping.scalar",
				"preset_mount_conflict@arm3[0].configure",
			},
		},
		{
			name: "preset with a bad mount is still a conflict",
			msg:  `{"arm3":[{"device_id":"049D","configure":{"preset":{"preset":"arm_front"},"mount":{"transform":{"scale":{"x":0,"y":1,"z":1}}}}}]}`,
			errors: []string{
				"out_of_range@arm3[0].configure.mount.transform.scale",
				"preset_mount_conflict@arm3[0].configure",
			},
		},
		{
			name: "two bad session keys",
			msg:  `{"session":{"configure":{"lease":{"ms":5},"basis":{"permutation":"XYY"},"profile":{}}}}`,
			errors: []string{
				"invalid_permutation@session.configure.basis.permutation",
				"invalid_value@session.configure.profile.name",
				"out_of_range@session.configure.lease.ms",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var m ClientMessage
			errs := DecodeClientMessage([]byte(tt.msg), types, &m)
			if got := codesAt(errs); !reflect.DeepEqual(got, tt.errors) {
				t.Fatalf("errors %v, want %v", got, tt.errors)
			}
		})
	}
}

// TestErrorsPastTheCapAreNotFormatted: a hostile message of many bad device
// entries (up to the 1 MiB message limit) formatted every error, path and
// message, before the cap on listed errors dropped all but MaxErrors of
// them: eight times the allocations of the same message with valid values.
// Past the cap an error is counted, as a warning is, and the message costs
// about what its valid twin does.
func TestErrorsPastTheCapAreNotFormatted(t *testing.T) {
	types := aliasTable(t)
	tests := []struct {
		name       string
		bad, valid string // one device entry each, the same size
	}{
		{"out of range",
			`{"device_id":"049D","configure":{"force_gate":{"gain":7.0}}}`,
			`{"device_id":"049D","configure":{"force_gate":{"gain":0.5}}}`},
		{"two bad keys",
			`{"device_id":"049D","configure":{"force_gate":{"gain":7.0},"basis":{"permutation":"XXY"}}}`,
			`{"device_id":"049D","configure":{"force_gate":{"gain":0.5},"basis":{"permutation":"XZY"}}}`},
		{"HTTP-only key",
			`{"device_id":"049D","configure":{"handedness":"left"}}`,
			`{"device_id":"049D","configure":{"basis":{"permutation":"XZY"}}}`},
		{"bad filter",
			`{"device_id":"049D","configure":{"filters":{"damping":{}}}}`,
			`{"device_id":"049D","configure":{"filters":{"damping":{"scalar":1}}}}`},
		{"bad command",
			`{"device_id":"049D","commands":{"set_cursor_force":{"vector":{"x":1,"y":2,"z":"a"}}}}`,
			`{"device_id":"049D","commands":{"set_cursor_force":{"vector":{"x":1,"y":2,"z":3.0}}}}`},
		{"no device id",
			`{"device_ix":"049D","commands":{"set_cursor_force":{"vector":{"x":1,"y":2,"z":3}}}}`,
			`{"device_id":"049D","commands":{"set_cursor_force":{"vector":{"x":1,"y":2,"z":3}}}}`},
		{"bad effect",
			`{"device_id":"049D","effects":{"set":[{"id":"d","type":"damper","scalar":-1}]}}`,
			`{"device_id":"049D","effects":{"set":[{"id":"d","type":"damper","scalar":10}]}}`},
		{"unknown effect type",
			`{"device_id":"049D","effects":{"set":[{"id":"d","type":"dampex","scalar":1}]}}`,
			`{"device_id":"049D","effects":{"set":[{"id":"d","type":"damper","scalar":1}]}}`},
		{"bad effect id",
			`{"device_id":"049D","effects":{"set":[{"id":"d d","type":"damper","scalar":1}]}}`,
			`{"device_id":"049D","effects":{"set":[{"id":"d_d","type":"damper","scalar":1}]}}`},
		{"effect value over its range",
			`{"device_id":"049D","effects":{"set":[{"id":"w","type":"wall","position":{"x":0,"y":0,"z":0},"normal":{"x":0,"y":0,"z":1},"stiffness":90000}]}}`,
			`{"device_id":"049D","effects":{"set":[{"id":"w","type":"wall","position":{"x":0,"y":0,"z":0},"normal":{"x":0,"y":0,"z":1},"stiffness":900.0}]}}`},
		{"effect member missing",
			`{"device_id":"049D","effects":{"set":[{"id":"w","type":"wall","position":{"x":0,"y":0,"z":0},"stiffness":900.0}]}}`,
			`{"device_id":"049D","effects":{"set":[{"id":"w","type":"wall","position":{"x":0,"y":0,"z":0},"normal":{"x":0,"y":0,"z":1},"stiffness":900.0}]}}`},
		{"command without its field",
			`{"device_id":"049D","commands":{"set_cursor_force":{"vectox":{"x":1,"y":2,"z":3}}}}`,
			`{"device_id":"049D","commands":{"set_cursor_force":{"vector":{"x":1,"y":2,"z":3}}}}`},
		{"entry not an object",
			`"049D"`,
			`{"device_id":"049D"}`},
		{"configure not an object",
			`{"device_id":"049D","configure":[]}`,
			`{"device_id":"049D","configure":{}}`},
	}
	message := func(entry string) []byte {
		n := (MaxMessageBytes - 64) / (len(entry) + 1)
		var b strings.Builder
		b.WriteString(`{"arm3":[`)
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(entry)
		}
		b.WriteString(`]}`)
		return []byte(b.String())
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bad, valid := message(tt.bad), message(tt.valid)
			var m ClientMessage
			if errs := DecodeClientMessage(valid, types, &m); len(errs) != 0 {
				t.Fatalf("the valid twin: errors %v", errs[0])
			}
			errs := DecodeClientMessage(bad, types, &m)
			if len(errs) != MaxErrors || m.ErrorsDropped < 1000 {
				t.Fatalf("%d errors listed, %d dropped; want %d listed and the rest dropped", len(errs), m.ErrorsDropped, MaxErrors)
			}
			for _, e := range errs {
				if e.Message == "" || e.Path == "" {
					t.Fatalf("a listed error without its message or path: %+v", e)
				}
			}
			allocsValid := testing.AllocsPerRun(3, func() { DecodeClientMessage(valid, types, &m) })
			allocsBad := testing.AllocsPerRun(3, func() { DecodeClientMessage(bad, types, &m) })
			// The listed errors are formatted: a few dozen allocations each.
			if limit := allocsValid + 40*MaxErrors; allocsBad > limit {
				t.Fatalf("%d bad entries: %.0f allocations, the valid twin %.0f; want at most %.0f", len(errs)+m.ErrorsDropped, allocsBad, allocsValid, limit)
			}
		})
	}
}

// TestCommandsAndEffectsListEveryError: a device's commands and its effects
// declaration reported their first error only, where configure lists each
// bad key: a client sending an effect with three wrong members learnt of
// one per round trip. Each bad command, each bad effect (or removed id) and
// each bad member of an effect has its own entry now; inside one member's
// value the first error is reported, as for a configure key. The message
// still applies not at all.
func TestCommandsAndEffectsListEveryError(t *testing.T) {
	types := aliasTable(t)
	tests := []struct {
		name   string
		msg    string
		errors []string // code@path, sorted
	}{
		{
			name: "an effect with three bad members",
			msg:  `{"arm3":[{"device_id":"049D","effects":{"set":[{"id":"w","type":"wall","position":{"x":0,"y":0,"z":999},"normal":{"x":0,"y":0,"z":0},"stiffness":-5}]}}]}`,
			errors: []string{
				"out_of_range@arm3[0].effects.set[0].normal",
				"out_of_range@arm3[0].effects.set[0].position.z",
				"out_of_range@arm3[0].effects.set[0].stiffness",
			},
		},
		{
			name: "a missing member beside a bad one",
			msg:  `{"arm3":[{"device_id":"049D","effects":{"set":[{"id":"v","type":"vibration","amplitude":-1}]}}]}`,
			errors: []string{
				"invalid_value@arm3[0].effects.set[0]",
				"out_of_range@arm3[0].effects.set[0].amplitude",
			},
		},
		{
			name: "two bad effects and a bad removed id",
			msg:  `{"arm3":[{"device_id":"049D","effects":{"remove":["a b"],"set":[{"id":"s","type":"damper","scalar":-1},{"id":"ok","type":"damper","scalar":1},{"id":"t","type":"toaster"}]}}]}`,
			errors: []string{
				"invalid_value@arm3[0].effects.remove[0]",
				"invalid_value@arm3[0].effects.set[2].type",
				"out_of_range@arm3[0].effects.set[0].scalar",
			},
		},
		{
			name: "a bad clear beside a bad effect",
			msg:  `{"arm3":[{"device_id":"049D","effects":{"clear":1,"set":[{"id":"s","type":"damper","scalar":-1}]}}]}`,
			errors: []string{
				"invalid_value@arm3[0].effects.clear",
				"out_of_range@arm3[0].effects.set[0].scalar",
			},
		},
		{
			name: "an SDF effect with a bad shape and a bad curve",
			msg:  `{"arm3":[{"device_id":"049D","effects":{"set":[{"id":"b","type":"sdf","shape":{"primitive":"blob","parameters":{}},"range":-1,"ease":"wobbly"}]}}]}`,
			errors: []string{
				"invalid_value@arm3[0].effects.set[0].ease",
				"invalid_value@arm3[0].effects.set[0].shape.primitive",
				"out_of_range@arm3[0].effects.set[0].range",
			},
		},
		{
			name: "two bad commands",
			msg:  `{"arm3":[{"device_id":"049D","commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":"up"}},"set_transform":{"scale":{"x":0,"y":1,"z":1}}}}]}`,
			errors: []string{
				"invalid_value@arm3[0].commands.set_cursor_force.vector.z",
				"out_of_range@arm3[0].commands.set_transform.scale",
			},
		},
		{
			name: "a bad command, a bad configure key and a bad effect",
			msg:  `{"arm3":[{"device_id":"049D","commands":{"set_cursor_force":{}},"configure":{"force_gate":{"gain":7}},"effects":{"set":[{"id":"s","type":"damper"}]}}]}`,
			errors: []string{
				"invalid_value@arm3[0].commands.set_cursor_force",
				"invalid_value@arm3[0].effects.set[0]",
				"out_of_range@arm3[0].configure.force_gate.gain",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var m ClientMessage
			errs := DecodeClientMessage([]byte(tt.msg), types, &m)
			if got := codesAt(errs); !reflect.DeepEqual(got, tt.errors) {
				t.Fatalf("errors %v, want %v", got, tt.errors)
			}
		})
	}
}

// TestErrorsRepeatAtMostAClippedPartOfTheClientsText: an error or warning
// names the client's member or value by its first maxQuotedBytes, in its
// path and its message alike, so a huge name does not come back twice in a
// frame past a client's limit (tourfx2: a 480 KB unknown member's name made
// a 962 KB frame; a 500 kB number a 500 kB message).
func TestErrorsRepeatAtMostAClippedPartOfTheClientsText(t *testing.T) {
	types := aliasTable(t)
	long := strings.Repeat("é", 240_000) // 480 KB, two bytes a character
	digits := strings.Repeat("9", 500_000)
	for _, tt := range []struct {
		name, msg string
		warning   bool
		v30       bool // devices keyed by id, as the 3.0 format has them
	}{
		{name: "an unknown member", msg: `{"session":{"configure":{"lease":{"ms":200,"` + long + `":1}}}}`, warning: true},
		{name: "an unknown member at the top", msg: `{"` + long + `":1}`, warning: true},
		{name: "a 3.0 device key", msg: `{"arm3":{"` + long + `":{"configure":{"damping":{"scalar":-1}}}}}`, v30: true},
		{name: "a number past float64", msg: `{"session":{"configure":{"lease":{"ms":` + digits + `}}}}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var m ClientMessage
			var errs []Error
			if !tt.v30 {
				errs = DecodeClientMessage([]byte(tt.msg), types, &m)
			} else {
				errs = m.Decode([]byte(tt.msg), types, func(m *ClientMessage, dt DeviceType, key string, devices Value) {
					for d := devices.Members(); d.Next(); {
						m.DecodeDevice(dt, key, 0, d.Key(), d.Value())
					}
				})
			}
			if tt.warning {
				errs = m.Warnings
			}
			if len(errs) == 0 {
				t.Fatalf("no error or warning for %.40s…", tt.msg)
			}
			for _, e := range errs {
				if len(e.Message) > 4*maxQuotedBytes || len(e.Path) > 4*maxQuotedBytes {
					t.Errorf("%s: a %d-byte message, a %d-byte path: %.80s…", e.Code, len(e.Message), len(e.Path), e.Message)
				}
				if !utf8.ValidString(e.Message) || !utf8.ValidString(e.Path) {
					t.Errorf("%s: clipped inside a character: %.80q", e.Code, e.Message)
				}
			}
		})
	}
}

// TestArmOnlySettingOnAGripIsAWarning: an arm's setting sent to a grip
// (HTTP-only on an arm, such as handedness) changes nothing and is an
// unknown_key warning, as every setting a device does not have is; the
// rest of the message applies. It was an http_only_key error naming a
// grip route that does not exist, which refused the arm's force beside it
// (toursim).
func TestArmOnlySettingOnAGripIsAWarning(t *testing.T) {
	types := aliasTable(t)
	for _, key := range []string{`"handedness":"left"`, `"gravity_compensation":{"enabled":true}`, `"force_clamp":{"n":3}`} {
		t.Run(key, func(t *testing.T) {
			msg := `{"verse_grip":[{"device_id":"13174","configure":{` + key + `}}],` +
				`"inverse3":[{"device_id":"CBBD","commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":1}}}}]}`
			var m ClientMessage
			if errs := DecodeClientMessage([]byte(msg), types, &m); len(errs) != 0 {
				t.Fatalf("errors %v, want none", codesAt(errs))
			}
			if got := codesAt(m.Warnings); len(got) != 1 || !strings.HasPrefix(got[0], "unknown_key@verse_grip[0].configure.") {
				t.Errorf("warnings %v, want one unknown_key under verse_grip[0].configure", got)
			}
		})
	}
}

// TestCommandOfTheOtherKindNamesTheClientsType: a grip's command sent to
// an arm is a warning that names the arm as the client did ("a arm3
// command" named the reference name under the vendor's naming, toursim).
func TestCommandOfTheOtherKindNamesTheClientsType(t *testing.T) {
	types := aliasTable(t)
	for _, tt := range []struct{ msg, want string }{
		{`{"inverse3":[{"device_id":"CBBD","commands":{"probe_orientation":{}}}]}`, "probe_orientation is not a command for inverse3 devices"},
		{`{"arm3":[{"device_id":"CBBD","commands":{"probe_orientation":{}}}]}`, "probe_orientation is not a command for arm3 devices"},
		{`{"verse_grip":[{"device_id":"13174","commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":1}}}}]}`, "set_cursor_force is not a command for verse_grip devices"},
	} {
		var m ClientMessage
		if errs := DecodeClientMessage([]byte(tt.msg), types, &m); len(errs) != 0 {
			t.Fatalf("%s: errors %v", tt.msg, codesAt(errs))
		}
		if len(m.Warnings) != 1 || !strings.Contains(m.Warnings[0].Message, tt.want) {
			t.Errorf("%s: warnings %+v, want one saying %q", tt.msg, m.Warnings, tt.want)
		}
	}
}
