package wire_test

import (
	"bytes"
	"encoding/hex"
	"errors"
	"math"
	"testing"

	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/hw/wire"
)

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Golden bytes: little-endian float32 after one header byte. 1.0f is
// 0000803f, -2.5f is 000020c0, 0.5f is 0000003f.
func TestEncodersGolden(t *testing.T) {
	uuid := [16]byte{0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0xfe, 0xdc, 0xba, 0x98, 0x76, 0x54, 0x32, 0x10}
	status := wire.GripStatus{ID: 0xF06C, Orientation: hw.Quat{W: 1}, Hall: 0x80, Buttons: 0x05, Battery: 0.5, ExtLen: 2, Ext: [12]byte{0xAA, 0xBB}}
	tests := []struct {
		name string
		got  []byte
		want string
	}{
		{"wake", wire.AppendWake(nil), "0a"},
		{"force", wire.AppendForce(nil, hw.Vec3{X: 1, Y: -2.5, Z: 0.5}), "2a" + "0000803f" + "000020c0" + "0000003f"},
		{"position", wire.AppendPosition(nil, hw.Vec3{Z: 1}), "2c" + "00000000" + "00000000" + "0000803f"},
		{"torques", wire.AppendTorques(nil, hw.Angles3{A0: 1}), "1a" + "0000803f" + "00000000" + "00000000"},
		{"angles", wire.AppendAngles(nil, hw.Angles3{A2: -2.5}), "1c" + "00000000" + "00000000" + "000020c0"},
		{"end-effector-state", wire.AppendEndEffectorState(nil, hw.Vec3{X: 1}, hw.Vec3{Z: 0.5}),
			"2b" + "0000803f" + "00000000" + "00000000" + "00000000" + "00000000" + "0000003f"},
		{"joint-state", wire.AppendJointState(nil, hw.Angles3{A1: 1}, hw.Angles3{A0: -2.5}),
			"1b" + "00000000" + "0000803f" + "00000000" + "000020c0" + "00000000" + "00000000"},
		{"wake-reply", wire.AppendWakeReply(nil, wire.WakeReply{ID: 0x049D, Model: 3, HardwareVersion: 2, FirmwareVersion: 7, UUID: uuid}),
			"0a" + "9d04" + "03" + "02" + "07" + "0123456789abcdeffedcba9876543210"},
		{"config-gravity", wire.AppendConfig(nil, wire.Config{Sub: wire.ConfigGravity, Flag: true, Value: 1}), "0e" + "e1" + "01" + "0000803f"},
		{"config-ack", wire.AppendConfigAck(nil, wire.ConfigHandedness, 0), "0e" + "e3" + "00"},
		{"grip-query", wire.AppendGripQuery(nil), "d0"},
		{"grip-info", wire.AppendGripInfo(nil, wire.GripInfo{Remaining: 1, ID: 61548, Model: 4, HardwareVersion: 1, FirmwareVersion: 9}), "d0" + "01" + "6cf0" + "04" + "01" + "09"},
		{"grip-status", wire.AppendGripStatus(nil, &status),
			"da" + "6cf0" + "0000803f" + "00000000" + "00000000" + "00000000" + "00" + "00" + "80" + "05" + "0000003f" + "02" + "aabb"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := hex.EncodeToString(tc.got); got != tc.want {
				t.Errorf("encoded\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}

func TestDecodeGolden(t *testing.T) {
	tests := []struct {
		name  string
		dir   wire.Direction
		bytes string
		check func(t *testing.T, m *wire.Message)
	}{
		{"end-effector-state", wire.ToHost, "2b" + "0000803f" + "00000000" + "00000000" + "00000000" + "00000000" + "0000003f",
			func(t *testing.T, m *wire.Message) {
				if m.A != (hw.Vec3{X: 1}) || m.B != (hw.Vec3{Z: 0.5}) {
					t.Errorf("position %v velocity %v", m.A, m.B)
				}
			}},
		{"force", wire.ToDevice, "2a" + "0000803f" + "000020c0" + "0000003f",
			func(t *testing.T, m *wire.Message) {
				if m.A != (hw.Vec3{X: 1, Y: -2.5, Z: 0.5}) {
					t.Errorf("force %v", m.A)
				}
			}},
		{"grip-status", wire.ToHost, "da" + "6cf0" + "0000803f" + "00000000" + "00000000" + "00000000" + "00" + "01" + "80" + "05" + "0000003f" + "02" + "aabb",
			func(t *testing.T, m *wire.Message) {
				s := m.GripStatus
				if s.ID != 61548 || s.Orientation != (hw.Quat{W: 1}) || s.Attached != 1 || s.Hall != 0x80 || s.Buttons != 5 || s.Battery != 0.5 || s.ExtLen != 2 || s.Ext[1] != 0xBB {
					t.Errorf("status %+v", s)
				}
			}},
		{"config-ack", wire.ToHost, "0ee200", func(t *testing.T, m *wire.Message) {
			if m.Config.Sub != wire.ConfigTorqueScaling || m.Config.Status != 0 {
				t.Errorf("config %+v", m.Config)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := unhex(t, tc.bytes)
			var m wire.Message
			n, err := wire.Decode(tc.dir, b, &m)
			if err != nil || n != len(b) {
				t.Fatalf("Decode = %d, %v; want %d, nil", n, err, len(b))
			}
			tc.check(t, &m)
			if again := wire.Append(nil, tc.dir, &m); !bytes.Equal(again, b) {
				t.Errorf("re-encoded %x, want %x", again, b)
			}
		})
	}
}

func TestDecodeRejects(t *testing.T) {
	nan := "0000c07f"
	tests := []struct {
		name  string
		dir   wire.Direction
		bytes string
		want  error
	}{
		{"empty", wire.ToHost, "", wire.ErrShort},
		{"short state", wire.ToHost, "2b0000803f", wire.ErrShort},
		{"unknown header", wire.ToHost, "77", wire.ErrUnknownHeader},
		{"command header sent by device", wire.ToHost, "2a" + "0000803f" + "00000000" + "00000000", wire.ErrUnknownHeader},
		{"NaN position", wire.ToHost, "2b" + nan + "00000000" + "00000000" + "00000000" + "00000000" + "00000000", wire.ErrImplausible},
		{"grip ext too long", wire.ToHost, "da" + "6cf0" + "0000803f" + "00000000" + "00000000" + "00000000" + "00000000" + "0000003f" + "0d", wire.ErrImplausible},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var m wire.Message
			if _, err := wire.Decode(tc.dir, unhex(t, tc.bytes), &m); !errors.Is(err, tc.want) {
				t.Errorf("Decode error = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestDecodeWakeReplyAcceptsAnyHeader(t *testing.T) {
	b := wire.AppendWakeReply(nil, wire.WakeReply{ID: 0x049D, UUID: [16]byte{15: 1}})
	b[0] = 0x55
	var w wire.WakeReply
	if err := wire.DecodeWakeReply(b, &w); err != nil || w.ID != 0x049D || w.UUID[15] != 1 {
		t.Fatalf("DecodeWakeReply = %+v, %v", w, err)
	}
}

func TestScannerResynchronises(t *testing.T) {
	frame := wire.AppendEndEffectorState(nil, hw.Vec3{X: 0.1, Y: -0.2, Z: 0.3}, hw.Vec3{Z: 0.01})
	tests := []struct {
		name        string
		stream      []byte
		wantFrames  int
		wantSkipped uint64
	}{
		{"clean", concat(frame, frame), 2, 0},
		{"leading noise", concat(unhex(t, "ffee77"), frame), 1, 3},
		{"noise between", concat(frame, unhex(t, "0102"), frame), 2, 2},
		// A header byte followed by the start of a real frame: the false
		// candidate's payload is implausible, so it is dropped.
		{"false header", concat([]byte{wire.HeaderEndEffectorState}, frame), 1, 1},
		{"partial tail waits", concat(frame, frame[:10]), 1, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := wire.NewScanner(wire.ToHost)
			// Feed one byte at a time, as a slow port would.
			var m wire.Message
			got := 0
			for _, c := range tc.stream {
				s.Write([]byte{c})
				for f, ok := s.Next(&m); ok; f, ok = s.Next(&m) {
					if !bytes.Equal(f, frame) {
						t.Fatalf("frame %x, want %x", f, frame)
					}
					got++
				}
			}
			if got != tc.wantFrames || s.Skipped() != tc.wantSkipped {
				t.Errorf("frames %d skipped %d, want %d and %d", got, s.Skipped(), tc.wantFrames, tc.wantSkipped)
			}
		})
	}
}

func TestScannerNextOfDropsOtherFrames(t *testing.T) {
	s := wire.NewScanner(wire.ToHost)
	want := wire.AppendEndEffectorState(nil, hw.Vec3{Z: 0.2}, hw.Vec3{})
	s.Write(concat(wire.AppendConfigAck(nil, wire.ConfigSave, 0), want))
	var m wire.Message
	f, ok := s.NextOf(wire.HeaderEndEffectorState, &m)
	if !ok || !bytes.Equal(f, want) || s.Skipped() != 3 {
		t.Fatalf("NextOf = %x %v skipped %d", f, ok, s.Skipped())
	}
}

func TestScannerDoesNotAllocate(t *testing.T) {
	s := wire.NewScanner(wire.ToHost)
	frame := wire.AppendEndEffectorState(nil, hw.Vec3{X: 0.1}, hw.Vec3{})
	var m wire.Message
	buf := make([]byte, 0, 64)
	allocs := testing.AllocsPerRun(1000, func() {
		buf = wire.AppendForce(buf[:0], hw.Vec3{Z: 1})
		n := copy(s.Space(), frame)
		s.Fill(n)
		if _, ok := s.NextOf(wire.HeaderEndEffectorState, &m); !ok {
			t.Fatal("no frame")
		}
	})
	if allocs != 0 {
		t.Fatalf("encode+scan allocates %v times per frame, want 0", allocs)
	}
}

func concat(parts ...[]byte) []byte {
	var out []byte
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// Whoever corrects a layout in the table gets told here if its length,
// encoder and decoder disagree.
func TestFrameTableIsConsistent(t *testing.T) {
	seen := map[[3]byte]string{}
	for _, f := range wire.Frames() {
		t.Run(f.Dir.String()+"/"+f.Name, func(t *testing.T) {
			key := [3]byte{byte(f.Layout), byte(f.Dir), f.Header}
			if other, dup := seen[key]; dup {
				t.Fatalf("header %#x is both %s and %s", f.Header, other, f.Name)
			}
			seen[key] = f.Name
			// Sub-code: config frames need a valid one; a grip status a
			// rotation; others ignore them.
			m := wire.Message{Header: f.Header, Config: wire.Config{Sub: wire.ConfigSave},
				GripStatus: wire.GripStatus{Orientation: hw.Quat{W: 1}}}
			b := wire.AppendIn(f.Layout, nil, f.Dir, &m)
			if len(b) != f.Len || f.Len > wire.MaxFrameLen {
				t.Fatalf("encoded %d bytes (%x), table says %d (max %d)", len(b), b, f.Len, wire.MaxFrameLen)
			}
			var back wire.Message
			if n, err := wire.DecodeIn(f.Layout, f.Dir, b, &back); err != nil || n != f.Len {
				t.Fatalf("Decode = %d, %v", n, err)
			}
			if n, err := wire.DecodeIn(f.Layout, f.Dir, b[:len(b)-1], &back); len(b) > 1 && err != wire.ErrShort {
				t.Fatalf("Decode of a truncated frame = %d, %v; want ErrShort", n, err)
			}
		})
	}
}

// TestEncodedTinyValuesDecode: the decoders take a non-zero value below
// 1e-9 for noise (see the package doc), so an encoder must never put one on
// the wire: a force of 1e-12 N (a rotated or scaled force's residue, a weak
// spring near its anchor) made every frame the host sent read as noise to a
// device that checks plausibility, and a state of 1e-12 m/s made a valid
// reply read as noise to the host. Tiny values go out as zero.
func TestEncodedTinyValuesDecode(t *testing.T) {
	tiny := []float64{1e-12, -1e-12, 5e-10, -9.99999e-10, 1e-40, -1e-300}
	for _, v := range tiny {
		vec := hw.Vec3{X: v, Y: 1, Z: v}
		ang := hw.Angles3{A0: v, A1: 10, A2: v}
		tests := []struct {
			name string
			dir  wire.Direction
			b    []byte
		}{
			{"force", wire.ToDevice, wire.AppendForce(nil, vec)},
			{"position", wire.ToDevice, wire.AppendPosition(nil, vec)},
			{"torques", wire.ToDevice, wire.AppendTorques(nil, ang)},
			{"angles", wire.ToDevice, wire.AppendAngles(nil, ang)},
			{"config", wire.ToDevice, wire.AppendConfig(nil, wire.Config{Sub: wire.ConfigGravity, Flag: true, Value: v})},
			{"end-effector state", wire.ToHost, wire.AppendEndEffectorState(nil, vec, vec)},
			{"joint state", wire.ToHost, wire.AppendJointState(nil, ang, ang)},
			{"grip status", wire.ToHost, wire.AppendGripStatus(nil, &wire.GripStatus{ID: 1, Orientation: hw.Quat{W: 1, X: v, Y: v, Z: v}, Battery: max(v, 0)})},
		}
		for _, tc := range tests {
			var m wire.Message
			n, err := wire.Decode(tc.dir, tc.b, &m)
			if err != nil || n != len(tc.b) {
				t.Errorf("%s with %g: Decode(%x) = %d, %v; want the whole frame", tc.name, v, tc.b, n, err)
				continue
			}
			if tc.name == "force" && (m.A != hw.Vec3{Y: 1}) {
				t.Errorf("force with %g decoded as %+v, want the tiny parts as zero", v, m.A)
			}
		}
	}
}

// TestGripStatusNeedsARotation: a status frame whose quaternion is no
// rotation (all zero, or far from unit length) is implausible, as a NaN
// would be: it is line noise or a grip whose sensor is not up, and a
// client that normalises it divides by zero. The Scanner drops it and
// finds the next good frame; unit quaternions of any sign pass.
func TestGripStatusNeedsARotation(t *testing.T) {
	tests := []struct {
		name string
		q    hw.Quat
		ok   bool
	}{
		{"identity", hw.Quat{W: 1}, true},
		{"negated identity", hw.Quat{W: -1}, true},
		{"half turn about Z", hw.Quat{Z: 1}, true},
		{"a float32 unit quaternion", hw.Quat{W: 0.5, X: 0.5, Y: -0.5, Z: 0.5}, true},
		{"all zero", hw.Quat{}, false},
		{"a sliver", hw.Quat{W: 1e-6}, false},
		{"far too short", hw.Quat{W: 0.2, X: 0.2}, false},
		{"far too long", hw.Quat{W: 1.4, X: 1.4, Y: 1.4, Z: 1.4}, false},
	}
	// The same frames from a grip that reports an error (its orientation
	// sensor down) are its own: they decode, and say they carry no
	// rotation.
	for _, tc := range tests {
		s := wire.GripStatus{ID: 7, Orientation: tc.q, Error: 5, Buttons: 1, Battery: 0.5}
		var m wire.Message
		if _, err := wire.Decode(wire.ToHost, wire.AppendGripStatus(nil, &s), &m); err != nil {
			t.Errorf("%s with the grip's error 5: %v; want the frame", tc.name, err)
		} else if m.GripStatus.Error != 5 || m.GripStatus.Oriented() != tc.ok {
			t.Errorf("%s with the grip's error 5: error %d, oriented %v; want 5, %v", tc.name, m.GripStatus.Error, m.GripStatus.Oriented(), tc.ok)
		}
	}
	good := wire.GripStatus{ID: 7, Orientation: hw.Quat{W: 1}, Battery: 0.5}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := wire.GripStatus{ID: 7, Orientation: tc.q, Battery: 0.5}
			b := wire.AppendGripStatus(nil, &s)
			var m wire.Message
			_, err := wire.Decode(wire.ToHost, b, &m)
			if tc.ok && err != nil {
				t.Fatalf("Decode(%v): %v", tc.q, err)
			}
			if !tc.ok && !errors.Is(err, wire.ErrImplausible) {
				t.Fatalf("Decode(%v): err %v, orientation %v; want ErrImplausible", tc.q, err, m.GripStatus.Orientation)
			}
			sc := wire.NewScanner(wire.ToHost)
			sc.Write(b)
			sc.Write(wire.AppendGripStatus(nil, &good))
			var first wire.Message
			if _, ok := sc.Next(&first); !ok {
				t.Fatal("the scanner found no frame")
			}
			want := good.Orientation // the implausible frame dropped
			if tc.ok {
				want = m.GripStatus.Orientation
			}
			if first.GripStatus.Orientation != want {
				t.Errorf("scanner's first frame has orientation %v, want %v", first.GripStatus.Orientation, want)
			}
		})
	}
}

// TestEncodedHugeValuesDecode: the package doc promises every frame the
// encoders make decodes, but a value beyond a frame's plausible range (a
// torque of 2e7 N·mm, a position 11 m away, an infinity) went out as is,
// and a device that checks plausibility as Decode does (the emulator)
// dropped the command as noise: the arm kept its last, sticky command and
// did not answer. Such a value goes out as the frame's limit, sign kept,
// and a NaN as zero.
func TestEncodedHugeValuesDecode(t *testing.T) {
	inf := math.Inf(1)
	tests := []struct {
		name  string
		dir   wire.Direction
		b     []byte
		limit float64 // of the first number of the frame
	}{
		{"force", wire.ToDevice, wire.AppendForce(nil, hw.Vec3{X: 2e4, Y: -inf, Z: math.NaN()}), 1e4},
		{"position", wire.ToDevice, wire.AppendPosition(nil, hw.Vec3{X: 11, Y: -11, Z: 0.1}), 10},
		{"torques", wire.ToDevice, wire.AppendTorques(nil, hw.Angles3{A0: 2e7, A1: -inf, A2: 5}), 1e7},
		{"angles", wire.ToDevice, wire.AppendAngles(nil, hw.Angles3{A0: 2e5, A1: -2e5, A2: 5}), 1e5},
		{"config", wire.ToDevice, wire.AppendConfig(nil, wire.Config{Sub: wire.ConfigGravity, Flag: true, Value: 5e3}), 1e3},
		{"end-effector state", wire.ToHost, wire.AppendEndEffectorState(nil, hw.Vec3{X: 12, Y: 0.1}, hw.Vec3{X: -2e3}), 10},
		{"joint state", wire.ToHost, wire.AppendJointState(nil, hw.Angles3{A0: 2e5}, hw.Angles3{A2: inf}), 1e5},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var m wire.Message
			n, err := wire.Decode(tc.dir, tc.b, &m)
			if err != nil || n != len(tc.b) {
				t.Fatalf("Decode(%x) = %d, %v; want the whole frame", tc.b, n, err)
			}
			first := m.A.X
			if m.Header == wire.HeaderConfig {
				first = m.Config.Value
			}
			if first != tc.limit {
				t.Errorf("first number decoded as %g, want the limit %g", first, tc.limit)
			}
		})
	}
}

// TestEncodedGripStatusOutOfRangeDecodes: the grip status encoder sent a
// battery level and a quaternion as given, while the arm encoders cap their
// numbers at the frame's bounds. A battery beyond 0..1.5 (or NaN, or
// infinite) made the frame read as noise, and so did a quaternion with a
// NaN or infinite part even from a grip reporting an error beside it: a
// device (the emulator's grip, fed by its physics model) lost every status,
// and its host reported the grip switched off instead of its error. The
// battery goes out within 0..1 (hw.State's range, NaN as 0), and an
// orientation with a part that is not finite or beyond ±1.5 as zeros, the
// frame's "no rotation" (which decodes when the grip reports an error).
func TestEncodedGripStatusOutOfRangeDecodes(t *testing.T) {
	inf, nan := math.Inf(1), math.NaN()
	unit := hw.Quat{W: 1}
	tests := []struct {
		name        string
		q           hw.Quat
		battery     float64
		errCode     uint8
		wantBattery float64
		oriented    bool
	}{
		{"battery above range", unit, 2, 0, 1, true},
		{"battery a percentage", unit, 80, 0, 1, true},
		{"battery negative", unit, -0.5, 0, 0, true},
		{"battery NaN", unit, nan, 0, 0, true},
		{"battery above 1 the decoder accepts", unit, 1.25, 0, 1.25, true},
		{"battery at the decoder's limit", unit, 1.5, 0, 1.5, true},
		{"battery -0", unit, math.Copysign(0, -1), 0, math.Copysign(0, -1), true},
		{"battery infinite", unit, inf, 0, 1, true},
		{"battery beyond float32", unit, 1e39, 0, 1, true},
		{"orientation NaN with an error", hw.Quat{W: nan, X: nan, Y: nan, Z: nan}, 0.5, 3, 0.5, false},
		{"orientation infinite with an error", hw.Quat{W: inf}, 0.5, 3, 0.5, false},
		{"orientation beyond 1.5 with an error", hw.Quat{W: 2}, 0.5, 3, 0.5, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := wire.GripStatus{ID: 9, Orientation: tc.q, Error: tc.errCode, Buttons: 2, Battery: tc.battery}
			b := wire.AppendGripStatus(nil, &s)
			var m wire.Message
			n, err := wire.Decode(wire.ToHost, b, &m)
			if err != nil || n != len(b) {
				t.Fatalf("Decode(%x) = %d, %v; want the whole frame", b, n, err)
			}
			g := m.GripStatus
			if g.Battery != tc.wantBattery || math.Signbit(g.Battery) != math.Signbit(tc.wantBattery) || g.Error != tc.errCode || g.Buttons != 2 || g.Oriented() != tc.oriented {
				t.Errorf("decoded battery %g, error %d, buttons %d, oriented %v; want %g, %d, 2, %v", g.Battery, g.Error, g.Buttons, g.Oriented(), tc.wantBattery, tc.errCode, tc.oriented)
			}
		})
	}
}
