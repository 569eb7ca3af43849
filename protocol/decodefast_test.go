package protocol

import (
	"fmt"
	"math"
	"reflect"
	"strings"
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
	// Numbers at the edges: signed zeros, subnormals, long mantissas,
	// exponents with many digits (underflow is refused: nearMisses).
	`{"arm3":[{"device_id":"049D","commands":{"set_cursor_force":{"vector":{"x":-0.0,"y":1e-320,"z":-4.9e-324}}}}]}`,
	`{"arm3":[{"device_id":"049D","commands":{"set_cursor_force":{"vector":{"x":0.1e1,"y":-0E-0,"z":123456789012345678901234567890e-29}}}}]}`,
	`{"arm3":[{"device_id":"049D","commands":{"set_cursor_force":{"vector":{"x":1E+2,"y":1e-00000000000000000000000000000000000001,"z":2.2250738585072014e-308}}}}]}`,
	`{"arm3":[{"device_id":"049D","commands":{"set_cursor_force":{"vector":{"x":0.000000000000000000000000000000000000000000001,"y":9007199254740993,"z":-999999999999999.9}}}}]}`,
	`{"arm3":[{"device_id":"049D","commands":{"set_cursor_position":{"values":{"x":-1e-00000000000000000000000000000000000000000000300,"y":0,"z":0}}}}]}`,
	// Every type key of the table, and ids of any printable ASCII.
	`{"wireless_verse_grip":[{"device_id":"1","commands":{"probe_orientation":{}}}]}`,
	`{"custom_verse_grip":[{"device_id":"1","commands":{"probe_orientation":{}}}]}`,
	`{"verse_grip":[{"device_id":"1","commands":{"probe_orientation":{}}}]}`,
	`{"arm3":[{"device_id":" !#$%&'()*+,-./:;<=>?@[]^_{|}~","commands":{"probe_position":{}}}]}`,
	`{"arm3":[{"device_id":"` + strings.Repeat("A", 4096) + `","commands":{"probe_position":{}}}]}`,
	" \t\r\n" + `{"arm3":[{"device_id":"049D","commands":{"probe_position":{   }}}]}` + " \t\r\n",
	streamEntries(2000, ""),
	// State commands beside the command, and several arrays, as real
	// clients send them every cycle (docs/clients.md).
	`{"arm3":[{"device_id":"049D","commands":{"set_gravity_compensation":true}}]}`,
	`{"arm3":[{"device_id":"049D","commands":{}}]}`,
	`{"arm3":[]}`,
	`{"arm3":[{"device_id":"049D","commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":1}}}}],"grip":[]}`,
	`{"keep_alive":{},"arm3":[{"device_id":"049D","commands":{"probe_position":{}}}]}`,
	`{"arm3":[{"device_id":"049D","commands":{"probe_position":{}}}],"keep_alive":true}`,
	`{"arm3":[{"device_id":"049D","commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":1}},"keep_alive":true}}]}`,
	`{"arm3":[{"device_id":"049D","commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":1}},"set_gravity_compensation":true}}]}`,
	`{"inverse3":[{"device_id":"049D","commands":{"set_cursor_force":{"values":{"x":0,"y":0,"z":2}},"set_gravity_compensation":true}}],"verse_grip":[{"device_id":"61548","commands":{"probe_orientation":{}}}],"custom_verse_grip":[{"device_id":"61548","commands":{"probe_orientation":{}}}],"wireless_verse_grip":[{"device_id":"61548","commands":{"probe_orientation":{}}}]}`,
	`{"inverse3":[{"device_id":"049D","commands":{"set_cursor_position":{"values":{"x":0.01,"y":0.14,"z":0.11}},"set_gravity_compensation":false}}],"verse_grip":[]}`,
	`{"inverse3":[{"device_id":"049D","commands":{ "set_gravity_compensation" : false , "set_cursor_force":{"values":{"x":0,"y":0,"z":0}} }}]}`,
	`{"wireless_verse_grip":[{"device_id":"61548","commands":{"keep_alive":{}}}]}`,
	`{"wireless_verse_grip":[{"device_id":"61548","commands":{"keep_alive":true,"probe_orientation":{}}}]}`,
	`{"wireless_verse_grip":[{"device_id":"61548","commands":{"probe_orientation":{},"keep_alive":null}}]}`,
	`{"arm3":[{"device_id":"049D","commands":{"keep_alive":false,"set_angular_torques":{"torques":{"a0":1,"a1":2,"a2":3}},"set_gravity_compensation":true}}]}`,
	`{"arm3":[{"device_id":"049D","commands":{"keep_alive":{ },"set_gravity_compensation":false}}]}`,
	`{"keep_alive":null}`,
	`{"keep_alive":true,"keep_alive":{}}`,
	streamEntries(3, repeated(`{"device_id":"g","commands":{"probe_position":{},"set_gravity_compensation":true,"keep_alive":{}}}`, 3)),
}

