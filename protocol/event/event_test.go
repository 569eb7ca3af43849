package event_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hapticd/hapticd/hw/hwtest"
	"github.com/hapticd/hapticd/protocol"
	"github.com/hapticd/hapticd/protocol/event"
)

// constructors builds one event of every kind; the table test fails when a
// kind has no row here, so a new event cannot ship without a constructor.
var constructors = map[string]func() event.Event{
	event.NameHTTPRouteDeprecated: func() event.Event {
		return event.HTTPRouteDeprecated("POST /force_scale", "POST /settings/devices/force_scale", "127.0.0.1:5555")
	},
	event.NameCommandDeprecated: func() event.Event {
		return event.CommandDeprecated("session.set_basis", "session.configure.basis", 7, "co.example:main")
	},
	event.NameDeviceConnected:    func() event.Event { return event.DeviceConnected("inverse", "arm3", "049D") },
	event.NameDeviceDisconnected: func() event.Event { return event.DeviceDisconnected("verse_grip", "grip", "61548") },
	event.NameDeviceFailed:       func() event.Event { return event.DeviceFailed("arm3", "049D", "serial: device gone") },
	event.NameInvalidIOChannel:   func() event.Event { return event.InvalidIOChannel([]byte("hello")) },
	event.NameSessionStarted:     func() event.Event { return event.SessionStarted(3, "", "127.0.0.1:6000", "3.x") },
	event.NameSessionEnded: func() event.Event {
		return event.SessionEnded(3, "lab:rig", "127.0.0.1:6000", "3.0", protocol.CloseWriteTimeout)
	},
	event.NameDeviceBusy: func() event.Event { return event.DeviceBusy("arm3", "049D", 4, 3) },
	event.NameControlLeaseExpired: func() event.Event {
		return event.ControlLeaseExpired("arm3", "049D", 3, 2)
	},
	event.NameControlRateWarning: func() event.Event {
		return event.ControlRateWarning("arm3", "049D", 1350.5, 1000, 0)
	},
	event.NameEventsDropped:    func() event.Event { return event.EventsDropped(42) },
	event.NameServiceRestarted: func() event.Event { return event.ServiceRestarted(1767323045000005) },
	event.NameEffectRefused: func() event.Event {
		return event.EffectRefused("inverse3", "049D", 3, "wall1", "too_many_effects", "an arm holds at most 16 effects")
	},
	event.NameEffectExpired: func() event.Event { return event.EffectExpired("inverse3", "049D", 3, "buzz") },
	event.NameNavigationRefused: func() event.Event {
		return event.NavigationRefused("inverse3", "049D", 3, "invalid_value", "effect: a bubble needs a positive zone width and scale")
	},
	event.NamePassivityActive: func() event.Event { return event.PassivityActive("inverse3", "049D", 3, 1200, 2.5) },
	event.NameRecordingFailed: func() event.Event {
		return event.RecordingFailed(2, "lab", "/var/lib/hapticd/recordings/lab-20261127T010000-2.mcap", "no space left on device")
	},
	event.NameLabNodeRefused: func() event.Event {
		return event.LabNodeRefused("a", "node a: gateway process 00000000000000ab at 10.0.0.3:7000 holds this node")
	},
	event.NameStoredEntryRejected: func() event.Event {
		return event.StoredEntryRejected("inverse3", "049D", "", "handedness", "/var/lib/hapticd/devices/inverse3-049D.json",
			"/var/lib/hapticd/devices/inverse3-049D.json.rejected-1767323045", `handedness: "ambidextrous" is not one of "left", "right"`)
	},
}

func TestEveryKindHasAConstructorThatFollowsTheTable(t *testing.T) {
	seen := map[string]bool{}
	categories := []string{event.CategorySystem, event.CategorySession, event.CategoryDevice, event.CategoryInput}
	levels := []string{event.LevelInfo, event.LevelNotice, event.LevelWarning, event.LevelError}
	for _, k := range event.Kinds() {
		t.Run(k.Name, func(t *testing.T) {
			if seen[k.Name] {
				t.Fatalf("%s is in the table twice", k.Name)
			}
			seen[k.Name] = true
			if !slices.Contains(categories, k.Category) || !slices.Contains(levels, k.Level) {
				t.Errorf("category %q or level %q is not one of the documented ones", k.Category, k.Level)
			}
			build, ok := constructors[k.Name]
			if !ok {
				t.Fatalf("no constructor for %s in this test", k.Name)
			}
			e := build()
			if e.Name != k.Name || e.Category != k.Category || e.Level != k.Level {
				t.Errorf("constructor gave %s/%s/%s, table says %s/%s/%s", e.Name, e.Category, e.Level, k.Name, k.Category, k.Level)
			}
			if got := hwtest.JSONKeys(t, e.Data); !slices.Equal(got, k.Fields) {
				t.Errorf("data fields %v, table says %v", got, k.Fields)
			}
			if e.Message == "" || e.Message != strings.TrimSpace(e.Message) {
				t.Errorf("message %q should be one trimmed sentence", e.Message)
			}
			if e.Seq != 0 || !e.Time.IsZero() {
				t.Errorf("constructors must leave seq and time to the activity actor")
			}
		})
	}
	if len(seen) != len(constructors) {
		t.Errorf("the test knows %d constructors, the table %d kinds", len(constructors), len(seen))
	}
}

