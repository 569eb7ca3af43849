package hid_test

import (
	"fmt"

	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/hw/hid"
)

// Drive a RawHID board; here the in-memory Fake stands in for
// hid.Open(info).
func ExampleNewDriver() {
	board := hid.NewFake(hid.Info{ID: 0x0042, UUID: [16]byte{15: 7}})
	board.SetState(hid.StateReport{PositionM: hw.Vec3{Z: 0.25}, Status: 3})
	d, err := hid.NewDriver(board, hid.Options{Path: "hid:demo"})
	if err != nil {
		fmt.Println(err)
		return
	}
	var st hw.State
	d.Exchange(&hw.Command{Mode: hw.ModeForce, ForceN: hw.Vec3{X: 1}}, &st)
	fmt.Println(d.Info().ID, st.PositionM, board.ForceN())
	d.Close()
	fmt.Println("after close", board.ForceN())
	// Output:
	// 0042 {0 0 0.25} {1 0 0}
	// after close {0 0 0}
}
