package emulator_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/hw/emulator"
	"github.com/hapticd/hapticd/hw/hwtest"
	"github.com/hapticd/hapticd/hw/serial"
	"github.com/hapticd/hapticd/hw/sim"
	"github.com/hapticd/hapticd/hw/wire"
)

// host is the driver's side of a pty, raw: write a request, read n bytes.
type host struct {
	t    *testing.T
	port serial.Port
}

func start(t *testing.T, o emulator.Options) (*emulator.Emulator, host) {
	t.Helper()
	e, path, err := emulator.StartPTY(o)
	if err != nil {
		hwtest.SkipIfUnsupported(t, err)
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	p, err := serial.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return e, host{t, p}
}

// ask writes req and reads until n bytes came or a generous deadline passed.
func (h host) ask(req []byte, n int) []byte {
	h.t.Helper()
	if _, err := h.port.Write(req); err != nil {
		h.t.Fatal(err)
	}
	return h.read(n, 5*time.Second)
}

func (h host) read(n int, wait time.Duration) []byte {
	h.t.Helper()
	out := make([]byte, 0, n)
	buf := make([]byte, 256)
	deadline := time.Now().Add(wait)
	for len(out) < n && time.Now().Before(deadline) {
		h.port.SetReadTimeout(time.Until(deadline))
		k, err := h.port.Read(buf[:n-len(out)])
		if err != nil {
			h.t.Fatal(err)
		}
		out = append(out, buf[:k]...)
	}
	return out
}

func TestWakeReplyAndFlakyWakeups(t *testing.T) {
	e, h := start(t, emulator.Options{Index: 1, Model: 3, Faults: emulator.Faults{FlakyWakeups: 1}})
	tests := []struct {
		name   string
		wantID uint16
	}{
		{"first wake-up is flaky", 0},
		{"second is good", e.ID()},
	}
	for _, tc := range tests {
		var w wire.WakeReply
		if err := wire.DecodeWakeReply(h.ask(wire.AppendWake(nil), wire.WakeReplyLen), &w); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if w.ID != tc.wantID || (tc.wantID != 0 && (w.UUID != e.UUID() || w.Model != 3)) {
			t.Errorf("%s: reply %+v", tc.name, w)
		}
	}
}

func TestForceCommandsRunPhysics(t *testing.T) {
	e, h := start(t, emulator.Options{Index: 2})
	var m wire.Message
	var z []float64
	for i := 0; i < 50; i++ {
		b := h.ask(wire.AppendForce(nil, hw.Vec3{Z: 2}), wire.ArmStateLen)
		if _, err := wire.Decode(wire.ToHost, b, &m); err != nil {
			t.Fatalf("reply %x: %v", b, err)
		}
		z = append(z, m.A.Z)
	}
	if z[len(z)-1] <= z[0] {
		t.Errorf("z went from %v to %v under an upward force", z[0], z[len(z)-1])
	}
	if s := e.Stats(); s.Commands != 50 || s.Replies != 50 || s.LastForce != (hw.Vec3{Z: 2}) {
		t.Errorf("stats %+v", s)
	}
}

func TestFaults(t *testing.T) {
	tests := []struct {
		name      string
		faults    emulator.Faults
		wantBytes int // reply bytes the host sees for one force command
	}{
		{"garbage before the reply", emulator.Faults{GarbageProbability: 1, GarbageBytes: 5}, 5 + wire.ArmStateLen},
		{"every byte dropped", emulator.Faults{DropProbability: 1}, 0},
		{"stalled", emulator.Faults{StallReplies: 1}, 0},
		{"late but whole", emulator.Faults{Latency: time.Millisecond, Jitter: time.Millisecond}, wire.ArmStateLen},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, h := start(t, emulator.Options{Index: 10 + i, Faults: tc.faults})
			h.port.Write(wire.AppendForce(nil, hw.Vec3{X: 1}))
			// Wait generously for what should come, then briefly for
			// anything more, which must not come.
			got := h.read(tc.wantBytes, 5*time.Second)
			got = append(got, h.read(1, 200*time.Millisecond)...)
			if len(got) != tc.wantBytes {
				t.Fatalf("host read %d bytes (%x), want %d", len(got), got, tc.wantBytes)
			}
			if tc.wantBytes > 0 && got[len(got)-wire.ArmStateLen] != wire.HeaderEndEffectorState {
				t.Errorf("reply does not end with a state frame: %x", got)
			}
			// Firmware applied the command even when its reply was lost.
			hwtest.Eventually(t, 5*time.Second, "the firmware to apply force (1, 0, 0)", func() bool {
				return e.Stats().LastForce == (hw.Vec3{X: 1})
			})
		})
	}
}

