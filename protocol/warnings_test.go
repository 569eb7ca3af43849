package protocol

import (
	"fmt"
	"strings"
	"testing"
)

func TestDecoderCapsWarnings(t *testing.T) {
	types, err := NewTypeTable(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{0, 1, MaxWarnings, MaxWarnings + 1, 5000} {
		var b strings.Builder
		b.WriteString(`{"arm3":[{"device_id":"049D","configure":{"force_gate":{"gain":0.5`)
		for i := 0; i < n; i++ {
			fmt.Fprintf(&b, `,"u%d":1`, i)
		}
		b.WriteString(`}}}]}`)
		var m ClientMessage
		if errs := DecodeClientMessage([]byte(b.String()), types, &m); len(errs) != 0 {
			t.Fatalf("%d unknown fields: errors %v", n, errs)
		}
		if got, want := len(m.Warnings), min(n, MaxWarnings); got != want || m.WarningsDropped != n-want {
			t.Fatalf("%d unknown fields: %d listed, %d dropped; want %d listed, %d dropped", n, got, m.WarningsDropped, want, n-want)
		}
		// The rest of the message still applies.
		if len(m.Devices) != 1 || len(m.Devices[0].Configure) != 1 {
			t.Fatalf("%d unknown fields: devices %+v", n, m.Devices)
		}
	}
}

func TestDecoderCapsErrors(t *testing.T) {
	types, err := NewTypeTable(nil)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString(`{"arm3":[`)
	for i := 0; i < 100; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"device_id":"%04X","configure":{"damping":1}}`, i)
	}
	b.WriteString(`]}`)
	var m ClientMessage
	errs := DecodeClientMessage([]byte(b.String()), types, &m)
	if len(errs) != MaxErrors || m.ErrorsDropped != 100-MaxErrors {
		t.Fatalf("100 bad entries: %d errors listed, %d dropped; want %d and %d", len(errs), m.ErrorsDropped, MaxErrors, 100-MaxErrors)
	}
	if got := TrimErrors(errs, m.ErrorsDropped); len(got) != MaxErrors+1 || got[MaxErrors].Code != CodeErrorsDropped ||
		!strings.HasPrefix(got[MaxErrors].Message, fmt.Sprint(100-MaxErrors)+" more errors") {
		t.Fatalf("TrimErrors: %d entries, last %+v", len(got), got[len(got)-1])
	}
}

func TestTrimWarnings(t *testing.T) {
	w := func(n int) []Error { return make([]Error, n) }
	tests := []struct {
		list, dropped int
		wantLen       int
		wantCount     string // "" when no count entry
	}{
		{0, 0, 0, ""},
		{MaxWarnings, 0, MaxWarnings, ""},
		{MaxWarnings, 5, MaxWarnings + 1, "5 more"},
		{MaxWarnings + 3, 0, MaxWarnings + 1, "3 more"},
		{MaxWarnings + 3, 10, MaxWarnings + 1, "13 more"},
	}
	for _, tt := range tests {
		got := TrimWarnings(w(tt.list), tt.dropped)
		if len(got) != tt.wantLen {
			t.Fatalf("TrimWarnings(%d, %d): %d entries, want %d", tt.list, tt.dropped, len(got), tt.wantLen)
		}
		if tt.wantCount == "" {
			continue
		}
		last := got[len(got)-1]
		if last.Code != CodeWarningsDropped || !strings.HasPrefix(last.Message, tt.wantCount) {
			t.Fatalf("TrimWarnings(%d, %d): last entry %+v, want %s", tt.list, tt.dropped, last, tt.wantCount)
		}
	}
}

// TestWarningsPastTheCapAreNotFormatted: a message of 20,000 unknown device
// types copied and boxed each key before the cap on listed warnings dropped
// it (two allocations per key); every kind of warning past the cap is
// counted without a copy, so a message costs about the 32 it lists.
func TestWarningsPastTheCapAreNotFormatted(t *testing.T) {
	types, err := NewTypeTable(nil)
	if err != nil {
		t.Fatal(err)
	}
	const n = 20000
	build := func(prefix, item, suffix string) []byte {
		var b strings.Builder
		b.WriteString(prefix)
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, item, i)
		}
		b.WriteString(suffix)
		return []byte(b.String())
	}
	for _, tc := range []struct {
		name string
		msg  []byte
	}{
		{"unknown fields", build(`{"arm3":[{"device_id":"049D","configure":{"force_gate":{"gain":0.5,`, `"u%d":1`, `}}}]}`)},
		{"unknown configure keys", build(`{"arm3":[{"device_id":"049D","configure":{`, `"unknown_key_number_%d":1`, `}}]}`)},
		{"unknown commands", build(`{"arm3":[{"device_id":"049D","commands":{`, `"unknown_command_number_%d":1`, `}}]}`)},
		{"unknown device types", build(`{`, `"unknown_type_number_%d":[]`, `}`)},
		{"unknown session keys", build(`{"session":{`, `"unknown_session_key_number_%d":1`, `}}`)},
		{"unknown device members", build(`{"arm3":[{"device_id":"049D",`, `"unknown_member_number_%d":1`, `}]}`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var m ClientMessage
			DecodeClientMessage(tc.msg, types, &m)
			if len(m.Warnings) != MaxWarnings || m.WarningsDropped != n-MaxWarnings {
				t.Fatalf("%d warnings listed, %d dropped; want %d and %d", len(m.Warnings), m.WarningsDropped, MaxWarnings, n-MaxWarnings)
			}
			// The listed warnings are formatted: a few dozen allocations each.
			if allocs := testing.AllocsPerRun(3, func() { DecodeClientMessage(tc.msg, types, &m) }); allocs > 40*MaxWarnings {
				t.Fatalf("%d warnings: %.0f allocations, want at most %d", n, allocs, 40*MaxWarnings)
			}
		})
	}
}
