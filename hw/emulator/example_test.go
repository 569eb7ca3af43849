package emulator_test

import (
	"fmt"
	"time"

	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/hw/driver"
	"github.com/hapticd/hapticd/hw/emulator"
	"github.com/hapticd/hapticd/hw/serial"
)

// An emulated arm on a pseudo-terminal is a serial port to the real driver.
func ExampleStartPTY() {
	emu, path, err := emulator.StartPTY(emulator.Options{Index: 0})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer emu.Close()

	port, err := serial.Open(path)
	if err != nil {
		fmt.Println(err)
		return
	}
	// A loop at 1 kHz would keep the default deadline (0.8 ms); an
	// example on a busy machine waits longer.
	arm, err := driver.OpenArm(port, driver.ArmOptions{Path: path, ReplyTimeout: 2 * time.Second})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer arm.Close()

	var st hw.State
	cmd := hw.Command{Mode: hw.ModeForce, ForceN: hw.Vec3{Z: 1}}
	if err := arm.Exchange(&cmd, &st); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(arm.Info().Kind, arm.Info().ID, st.ForceN)
	// Output: arm BB8D {0 0 1}
}
