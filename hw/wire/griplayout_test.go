package wire

import (
	"testing"

	"github.com/hapticd/hapticd/hw"
)

// A grip's status layout is told from its stream: frames of the grip that
// follow each other back to back in one layout and not in the other. A
// stream without a whole status frame of the grip is silence (GripHeard),
// which tells no layout.
func TestDetectGripLayout(t *testing.T) {
	const id = 0x2345
	status := func(l Layout, s GripStatus, n int) []byte {
		var out []byte
		for range n {
			out = AppendIn(l, out, ToHost, &Message{Header: HeaderGripStatus, GripStatus: s})
		}
		return out
	}
	plain := GripStatus{ID: id, Orientation: hw.Quat{W: 1}, Battery: 0.5}
	withExt := GripStatus{ID: id, Orientation: hw.Quat{Z: 1}, Hall: 6, ExtLen: 3, Ext: [MaxExtBytes]byte{1, 2, 3}}
	other := GripStatus{ID: id + 1, Orientation: hw.Quat{W: 1}}
	tests := []struct {
		name   string
		stream []byte
		want   Layout
		ok     bool
		heard  bool // GripHeard: a whole status frame of the grip is there
	}{
		{"wireless", status(LayoutWireless, plain, 3), LayoutWireless, true, true},
		{"wired", status(LayoutWired, plain, 3), LayoutWired, true, true},
		{"wired with user data", status(LayoutWired, withExt, 4), LayoutWired, true, true},
		{"wireless with extension bytes", status(LayoutWireless, withExt, 4), LayoutWireless, true, true},
		{"after noise and half a frame", append([]byte{0xDA, 0x45, 0x23, 7, 7}, status(LayoutWired, plain, 3)...), LayoutWired, true, true},
		{"an info frame among them", append(AppendGripInfo(status(LayoutWireless, plain, 2), GripInfo{ID: id}), status(LayoutWireless, plain, 1)...), LayoutWireless, true, true},
		{"too few frames yet", status(LayoutWired, plain, 2), LayoutWireless, false, true},
		{"another grip's frames", status(LayoutWired, other, 5), LayoutWireless, false, false},
		{"interleaved with another grip's", append(append(append(status(LayoutWireless, plain, 1), status(LayoutWireless, other, 1)...), status(LayoutWireless, plain, 1)...), status(LayoutWireless, other, 1)...), LayoutWireless, false, true},
		{"nothing", nil, LayoutWireless, false, false},
		{"half a frame of the grip", status(LayoutWired, plain, 1)[:5], LayoutWireless, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := DetectGripLayout(tc.stream, id)
			if ok != tc.ok || (ok && got != tc.want) {
				t.Errorf("DetectGripLayout = %v, %v; want %v, %v", got, ok, tc.want, tc.ok)
			}
			if heard := GripHeard(tc.stream, id); heard != tc.heard {
				t.Errorf("GripHeard = %v, want %v", heard, tc.heard)
			}
		})
	}
}