func TestProtocolTableIsCovered(t *testing.T) {
	// docs/events.md, with the categories and levels it gives.
	want := []struct{ name, category, level string }{
		{"http-route-deprecated", "system", "warning"},
		{"command-deprecated", "session", "warning"},
		{"device-connected", "device", "notice"},
		{"device-disconnected", "device", "warning"},
		{"invalid-io-channel", "input", "warning"},
		{"session-started", "session", "info"},
		{"session-ended", "session", "info"},
		{"device-busy", "device", "warning"},
		{"control-lease-expired", "device", "notice"},
		{"control-rate-warning", "device", "warning"},
	}
	for _, w := range want {
		k, ok := event.Lookup(w.name)
		if !ok || k.Category != w.category || k.Level != w.level {
			t.Errorf("%s: got %+v, docs/events.md says %s/%s", w.name, k, w.category, w.level)
		}
	}
}

func TestKindsIsACopy(t *testing.T) {
	k := event.Kinds()
	k[0].Name = "changed"
	k[0].Fields[0] = "changed"
	if again := event.Kinds(); again[0].Name == "changed" || again[0].Fields[0] == "changed" {
		t.Fatal("Kinds must hand out a copy of the table")
	}
}

func TestDataValues(t *testing.T) {
	tests := []struct {
		name string
		e    event.Event
		want string
	}{
		{"route", event.HTTPRouteDeprecated("POST /torque_scaling", "POST /arm3/049D/config/torque_scaling", "127.0.0.1:1"),
			`{"route":"POST /torque_scaling","replacement":"POST /arm3/049D/config/torque_scaling","remote":"127.0.0.1:1"}`},
		{"absent profile is null", event.CommandDeprecated("session.set_basis", "session.configure.basis", 2, ""),
			`{"command":"session.set_basis","replacement":"session.configure.basis","session_id":2,"profile":null}`},
		{"profile", event.SessionStarted(9, "lab:rig", "[::1]:2", "3.0"),
			`{"session_id":9,"profile":"lab:rig","remote":"[::1]:2","api_version":"3.0"}`},
		{"busy", event.DeviceBusy("arm3", "049D", 4, 3),
			`{"device_type":"arm3","device_id":"049D","session_id":4,"owner_session_id":3}`},
		{"non-finite measurement", event.ControlRateWarning("arm3", "049D", math.Inf(1), math.NaN(), 0),
			`{"device_type":"arm3","device_id":"049D","period_us_p99":0,"target_us":0,"suppressed":0}`},
		{"large finite measurement is kept", event.ControlRateWarning("arm3", "049D", math.MaxFloat64, -1.5e308, 0),
			`{"device_type":"arm3","device_id":"049D","period_us_p99":1.7976931348623157e+308,"target_us":-1.5e+308,"suppressed":0}`},
		{"dropped", event.EventsDropped(7), `{"missed":7}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if string(tt.e.Data) != tt.want {
				t.Errorf("data %s, want %s", tt.e.Data, tt.want)
			}
		})
	}
}

func TestInvalidIOChannelKeeps256Bytes(t *testing.T) {
	tests := []struct {
		name  string
		input []byte
		want  string
	}{
		{"short", []byte("ping"), "ping"},
		{"long", bytes.Repeat([]byte("x"), 1000), strings.Repeat("x", event.MaxReceivedBytes)},
		{"binary becomes valid JSON", []byte{0xff, 'a', 0x00}, "\ufffda\x00"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var d struct {
				Received string `json:"received_data"`
			}
			e := event.InvalidIOChannel(tt.input)
			if err := json.Unmarshal(e.Data, &d); err != nil {
				t.Fatal(err)
			}
			if d.Received != tt.want {
				t.Errorf("received_data %q, want %q", d.Received, tt.want)
			}
		})
	}
}

func TestAppendJSONRoundTrips(t *testing.T) {
	at := time.Date(2026, 11, 22, 5, 30, 1, 123456789, time.FixedZone("CET", 3600))
	tests := []struct {
		name    string
		e       event.Event
		message string
	}{
		{"constructor", event.DeviceConnected("inverse", "arm3", "049D"), ""},
		{"escapes", event.Event{Name: "x", Category: "system", Level: "info", Data: json.RawMessage(`{"a":1}`)},
			"quote \" backslash \\ newline \n tab \t nul \x00 line-sep \u2028 ünïcødé"},
		{"invalid utf-8", event.Event{Name: "x"}, "bad \xff\xfe end"},
		{"no data", event.Event{Name: "x"}, "no data"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := tt.e
			e.Seq = 12
			e.Time = at
			if tt.message != "" {
				e.Message = tt.message
			}
			out := event.AppendJSON([]byte("prefix"), &e)
			if !bytes.HasPrefix(out, []byte("prefix")) {
				t.Fatal("AppendJSON must append to dst")
			}
			out = out[len("prefix"):]
			if !json.Valid(out) {
				t.Fatalf("invalid JSON: %s", out)
			}
			var back struct {
				Seq      uint64          `json:"seq"`
				Time     string          `json:"time"`
				Name     string          `json:"name"`
				Category string          `json:"category"`
				Level    string          `json:"level"`
				Data     json.RawMessage `json:"data"`
				Message  string          `json:"message"`
			}
			if err := json.Unmarshal(out, &back); err != nil {
				t.Fatal(err)
			}
			if back.Time != "2026-11-22T04:30:01.123Z" {
				t.Errorf("time %q, want RFC 3339 in UTC with milliseconds", back.Time)
			}
			// Invalid UTF-8 turns into U+FFFD per byte, as encoding/json
			// does it.
			var wantMsg string
			std, _ := json.Marshal(e.Message)
			_ = json.Unmarshal(std, &wantMsg)
			if back.Seq != 12 || back.Name != e.Name || back.Category != e.Category || back.Level != e.Level || back.Message != wantMsg {
				t.Errorf("round trip: %+v from %+v", back, e)
			}
			wantData := string(e.Data)
			if wantData == "" {
				wantData = "{}"
			}
			if string(back.Data) != wantData {
				t.Errorf("data %s, want %s", back.Data, wantData)
			}
			// MarshalJSON writes the same bytes, so GET /events and the
			// socket agree.
			viaJSON, err := json.Marshal(e)
			if err != nil || !bytes.Equal(viaJSON, out) {
				t.Errorf("json.Marshal gave %s (%v), AppendJSON %s", viaJSON, err, out)
			}
		})
	}
}

func TestAppendJSONDoesNotAllocate(t *testing.T) {
	e := event.HTTPRouteDeprecated("POST /force_scale", "POST /settings/devices/force_scale", "127.0.0.1:5555")
	e.Seq, e.Time = 1, time.Now()
	buf := make([]byte, 0, 1024)
	allocs := testing.AllocsPerRun(100, func() {
		buf = event.AppendJSON(buf[:0], &e)
	})
	if allocs != 0 {
		t.Errorf("AppendJSON allocated %.1f times per event into a buffer with room", allocs)
	}
}

func BenchmarkAppendJSON(b *testing.B) {
	e := event.HTTPRouteDeprecated("POST /force_scale", "POST /settings/devices/force_scale", "127.0.0.1:5555")
	e.Seq, e.Time = 1, time.Now()
	buf := make([]byte, 0, 1024)
	b.Run("AppendJSON", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			buf = event.AppendJSON(buf[:0], &e)
		}
	})
	// The baseline: what encoding/json costs for the same event shape.
	type plain struct {
		Seq      uint64          `json:"seq"`
		Time     time.Time       `json:"time"`
		Name     string          `json:"name"`
		Category string          `json:"category"`
		Level    string          `json:"level"`
		Data     json.RawMessage `json:"data"`
		Message  string          `json:"message"`
	}
	p := plain(e)
	b.Run("encoding-json-baseline", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = json.Marshal(&p)
		}
	})
}

func ExampleAppendJSON() {
	e := event.HTTPRouteDeprecated("POST /force_scale", "POST /settings/devices/force_scale", "127.0.0.1:5555")
	e.Seq = 1
	e.Time = time.Date(2026, 1, 2, 3, 4, 5, 6e6, time.UTC)
	fmt.Println(string(event.AppendJSON(nil, &e)))
	// Output:
	// {"seq":1,"time":"2026-01-02T03:04:05.006Z","name":"http-route-deprecated","category":"system","level":"warning","data":{"route":"POST /force_scale","replacement":"POST /settings/devices/force_scale","remote":"127.0.0.1:5555"},"message":"POST /force_scale is deprecated and will be removed in 4.0; use POST /settings/devices/force_scale"}
}

func TestMarkdownTableListsEveryKind(t *testing.T) {
	md := event.MarkdownTable()
	lines := strings.Split(strings.TrimSpace(md), "\n")
	if len(lines) != 2+len(event.Kinds()) {
		t.Fatalf("%d lines for %d kinds:\n%s", len(lines), len(event.Kinds()), md)
	}
	for i, k := range event.Kinds() {
		row := lines[2+i]
		for _, want := range append([]string{"`" + k.Name + "`", "`" + k.Category + "`", "`" + k.Level + "`"}, k.Fields...) {
			if !strings.Contains(row, want) {
				t.Errorf("row %q lacks %q", row, want)
			}
		}
	}
}
