package protocol

import (
	"fmt"
	"strings"
	"testing"
	"unsafe"

	"github.com/hapticd/hapticd/protocol/protocoltest"
)

// A decoded message keeps no byte of the buffer it was decoded from: the
// transport gives the buffer back once the message is handled, and reads
// the next message into it, its own client's or, for a message over 64 KiB,
// another client's (transport/session.go, bigBuffers). The decoder keeps
// strings by copying them (reuse, string(...)); an unsafe.String or a kept
// Raw() slice would show a user another message's bytes.

// aliasSeeds are messages that reach every string the decoder keeps.
var aliasSeeds = []string{
	`{"arm3":[{"device_id":"0\u00349D","comm\u0061nds":{},"x\u0079z":1}],"foo\u0031":[],"bar":[]}`,
	`{"arm3":[{"device_id":"NOPE","commands":{"set_cursor_force":{"vector":{"x":1e400,"y":0,"z":0}}}}]}`,
	`{"arm3":[{"device_id":"049D","commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":0}},"bogus_cmd":{},"set_cursor_position":{"position":{"x":0,"y":0,"z":0}}}}]}`,
	`{"arm3":[{"device_id":"049D","configure":{"weird_key":{},"filters":{"weird_filter":{}},"basis":{"permutation":"QQQ"}}}]}`,
	`{"arm3":[{"device_id":"049D","configure":{"basis":{"permutation":"XZY"},"preset":{"preset":"not_a_preset"}}}]}`,
	`{"arm3":[{"device_id":"049D","configure":{"handedness":"sideways"}}]}`,
	`{"session":{"configure":{"profile":{"name":"my.profile:main","required_version":"bogus!!"}}}}`,
	`{"session":{"configure":{"profile":{"name":"my.profile:main","required_version":">=9.0"},"zzz":1},"yyy":2}}`,
	`{"session":{"configure":{"profile":{"name":"pr\u006ffile"}}}}`,
	`{"session":{"configure":{"subscribe":{"devices":[{"device_type":"arm3","device_id":"049D"},{"device_type":"arm3","device_id":"A\u0042CD"},{"device_type":"inverse3","device_id":"X"}],"state":["cursor_position"]}}}}`,
	`{"session":{"configure":{"subscribe":{"devices":[{"device_type":"nosuch","device_id":"049D","extra":1}]}}}}`,
	`{"session":{"configure":{"subscribe":{"devices":"*","state":["nosuchfield"]}}}}`,
	`{"session":{"force_render_full_state":{"device_types":["arm3","nosuch"]},"set_coordinate_origin":{"coordinate_origin":"nowhere"}}}`,
	`{"inverse3":[{"device_id":"049D","effects":{"remove":["r1","r\u0032"],"set":[{"id":"w1","type":"wall","position":{"x":0,"y":0,"z":0},"normal":{"x":0,"y":0,"z":1},"stiffness":2000,"extra_field":1}]}}]}`,
	`{"inverse3":[{"device_id":"049D","effects":{"set":[{"id":"s","type":"sdf","shape":{"primitive":"sphere","parameters":{"r":0.1}},"ease":"weird","symmetry":"odd","blend":"strange"}]}}]}`,
	`{"inverse3":[{"device_id":"049D","effects":{"set":[{"id":"bad id!","type":"nosuchtype"}]}}]}`,
	`{"inverse3":[{"device_id":"049D","configure":{"navigation":{"mode":"weirdmode","bubble":{"easing":"odd","center":{"mode":"strange"},"shape":{"primitive":"nosuch","parameters":{}}}}}}]}`,
	`{"inverse3":[{"device_id":"049D","configure":{"navigation":{"mode":"bubble","bubble":{"easing":"cubic","center":{"mode":"drift"},"shape":{"primitive":"sphere","parameters":{"r":0.05}}}}}}]}`,
	`{"inverse3":[{"device_id":"049D","configure":{"passivity":{"scope":"weird"}}}]}`,
	`{"grip":[{"device_id":"G1","commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":0}}}}]}`,
	`{"arm3":[{"device_id":"049D","commands":{"set_cursor_force":{"vector":{"x":0.5,"y":-1,"z":2}},"set_gravity_compensation":true,"keep_alive":{}}},{"device_id":"FFFF","commands":{"probe_position":{}}}],"grip":[{"device_id":"61548","commands":{"probe_orientation":{}}}],"keep_alive":true}`,
	`not json`, `{"a":`, `[1,2]`,
}

