package protocol

import (
	"reflect"
	"testing"
)

// fastShapes are messages the command fast path decodes itself.
var fastShapes = []string{
	`{"arm3":[{"device_id":"049D","commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":0.5}}}}]}`,
	`{"inverse3":[{"device_id":"049D","commands":{"set_cursor_force":{"values":{"x":-1.25,"y":3e-2,"z":-0}}}}]}`,
	`{ "arm3" : [ { "device_id" : "arm-1", "commands" : { "set_cursor_position" : { "position" : { "x" : 0.01 , "y" : 0.02 , "z" : 0.03 } } } } ] }` + "\n",
	"{\"arm3\":\t[{\"device_id\":\"049D\",\r\n\"commands\":{\"set_angular_torques\":{\"torques\":{\"a0\":1,\"a1\":2,\"a2\":3}}}}]}",
	`{"arm3":[{"device_id":"049D","commands":{"set_angular_position":{"angles":{"a0":1E2,"a1":-2.5e+1,"a2":123456789012345678}}}}]}`,
	`{"arm3":[{"device_id":"049D","commands":{"probe_position":{}}}]}`,
	`{"grip":[{"device_id":"61548","commands":{"probe_orientation":{ }}}]}`,
	`{"arm3":[{"device_id":"A","commands":{"set_cursor_force":{"vector":{"x":1,"y":2,"z":3}}}},{"device_id":"B","commands":{"set_cursor_force":{"vector":{"x":4,"y":5,"z":6}}}}]}`,
	`{"arm3":[{"device_id":"049D","commands":{"set_cursor_force":{"vector":{"x":0.1,"y":1.7976931348623157e308,"z":4.9e-324}}}}]}`,
}

// nearMisses differ from a fast shape in one way each: the general decoder
// decodes them (with its errors and warnings), and both paths must agree.
var nearMisses = []string{
	`{"arm3":[{"device_id":"0\u00349D","commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":0.5}}}}]}`,
	`{"arm3":[{"device_id":"049D","commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":1e400}}}}]}`,
	`{"arm3":[{"device_id":"049D","commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":01}}}}]}`,
	`{"arm3":[{"device_id":"049D","commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":.5}}}}]}`,
	`{"arm3":[{"device_id":"049D","commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":1.}}}}]}`,
	`{"arm3":[{"device_id":"049D","commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":-}}}}]}`,
	`{"arm3":[{"device_id":"049D","commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":"1"}}}}]}`,
	`{"arm3":[{"device_id":"049D","commands":{"set_cursor_force":{"vector":{"x":0,"y":0}}}}]}`,
	`{"arm3":[{"device_id":"049D","commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":1,"w":2}}}}]}`,
	`{"arm3":[{"device_id":"049D","commands":{"set_cursor_force":{"vector":{"z":0,"y":0,"x":1}}}}]}`,
	`{"arm3":[{"device_id":"049D","commands":{"set_cursor_force":{"vector":{"x":0,"x":0,"z":1}}}}]}`,
	`{"arm3":[{"device_id":"049D","commands":{"set_cursor_force":{"force":{"x":0,"y":0,"z":1}}}}]}`,
	`{"arm3":[{"device_id":"049D","commands":{"set_angular_torques":{"values":{"a0":0,"a1":0,"a2":1}}}}]}`,
	`{"arm3":[{"device_id":"049D","commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":1}},"set_cursor_position":{"position":{"x":0,"y":0,"z":1}}}}]}`,
	`{"arm3":[{"device_id":"049D","commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":1}}},"configure":{"preset":{"preset":"arm_front"}}}]}`,
	`{"arm3":[{"commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":1}}},"device_id":"049D"}]}`,
	`{"arm3":[{"device_id":"","commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":1}}}}]}`,
	`{"arm3":[{"device_id":7,"commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":1}}}}]}`,
	`{"arm3":[{"device_id":"049D","commands":{"probe_orientation":{}}}]}`,
	`{"grip":[{"device_id":"61548","commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":1}}}}]}`,
	`{"arm3":[{"device_id":"049D","commands":{"probe_position":{"extra":1}}}]}`,
	`{"arm3":[{"device_id":"049D","commands":{"set_gravity_compensation":true}}]}`,
	`{"arm3":[{"device_id":"049D","commands":{"launch":{}}}]}`,
	`{"arm3":[{"device_id":"049D","commands":{}}]}`,
	`{"arm3":[]}`,
	`{"arm3":{"049D":{"commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":1}}}}}}`,
	`{"arm4":[{"device_id":"049D","commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":1}}}}]}`,
	`{"session":[{"device_id":"049D","commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":1}}}}]}`,
	`{"keep_alive":[{"device_id":"049D","commands":{"probe_position":{}}}]}`,
	`{"arm3":[{"device_id":"049D","commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":1}}}}],"grip":[]}`,
	`{"arm3":[{"device_id":"049D","commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":1}}}}]}x`,
	`{"arm3":[{"device_id":"049D","commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":1}}}}]`,
	`{"arm3":[{"device_id":"049D","commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":1}}}},]}`,
	`{"arm3":[{"device_id":"049D","commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":1}}}}]}` + "\x00",
	"{\"arm3\":[{\"device_id\":\"04\xff9D\",\"commands\":{\"probe_position\":{}}}]}",
	"{\"arm3\":[{\"device_id\":\"caf\u00e9\",\"commands\":{\"probe_position\":{}}}]}",
	"{\"arm3\":[{\"device_id\":\"a\tb\",\"commands\":{\"probe_position\":{}}}]}",
	"\ufeff" + `{"arm3":[{"device_id":"049D","commands":{"probe_position":{}}}]}`,
	``,
	`{`,
	`{}`,
}

