package serial_test

import (
	"fmt"

	"github.com/hapticd/hapticd/hw/serial"
)

// A replayed device answers only what was recorded, and Close says whether
// the host did all of it.
func ExampleReplay() {
	p := serial.Replay([]serial.Record{
		{Dir: serial.HostToDevice, Bytes: []byte{0x0A}},
		{Dir: serial.DeviceToHost, Bytes: []byte{0x0A, 0x9D, 0x04}},
	})
	p.Write([]byte{0x0A})
	var b [8]byte
	n, _ := p.Read(b[:])
	fmt.Printf("% x\n", b[:n])
	fmt.Println(p.Close())
	// Output:
	// 0a 9d 04
	// <nil>
}