func bigFastMessage(n int) string {
	var b strings.Builder
	b.WriteString(`{"arm3":[`)
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"device_id":"D%04d","commands":{"set_cursor_force":{"vector":{"x":0.1,"y":0.2,"z":0.3}}}}`, i)
	}
	b.WriteString(`]}`)
	return b.String()
}

func checkNoAlias(t *testing.T, m *ClientMessage, data string) {
	t.Helper()
	buf := make([]byte, len(data), len(data)+32)
	copy(buf, data)
	errs := DecodeClientMessage(buf, aliasTypes, m)
	if found := append(protocoltest.BufferAliases(buf, m), protocoltest.BufferAliases(buf, errs)...); len(found) > 0 {
		t.Errorf("message %.120q: kept aliases of the message buffer:\n  %s", data, strings.Join(found, "\n  "))
	}
	// Scribble and compare a deep dump: the decoded message must not change.
	before := fmt.Sprintf("%+v|%+v|%+v|%+v", m.Devices, m.Warnings, m.Errors, deref(m))
	for i := range buf[:cap(buf)] {
		buf[:cap(buf)][i] = 'X'
	}
	after := fmt.Sprintf("%+v|%+v|%+v|%+v", m.Devices, m.Warnings, m.Errors, deref(m))
	if before != after {
		t.Errorf("message %.120q: decoded message changed when buf was overwritten", data)
	}
}

func deref(m *ClientMessage) string {
	s := ""
	if p := m.Session.Profile; p != nil {
		s += fmt.Sprintf("%+v", *p)
	}
	if p := m.Session.Subscribe; p != nil {
		s += fmt.Sprintf("%+v", *p)
	}
	if p := m.Session.FullState; p != nil {
		s += fmt.Sprintf("%+v", *p)
	}
	return s
}

var aliasTypes, _ = NewTypeTable(map[string]string{"inverse3": "arm3", "verse_grip": "grip"})

func TestDecodedMessageKeepsNoByteOfItsBuffer(t *testing.T) {
	var m ClientMessage
	seeds := append(append(append([]string{}, fuzzSeeds...), aliasSeeds...), bigFastMessage(1000))
	for round := 0; round < 2; round++ { // the second round takes the reuse paths
		for _, s := range seeds {
			checkNoAlias(t, &m, s)
			checkNoAlias(t, &m, s)
		}
	}
	// The seeds reach the kept strings: unknown fields warn, by name.
	DecodeClientMessage([]byte(aliasSeeds[0]), aliasTypes, &m)
	if len(m.Warnings) == 0 || len(m.Devices) == 0 {
		t.Fatalf("the first seed decoded with %d warnings and %d devices, want some of each", len(m.Warnings), len(m.Devices))
	}
}

// The check itself finds an alias planted on purpose.
func TestAliasCheckFindsAnAlias(t *testing.T) {
	buf := []byte(`{"x":"abc"}`)
	m := ClientMessage{}
	m.profile.Name = unsafe.String(&buf[6], 3)
	if found := protocoltest.BufferAliases(buf, &m); len(found) != 1 {
		t.Fatalf("the check found %v, want the profile's name", found)
	}
}

func FuzzDecodedMessageKeepsNoByteOfItsBuffer(f *testing.F) {
	for _, s := range append(append([]string{}, fuzzSeeds...), aliasSeeds...) {
		f.Add(s)
	}
	var m ClientMessage
	f.Fuzz(func(t *testing.T, s string) {
		checkNoAlias(t, &m, s)
	})
}