// decodeBoth decodes data with DecodeClientMessage (the fast path, then the
// general decoder) and with the general decoder alone, each into fresh
// messages, and fails when they differ in anything a caller reads.
func decodeBoth(t *testing.T, types *TypeTable, data []byte) (fast bool) {
	t.Helper()
	var viaFast, general, probe ClientMessage
	DecodeClientMessage(data, types, &viaFast)
	general.Decode(data, types, decodeDeviceArray)
	fast = probe.decodeCommandFast(data, types)
	for _, c := range []struct {
		name      string
		got, want any
	}{
		{"devices", orNil(viaFast.Devices), orNil(general.Devices)},
		{"errors", orNil(viaFast.Errors), orNil(general.Errors)},
		{"warnings", orNil(viaFast.Warnings), orNil(general.Warnings)},
		{"session", viaFast.Session, general.Session},
		{"empty", viaFast.Empty, general.Empty},
		{"dropped", [2]int{viaFast.WarningsDropped, viaFast.ErrorsDropped}, [2]int{general.WarningsDropped, general.ErrorsDropped}},
	} {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Fatalf("%q (fast path %v): %s differ:\nwith the fast path %+v\ngeneral decoder   %+v", data, fast, c.name, c.got, c.want)
		}
	}
	if fast && (len(general.Errors) != 0 || len(general.Warnings) != 0) {
		t.Fatalf("%q: the fast path took a message the general decoder answers with %v %v", data, general.Errors, general.Warnings)
	}
	return fast
}

// orNil is s, or nil when s is empty: callers read lengths, and a reused
// slice is empty where a fresh one is nil.
func orNil[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return s
}

func TestFastDecodeAgreesWithGeneral(t *testing.T) {
	types := aliasTable(t)
	cases := []struct {
		name     string
		messages []string
		fast     bool
	}{
		{"streaming commands take the fast path", fastShapes, true},
		{"one difference each: the general decoder", nearMisses, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, s := range tc.messages {
				if fast := decodeBoth(t, types, []byte(s)); fast != tc.fast {
					t.Errorf("%q: fast path %v, want %v", s, fast, tc.fast)
				}
			}
		})
	}
	t.Run("fuzz seeds", func(t *testing.T) {
		for _, s := range fuzzSeeds {
			decodeBoth(t, types, []byte(s))
		}
	})
}

// TestFastDecodeReusesTheMessage: a session decodes every message into one
// ClientMessage; a fast-path message after a general one (and back) must
// leave nothing of the other behind.
func TestFastDecodeReusesTheMessage(t *testing.T) {
	types := aliasTable(t)
	sequence := []string{
		`{"arm3":[{"device_id":"049D","commands":{"set_cursor_force":{"vector":{"x":1,"y":2,"z":3}}},"configure":{"preset":{"preset":"arm_front"}},"effects":{"set":[{"id":"w","type":"wall","position":{"x":0,"y":0,"z":0},"normal":{"x":0,"y":0,"z":1},"stiffness":100}]}},{"device_id":"B","commands":{"set_gravity_compensation":true}}],"session":{"configure":{"lease":{"ms":50}}}}`,
		fastShapes[0],
		`{"arm3":[{"device_id":"049D","commands":{"set_cursor_force":{"vector":{"x":0,"y":0}}}}]}`,
		fastShapes[3],
		fastShapes[7],
		fastShapes[5],
	}
	var reused ClientMessage
	for _, s := range sequence {
		DecodeClientMessage([]byte(s), types, &reused)
		var fresh ClientMessage
		DecodeClientMessage([]byte(s), types, &fresh)
		if !reflect.DeepEqual(orNil(reused.Errors), orNil(fresh.Errors)) || !reflect.DeepEqual(orNil(reused.Warnings), orNil(fresh.Warnings)) ||
			!reflect.DeepEqual(reused.Session, fresh.Session) || len(reused.Devices) != len(fresh.Devices) {
			t.Fatalf("%q: reused message %+v, fresh %+v", s, reused, fresh)
		}
		for i := range fresh.Devices {
			r, f := &reused.Devices[i], &fresh.Devices[i]
			if r.Type != f.Type || r.TypeKey != f.TypeKey || r.Path != f.Path || r.DeviceID != f.DeviceID ||
				r.Command != f.Command || len(r.Configure) != len(f.Configure) || r.HasEffects != f.HasEffects ||
				r.Transform != f.Transform || r.GravityCompensation != f.GravityCompensation {
				t.Fatalf("%q: device %d reused %+v, fresh %+v", s, i, *r, *f)
			}
		}
	}
}

// FuzzFastDecodeAgreesWithGeneral: whatever the bytes, DecodeClientMessage
// (fast path first) and the general decoder alone give the same message.
func FuzzFastDecodeAgreesWithGeneral(f *testing.F) {
	for _, list := range [][]string{fastShapes, nearMisses, fuzzSeeds} {
		for _, s := range list {
			f.Add([]byte(s))
		}
	}
	types, err := NewTypeTable(map[string]string{"inverse3": "arm3", "verse_grip": "grip"})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		decodeBoth(t, types, data)
	})
}
