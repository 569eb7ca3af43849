package wire_test

import (
	"fmt"

	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/hw/wire"
)

// Encode a force command, then find the reply in a noisy byte stream.
func Example() {
	var out [wire.MaxFrameLen]byte
	fmt.Printf("% x\n", wire.AppendForce(out[:0], hw.Vec3{Z: 1}))

	s := wire.NewScanner(wire.ToHost)
	s.Write([]byte{0xff, 0x00}) // line noise
	s.Write(wire.AppendEndEffectorState(nil, hw.Vec3{Z: 0.125}, hw.Vec3{}))
	var m wire.Message
	if _, ok := s.NextOf(wire.HeaderEndEffectorState, &m); ok {
		fmt.Println("position", m.A, "skipped", s.Skipped())
	}
	// Output:
	// 2a 00 00 00 00 00 00 00 00 00 00 80 3f
	// position {0 0 0.125} skipped 2
}
