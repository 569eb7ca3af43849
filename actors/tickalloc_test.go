package actors_test

import (
	"testing"

	"github.com/hapticd/hapticd/actors/loop"
	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/hw/driver"
	"github.com/hapticd/hapticd/hw/hwtest"
	"github.com/hapticd/hapticd/protocol"
)

// TestPerTickChainDoesNotAllocate pins the per-tick data path at zero
// allocations, component by component as a tick crosses them: decode a
// client's force message, write it into the device's register, run the
// loop's tick (which encodes the wire frame for a serial arm and decodes its
// reply), load the snapshot and encode the client's frame. A garbage
// collection on this path would land on force ticks.
func TestPerTickChainDoesNotAllocate(t *testing.T) {
	types, err := protocol.NewTypeTable(nil)
	if err != nil {
		t.Fatal(err)
	}
	arm, err := driver.OpenArm(hwtest.NewArmPort(0x049D, [16]byte{1}), driver.ArmOptions{Path: "mem"})
	if err != nil {
		t.Fatal(err)
	}
	clock := loop.SystemClock()
	dev := loop.NewDevice(arm, loop.DeviceOptions{Clock: clock})
	defer dev.Halt()
	const session = 1
	reg := dev.Register()
	if reg.Claim(session) != session {
		t.Fatal("claim failed")
	}
	msg := []byte(`{"arm3":[{"device_id":"049D","commands":{"set_cursor_force":{"vector":{"x":0,"y":0.25,"z":0.5}}}}]}`)
	var (
		m     protocol.ClientMessage
		snap  loop.Snapshot
		frame = protocol.Frame{SessionID: session, Arms: make([]protocol.ArmFrame, 1)}
		out   = make([]byte, 0, 4096)
		seq   uint64
		cmd   hw.Command
	)
	params := loop.DefaultParams()
	tick := func() {
		if errs := protocol.DecodeClientMessage(msg, types, &m); len(errs) != 0 || len(m.Devices) != 1 {
			t.Fatalf("decode: %v (%d devices)", errs, len(m.Devices))
		}
		v := m.Devices[0].Command.Vec
		cmd = hw.Command{Mode: hw.ModeForce, ForceN: hw.Vec3{X: v.X, Y: v.Y, Z: v.Z}}
		seq++
		reg.Write(session, seq, clock.Now()+100_000_000, &cmd, params)
		dev.Step(clock.Now())
		dev.Load(&snap)
		a := &frame.Arms[0]
		a.DeviceID = m.Devices[0].DeviceID
		p, f := snap.State.PositionM, snap.State.ForceN
		a.State.CursorPosition = protocol.Vec3{X: p.X, Y: p.Y, Z: p.Z}
		a.State.CurrentCursorForce = protocol.Vec3{X: f.X, Y: f.Y, Z: f.Z}
		out = protocol.AppendFrame(out[:0], &frame, types)
	}
	tick() // warm up: first-use buffers
	if n := testing.AllocsPerRun(500, tick); n != 0 {
		t.Fatalf("one tick's path from message to frame allocates %v times, want 0", n)
	}
	if snap.AppliedSeq != seq || snap.State.ForceN.Z != 0.5 {
		t.Fatalf("the loop applied seq %d (want %d), force %+v: the chain did not carry the command", snap.AppliedSeq, seq, snap.State.ForceN)
	}
}