// streamEntries is an "arm3" array of n entries of the fast path's shape
// (ids d0, d1, ...), then tail (more entries, of any shape) when not "".
func streamEntries(n int, tail string) string {
	var b strings.Builder
	b.WriteString(`{"arm3":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"device_id":"d%d","commands":{"set_cursor_force":{"vector":{"x":%d,"y":0,"z":-0.5}}}}`, i, i)
	}
	if tail != "" {
		if n > 0 {
			b.WriteByte(',')
		}
		b.WriteString(tail)
	}
	b.WriteString(`]}`)
	return b.String()
}

// repeated is n copies of entry, comma-separated.
func repeated(entry string, n int) string {
	return strings.TrimSuffix(strings.Repeat(entry+",", n), ",")
}

// nearMisses differ from a fast shape in one way each: the general decoder
// decodes them (with its errors and warnings), and both paths must agree.
var nearMisses = []string{
	// A number too small for any float64 but zero is refused, as one too
	// large is (a non-zero value a client sent never means zero): the
	// general decoder answers it.
	`{"arm3":[{"device_id":"049D","commands":{"set_cursor_force":{"vector":{"x":-0.0,"y":1e-400,"z":-4.9e-324}}}}]}`,
	`{"arm3":[{"device_id":"049D","commands":{"set_cursor_position":{"values":{"x":-1e-4294967296,"y":0,"z":0}}}}]}`,
	// A type key given twice counts by its last occurrence: the general
	// decoder's to decide.
	`{"arm3":[{"device_id":"A","commands":{"probe_position":{}}}],"arm3":[{"device_id":"B","commands":{"probe_position":{}}}]}`,
	`{"arm3":[],"grip":[],"arm3":[]}`,
	`{"arm3":[{"device_id":"A","commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":1}}}}],"arm3":[]}`,
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
	`{"arm3":[{"device_id":"049D","commands":{"launch":{}}}]}`,
	`{"arm3":{"049D":{"commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":1}}}}}}`,
	`{"arm4":[{"device_id":"049D","commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":1}}}}]}`,
	`{"session":[{"device_id":"049D","commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":1}}}}]}`,
	`{"keep_alive":[{"device_id":"049D","commands":{"probe_position":{}}}]}`,
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
	// Duplicate members: the general decoder takes the last, or warns.
	`{"arm3":[{"device_id":"A","device_id":"B","commands":{"probe_position":{}}}]}`,
	`{"arm3":[{"device_id":"A","commands":{"probe_position":{}},"commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":1}}}}]}`,
	`{"arm3":[{"device_id":"A","commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":1}},"set_cursor_force":{"vector":{"x":0,"y":0,"z":2}}}}]}`,
	`{"arm3":[{"device_id":"A","commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":1},"vector":{"x":0,"y":0,"z":2}}}}]}`,
	`{"arm3":[{"device_id":"A","commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":1},"values":{"x":0,"y":0,"z":2}}}}]}`,
	`{"arm3":[{"device_id":"A","commands":{"set_cursor_force":{"values":{"x":0,"y":0,"z":1},"vector":null}}}]}`,
	// The session and keep_alive beside the devices.
	`{"arm3":[{"device_id":"049D","commands":{"probe_position":{}}}],"session":{"configure":{"lease":{"ms":50}}}}`,
	`{"session":{},"arm3":[{"device_id":"049D","commands":{"probe_position":{}}}]}`,
	`{"arm3":[{"device_id":"049D","commands":{"probe_position":{},"set_cursor_force":{"vector":{"x":0,"y":0,"z":1}}}}]}`,
	// State commands the fast path leaves to the general decoder: other
	// values and spellings, repeats, the wrong device type, set_transform.
	`{"grip":[{"device_id":"61548","commands":{"probe_orientation":{},"set_gravity_compensation":true}}]}`,
	`{"arm3":[{"device_id":"049D","commands":{"set_gravity_compensation":true,"set_gravity_compensation":false}}]}`,
	`{"arm3":[{"device_id":"049D","commands":{"keep_alive":{},"keep_alive":{}}}]}`,
	`{"arm3":[{"device_id":"049D","commands":{"set_gravity_compensation":null}}]}`,
	`{"arm3":[{"device_id":"049D","commands":{"set_gravity_compensation":{"enabled":true}}}]}`,
	`{"arm3":[{"device_id":"049D","commands":{"set_gravity_compensation":"true"}}]}`,
	`{"arm3":[{"device_id":"049D","commands":{"set_gravity_compensation":1}}]}`,
	`{"arm3":[{"device_id":"049D","commands":{"set_gravity_compensation":tru}}]}`,
	`{"arm3":[{"device_id":"049D","commands":{"set_gravity_compensation":truex}}]}`,
	`{"arm3":[{"device_id":"049D","commands":{"set_gravity_compensation":True}}]}`,
	`{"arm3":[{"device_id":"049D","commands":{"Set_Gravity_Compensation":true}}]}`,
	`{"arm3":[{"device_id":"049D","commands":{"set_gravity_compensation":true,}}]}`,
	`{"arm3":[{"device_id":"049D","commands":{"keep_alive":[]}}]}`,
	`{"arm3":[{"device_id":"049D","commands":{"keep_alive":1}}]}`,
	`{"arm3":[{"device_id":"049D","commands":{"keep_alive":{"a":1}}}]}`,
	`{"arm3":[{"device_id":"049D","commands":{"keep_alive":nul}}]}`,
	`{"arm3":[{"device_id":"049D","commands":{"keep_alive":{}` + "\f" + `}}]}`,
	`{"arm3":[{"device_id":"049D","commands":{"Keep_Alive":{}}}]}`,
	`{"arm3":[{"device_id":"049D","commands":{"set_transform":{"position":{"x":0,"y":0,"z":0}},"set_cursor_force":{"vector":{"x":0,"y":0,"z":1}}}}]}`,
	`{"arm3":[{"device_id":"049D","commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":1}},"set_gravity_compensation":true,"probe_position":{}}}]}`,
	`{"arm3":[{"device_id":"049D","commands":{"set_gravity_compensation":true,"unknown":{}}}]}`,
	`{"keep_alive":[1]}`,
	`{"keep_alive":{},"session":{}}`,
	`{"arm3":[],"arm4":[]}`,
	`{"arm3":[],}`,
	`{"arm3":[],"grip":{}}`,
	`{"arm3":[{"device_id":"049D","commands":{"probe_position":{}}}],"grip":[{"device_id":"1","commands":{"probe_position":{}}}]}`,
	// Other spellings of the names.
	`{"Arm3":[{"device_id":"049D","commands":{"probe_position":{}}}]}`,
	`{"arm3":[{"Device_ID":"049D","commands":{"probe_position":{}}}]}`,
	`{"arm3":[{"device_id":"049D","COMMANDS":{"probe_position":{}}}]}`,
	`{"arm3":[{"device_id":"049D","commands":{"Set_Cursor_Force":{"vector":{"x":0,"y":0,"z":1}}}}]}`,
	`{"arm3":[{"device_id":"049D","commands":{"set_cursor_force":{"VECTOR":{"x":0,"y":0,"z":1}}}}]}`,
	`{"arm3":[{"device_id":"049D","commands":{"set_cursor_force":{"Values":{"x":0,"y":0,"z":1}}}}]}`,
	`{"arm3":[{"device_id":"049D","commands":{"set_cursor_force":{"vector":{"X":0,"y":0,"z":1}}}}]}`,
	`{"arm3":[{"device_id":"049D","commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"\u007a":1}}}}]}`,
	`{"arm3":[{"device_id":"049D","commands":{"set_cursor_force":{"vector":{"a0":0,"a1":0,"a2":1}}}}]}`,
	`{"arm3":[{"device_id":"049D","commands":{"set_angular_torques":{"torques":{"x":0,"y":0,"z":1}}}}]}`,
	`{"arm3":[{"device_id":"049D","commands":{"set_angular_position":{"vector":{"a0":0,"a1":0,"a2":1}}}}]}`,
	// Numbers the grammar or a float64 refuses.
	`{"arm3":[{"device_id":"049D","commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":+1}}}}]}`,
	`{"arm3":[{"device_id":"049D","commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":-01}}}}]}`,
	`{"arm3":[{"device_id":"049D","commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":0x1}}}}]}`,
	`{"arm3":[{"device_id":"049D","commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":1e}}}}]}`,
	`{"arm3":[{"device_id":"049D","commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":1e+}}}}]}`,
	`{"arm3":[{"device_id":"049D","commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":1.e5}}}}]}`,
	`{"arm3":[{"device_id":"049D","commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":1_000}}}}]}`,
	`{"arm3":[{"device_id":"049D","commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":NaN}}}}]}`,
	`{"arm3":[{"device_id":"049D","commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":-Infinity}}}}]}`,
	`{"arm3":[{"device_id":"049D","commands":{"set_cursor_force":{"vector":{"x":1e309,"y":0,"z":0}}}}]}`,
	`{"arm3":[{"device_id":"049D","commands":{"set_cursor_force":{"vector":{"x":0,"y":-1e309,"z":0}}}}]}`,
	`{"arm3":[{"device_id":"049D","commands":{"set_angular_torques":{"torques":{"a0":0,"a1":0,"a2":1e99999999999999999999}}}}]}`,
	`{"arm3":[{"device_id":"049D","commands":{"set_cursor_force":{"vector":{"x":1.7976931348623159e308,"y":0,"z":0}}}}]}`,
	// Ids the fast path leaves to the general decoder.
	"{\"arm3\":[{\"device_id\":\"04\x7f9D\",\"commands\":{\"probe_position\":{}}}]}",
	`{"arm3":[{"device_id":"04\u007f9D","commands":{"probe_position":{}}}]}`,
	`{"arm3":[{"device_id":"\u0000","commands":{"probe_position":{}}}]}`,
	`{"arm3":[{"device_id":"0\/9D","commands":{"probe_position":{}}}]}`,
	`{"arm3":[{"device_id":"\ud800","commands":{"probe_position":{}}}]}`,
	`{"arm3":[{"device_id":null,"commands":{"probe_position":{}}}]}`,
	// Nulls, which the general decoder reads as absent.
	`{"arm3":null}`,
	`{"arm3":[null]}`,
	`{"arm3":[{"device_id":"049D","commands":null}]}`,
	`{"arm3":[{"device_id":"049D","commands":{"set_cursor_force":null}}]}`,
	`{"arm3":[{"device_id":"049D","commands":{"set_cursor_force":{"vector":null}}}]}`,
	`{"arm3":[{"device_id":"049D","commands":{"set_cursor_force":{"vector":{"x":null,"y":0,"z":1}}}}]}`,
	// Probe bodies other than {}.
	`{"arm3":[{"device_id":"049D","commands":{"probe_position":null}}]}`,
	`{"arm3":[{"device_id":"049D","commands":{"probe_position":[]}}]}`,
	`{"arm3":[{"device_id":"049D","commands":{"probe_position":true}}]}`,
	`{"arm3":[{"device_id":"049D","commands":{"probe_position":{"":1}}}]}`,
	`{"grip":[{"device_id":"1","commands":{"probe_position":{}}}]}`,
	`{"wireless_verse_grip":[{"device_id":"1","commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":1}}}}]}`,
	// Whitespace JSON does not have, invalid UTF-8, data after the value.
	"\f" + `{"arm3":[{"device_id":"049D","commands":{"probe_position":{}}}]}`,
	`{"arm3":[{"device_id":"049D","commands":{"probe_position":{}}}]}` + "\v",
	`{"arm3":[{"device_id":"049D","commands":{"probe_position":{}}}]}` + "\u00a0",
	`{"arm3":[{"device_id":"049D","commands":{"probe_position":{}}}]}` + "\xff",
	`{"arm3":[{"device_id":"049D","commands":{"probe_position":{}}}]}{}`,
	`{"arm3":[{"device_id":"049D","commands":{"probe_position":{}}}]}}`,
	`{"arm3":[{"device_id":"049D","commands":{"probe_position":{}}}]}]`,
	// Nesting past the parser's depth limit.
	`{"arm3":[{"device_id":"049D","commands":{"set_cursor_force":{"vector":{"x":` + strings.Repeat("[", 70) + strings.Repeat("]", 70) + `,"y":0,"z":1}}}}]}`,
	// Long arrays whose last entries differ: errors and warnings past the
	// lists' limits are counted the same way.
	streamEntries(2000, `{"device_id":"last","commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":1e400}}}}`),
	streamEntries(2000, `{"commands":{"probe_position":{}}}`),
	streamEntries(5, repeated(`{"device_id":"bad","commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":1e400}}}}`, MaxErrors+8)),
	streamEntries(5, repeated(`{"device_id":"odd","commands":{"launch":{}}}`, MaxWarnings+8)),
}

