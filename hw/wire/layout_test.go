package wire_test

import (
	"bytes"
	"testing"

	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/hw/wire"
)

// A grip status has two layouts under one header (spec HARDWARE.md): the
// wireless grip's (error, attached, hall, buttons, battery, extension) and
// the wired grip's, shorter (error, attached, user data). Each is read by
// its own layout: two frames back to back through a Scanner, and Decode,
// give the grip's fields, and re-encoding gives the same bytes. The wired
// grip's frames were read with the wireless layout, which took its user
// data for hall, buttons and battery and ran into the next frame.
func TestGripStatusLayouts(t *testing.T) {
	const head = "da" + "6cf0" + "0000803f" + "00000000" + "00000000" + "00000000" // id 61548, identity
	tests := []struct {
		name   string
		layout wire.Layout
		frame  string
		want   wire.GripStatus
	}{
		{"wireless", wire.LayoutWireless, head + "00" + "01" + "80" + "05" + "0000003f" + "02" + "aabb",
			wire.GripStatus{ID: 61548, Orientation: hw.Quat{W: 1}, Attached: 1, Hall: 0x80, Buttons: 5, Battery: 0.5, ExtLen: 2, Ext: [12]byte{0xAA, 0xBB}}},
		{"wired", wire.LayoutWired, head + "00" + "01" + "03" + "112233",
			wire.GripStatus{ID: 61548, Orientation: hw.Quat{W: 1}, Attached: 1, ExtLen: 3, Ext: [12]byte{0x11, 0x22, 0x33}}},
		{"wired, an error and no user data", wire.LayoutWired, head + "07" + "00" + "00",
			wire.GripStatus{ID: 61548, Orientation: hw.Quat{W: 1}, Error: 7}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := unhex(t, tc.frame)
			var m wire.Message
			n, err := wire.DecodeIn(tc.layout, wire.ToHost, b, &m)
			if err != nil || n != len(b) {
				t.Fatalf("DecodeIn = %d, %v; want %d, nil", n, err, len(b))
			}
			if m.GripStatus != tc.want {
				t.Errorf("decoded %+v\nwant    %+v", m.GripStatus, tc.want)
			}
			if again := wire.AppendIn(tc.layout, nil, wire.ToHost, &m); !bytes.Equal(again, b) {
				t.Errorf("re-encoded %x, want %x", again, b)
			}
			sc := wire.NewScannerIn(tc.layout, wire.ToHost)
			sc.Write(append(append([]byte(nil), b...), b...))
			for i := range 2 {
				var got wire.Message
				if _, ok := sc.Next(&got); !ok || got.GripStatus != tc.want {
					t.Fatalf("scanner's frame %d: ok %v, %+v; want %+v", i, ok, got.GripStatus, tc.want)
				}
			}
			if sc.Skipped() != 0 {
				t.Errorf("scanner skipped %d bytes of two whole frames", sc.Skipped())
			}
		})
	}
}