func TestConfigAcknowledged(t *testing.T) {
	e, h := start(t, emulator.Options{Index: 20})
	b := h.ask(wire.AppendConfig(nil, wire.Config{Sub: wire.ConfigHandedness, Flag: false}), wire.ConfigAckLen)
	if !bytes.Equal(b, wire.AppendConfigAck(nil, wire.ConfigHandedness, 0)) {
		t.Fatalf("ack %x", b)
	}
	if !e.Stats().Settings.LeftHanded {
		t.Error("handedness 0 (left) was not applied")
	}
}

func TestGripAnswersAndStreams(t *testing.T) {
	e, h := start(t, emulator.Options{Kind: hw.KindGrip, Index: 1})
	s := wire.NewScanner(wire.ToHost)
	s.Write(h.ask(wire.AppendGripQuery(nil), 3*wire.MaxFrameLen))
	var m wire.Message
	var info, status bool
	for _, ok := s.Next(&m); ok; _, ok = s.Next(&m) {
		switch m.Header {
		case wire.HeaderGripInfo:
			info = info || m.GripInfo.ID == e.ID()
		case wire.HeaderGripStatus:
			status = status || m.GripStatus.ID == e.ID()
		}
	}
	if !info || !status {
		t.Errorf("grip info seen %v, status seen %v", info, status)
	}
}

func TestUnplugNeedsAPort(t *testing.T) {
	e, err := emulator.New(emulator.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Unplug(); err == nil {
		t.Error("Unplug of an emulator without its own port succeeded")
	}
	if _, err := emulator.New(emulator.Options{Kind: hw.Kind(9)}); err == nil {
		t.Error("an unknown kind was accepted")
	}
}

// Each family announces its model and versions, and an arm rests where
// the simulated arm of its family rests: an emulator told only Model 6
// announced a Minverse but stepped Inverse3 physics (resting at y 0.15,
// z 0.10, not 0.12, 0.08), and one told nothing announced model 0.
func TestFamiliesAnnounceAndRestAsSimulated(t *testing.T) {
	tests := []struct {
		name string
		o    emulator.Options
		want sim.Family
	}{
		{"default", emulator.Options{}, sim.FamilyInverse3},
		{"model 6 alone", emulator.Options{Model: sim.ModelMinverse}, sim.FamilyMinverse},
		{"minverse", emulator.Options{Family: sim.FamilyMinverse}, sim.FamilyMinverse},
		{"inverse3x", emulator.Options{Family: sim.FamilyInverse3x}, sim.FamilyInverse3x},
		{"grip kind alone", emulator.Options{Kind: hw.KindGrip}, sim.FamilyWirelessVerseGrip},
		{"wired grip", emulator.Options{Family: sim.FamilyVerseGrip}, sim.FamilyVerseGrip},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			spec := tc.want.Spec()
			tc.o.Index = 40 + i
			e, h := start(t, tc.o)
			if spec.Kind == hw.KindGrip {
				s := wire.NewScanner(wire.ToHost)
				s.Write(h.ask(wire.AppendGripQuery(nil), 3*wire.MaxFrameLen))
				var m wire.Message
				for _, ok := s.Next(&m); ok; _, ok = s.Next(&m) {
					if m.Header == wire.HeaderGripInfo {
						gi := m.GripInfo
						if gi.ID != e.ID() || gi.Model != spec.Model || gi.FirmwareVersion != spec.FirmwareVersion || gi.HardwareVersion != spec.HardwareVersion {
							t.Fatalf("grip info %+v, want id %d and the %s's model %d, versions %d.%d", gi, e.ID(), spec.Name, spec.Model, spec.FirmwareVersion, spec.HardwareVersion)
						}
						return
					}
				}
				t.Fatal("no grip info frame")
			}
			var w wire.WakeReply
			if err := wire.DecodeWakeReply(h.ask(wire.AppendWake(nil), wire.WakeReplyLen), &w); err != nil {
				t.Fatal(err)
			}
			if w.Model != spec.Model || w.FirmwareVersion != spec.FirmwareVersion || w.HardwareVersion != spec.HardwareVersion {
				t.Fatalf("wake-up %+v, want the %s's model %d, versions %d.%d", w, spec.Name, spec.Model, spec.FirmwareVersion, spec.HardwareVersion)
			}
			// A zero force, gravity compensated by the firmware: the arm
			// stays where it rests.
			var m wire.Message
			for range 20 {
				b := h.ask(wire.AppendForce(nil, hw.Vec3{}), wire.ArmStateLen)
				if _, err := wire.Decode(wire.ToHost, b, &m); err != nil {
					t.Fatalf("reply %x: %v", b, err)
				}
			}
			// The wire carries float32.
			if d := m.A.Sub(spec.WorkspaceCenterM).Norm(); d > 1e-4 {
				t.Errorf("rests at %v, want the %s's centre %v", m.A, spec.Name, spec.WorkspaceCenterM)
			}
		})
	}
}