// aliasShapes and aliasMisses are fastShapes and nearMisses for a table
// with aliases of its own (aliasesOfOwn).
var (
	aliasShapes = []string{
		`{"haptic":[{"device_id":"049D","commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":0.5}}}}]}`,
		`{"handle":[{"device_id":"7","commands":{"probe_orientation":{}}}]}`,
		`{"haptic":[{"device_id":"A","commands":{"probe_position":{}}}],"arm3":[{"device_id":"B","commands":{"probe_position":{}}}]}`,
		`{"haptic":[{"device_id":"A","commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":1}},"set_gravity_compensation":true}}],"handle":[{"device_id":"7","commands":{"keep_alive":{}}}]}`,
	}
	aliasMisses = []string{
		`{"haptic":[{"device_id":"049D","commands":{"probe_orientation":{}}}]}`,
		`{"Haptic":[{"device_id":"049D","commands":{"probe_position":{}}}]}`,
		`{"handle":[{"device_id":"7","commands":{"set_gravity_compensation":true}}]}`,
	}
	aliasesOfOwn = map[string]string{"haptic": "arm3", "handle": "grip", "inverse3": "arm3", "verse_grip": "grip"}
)

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
	for i := range viaFast.Devices { // as many as general's: compared above
		if got, want := commandBits(viaFast.Devices[i].Command), commandBits(general.Devices[i].Command); got != want {
			t.Fatalf("%q (fast path %v): device %d's numbers differ bit for bit:\nwith the fast path %x\ngeneral decoder   %x", data, fast, i, got, want)
		}
	}
	if fast && (len(general.Errors) != 0 || len(general.Warnings) != 0) {
		t.Fatalf("%q: the fast path took a message the general decoder answers with %v %v", data, general.Errors, general.Warnings)
	}
	return fast
}

