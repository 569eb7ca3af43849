package wire_test

import (
	"bytes"
	"testing"

	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/hw/wire"
)

func seedFrames() [][]byte {
	status := wire.GripStatus{ID: 7, Orientation: hw.Quat{W: 0.7, Z: 0.7}, Battery: 0.9, ExtLen: 12}
	return [][]byte{
		wire.AppendWake(nil),
		wire.AppendForce(nil, hw.Vec3{X: 1, Y: 2, Z: 3}),
		wire.AppendPosition(nil, hw.Vec3{Z: 0.1}),
		wire.AppendTorques(nil, hw.Angles3{A0: 10}),
		wire.AppendAngles(nil, hw.Angles3{A1: 45}),
		wire.AppendConfig(nil, wire.Config{Sub: wire.ConfigGravity, Flag: true, Value: 1}),
		wire.AppendEndEffectorState(nil, hw.Vec3{X: 0.1, Y: 0.2, Z: 0.3}, hw.Vec3{X: -1}),
		wire.AppendJointState(nil, hw.Angles3{A0: 90}, hw.Angles3{A2: -5}),
		wire.AppendWakeReply(nil, wire.WakeReply{ID: 0x049D, UUID: [16]byte{1, 2, 3}}),
		wire.AppendConfigAck(nil, wire.ConfigSave, 0),
		wire.AppendGripInfo(nil, wire.GripInfo{ID: 61548}),
		wire.AppendGripStatus(nil, &status),
		wire.AppendIn(wire.LayoutWired, nil, wire.ToHost, &wire.Message{Header: wire.HeaderGripStatus, GripStatus: status}),
		wire.Append(nil, wire.ToHost, &wire.Message{Header: wire.HeaderGripError, GripUser: wire.GripStatus{ID: 7, Error: 3}}),
		{0xde, 0xad, 0xbe, 0xef},
	}
}

// FuzzDecode: decoding never panics, and whatever decodes re-encodes to the
// very same bytes (the table's decoder and encoder agree).
func FuzzDecode(f *testing.F) {
	for _, s := range seedFrames() {
		f.Add(s, true)
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, b []byte, toHost bool) {
		dir := wire.ToDevice
		if toHost {
			dir = wire.ToHost
		}
		for _, l := range []wire.Layout{wire.LayoutWireless, wire.LayoutWired} {
			var m wire.Message
			n, err := wire.DecodeIn(l, dir, b, &m)
			if err != nil {
				continue
			}
			if n <= 0 || n > len(b) || n > wire.MaxFrameLen {
				t.Fatalf("%v: Decode length %d for %d bytes", l, n, len(b))
			}
			if again := wire.AppendIn(l, nil, dir, &m); !bytes.Equal(again, b[:n]) {
				t.Fatalf("%v: round trip: decoded %x, re-encoded %x", l, b[:n], again)
			}
		}
	})
}

// FuzzScanner: any noise, cut at any points, never panics; every byte is
// either skipped, part of a returned frame or still buffered; and a clean
// run of frames after the noise is always found again.
func FuzzScanner(f *testing.F) {
	for _, s := range seedFrames() {
		f.Add(s, uint8(1))
		f.Add(append(s, s...), uint8(7))
	}
	valid := wire.AppendEndEffectorState(nil, hw.Vec3{X: 0.1, Y: -0.2, Z: 0.3}, hw.Vec3{X: 0.01, Y: 0.02, Z: -0.03})
	f.Fuzz(func(t *testing.T, noise []byte, chunk uint8) {
		step := int(chunk%32) + 1
		stream := append(append([]byte(nil), noise...), bytes.Repeat(valid, 4)...)
		s := wire.NewScanner(wire.ToHost)
		var m wire.Message
		var consumed uint64
		var last []byte
		for i := 0; i < len(stream); i += step {
			end := min(i+step, len(stream))
			s.Write(stream[i:end])
			for fr, ok := s.Next(&m); ok; fr, ok = s.Next(&m) {
				var check wire.Message
				if n, err := wire.Decode(wire.ToHost, fr, &check); err != nil || n != len(fr) {
					t.Fatalf("scanner returned %x which does not decode: %v", fr, err)
				}
				consumed += uint64(len(fr))
				last = append(last[:0], fr...)
			}
		}
		if total := s.Skipped() + consumed + uint64(s.Buffered()); total != uint64(len(stream)) {
			t.Fatalf("skipped %d + framed %d + buffered %d != %d bytes fed", s.Skipped(), consumed, s.Buffered(), len(stream))
		}
		if !bytes.Equal(last, valid) {
			t.Fatalf("after noise %x the scanner lost the stream: last frame %x", noise, last)
		}
	})
}