// commandBits is a command's numbers bit for bit: reflect.DeepEqual and ==
// take -0 for 0, and a client's -0 must reach the device as -0.
func commandBits(c DeviceCommand) [6]uint64 {
	return [6]uint64{math.Float64bits(c.Vec.X), math.Float64bits(c.Vec.Y), math.Float64bits(c.Vec.Z),
		math.Float64bits(c.Angles.A0), math.Float64bits(c.Angles.A1), math.Float64bits(c.Angles.A2)}
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
	own, err := NewTypeTable(aliasesOfOwn)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name     string
		types    *TypeTable
		messages []string
		fast     bool
	}{
		{"streaming commands take the fast path", types, fastShapes, true},
		{"one difference each: the general decoder", types, nearMisses, false},
		{"aliases take the fast path", own, aliasShapes, true},
		{"aliases, one difference each: the general decoder", own, aliasMisses, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, s := range tc.messages {
				if fast := decodeBoth(t, tc.types, []byte(s)); fast != tc.fast {
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
		// The fast path gives up on the third entry, after writing two.
		streamEntries(2, `{"device_id":"x","commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":1e400}}}}`),
		streamEntries(5, ""),
		`{"arm3":[{"device_id":"d0","configure":{"preset":{"preset":"arm_front"}},"commands":{"set_gravity_compensation":true}}]}`,
		`{"arm3":[{"device_id":"d0","commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":1}},"set_gravity_compensation":true}}]}`,
		fastShapes[0], // no gravity compensation where the last message had one
		`{"arm3":[{"device_id":"d0","commands":{"set_gravity_compensation":false}}],"grip":[{"device_id":"g","commands":{"keep_alive":{}}}]}`,
		`{"arm3":[{"device_id":"d0","commands":{"set_transform":{"position":{"x":0,"y":0,"z":1}},"set_gravity_compensation":true}}]}`,
		`{"arm3":[{"device_id":"d0","commands":{"probe_position":{},"set_gravity_compensation":true}}]}`,
		fastShapes[9], // -0 where the last message had 0
		fastShapes[0],
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
				commandBits(r.Command) != commandBits(f.Command) || r.Command.Kind != f.Command.Kind || len(r.Configure) != len(f.Configure) || r.HasEffects != f.HasEffects ||
				r.Transform != f.Transform || r.GravityCompensation != f.GravityCompensation {
				t.Fatalf("%q: device %d reused %+v, fresh %+v", s, i, *r, *f)
			}
		}
	}
}

// FuzzFastDecodeAgreesWithGeneral: whatever the bytes, DecodeClientMessage
// (fast path first) and the general decoder alone give the same message.
func FuzzFastDecodeAgreesWithGeneral(f *testing.F) {
	for _, list := range [][]string{fastShapes, nearMisses, fuzzSeeds, aliasShapes, aliasMisses} {
		for _, s := range list {
			if len(s) > 8<<10 { // the long arrays: as seeds they would slow every mutation
				continue
			}
			f.Add([]byte(s))
		}
	}
	types, err := NewTypeTable(aliasesOfOwn)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		decodeBoth(t, types, data)
	})
}
