package zwidth_test

import (
	"fmt"

	"github.com/hapticd/hapticd/actors/loop/zwidth"
)

// The stiffest stable wall of a 60 Hz client streaming forces, against the
// same wall rendered by the loop at 1 kHz.
func Example() {
	c := zwidth.DefaultConfig()
	client, err := zwidth.Limit(c, zwidth.Row{Path: zwidth.PathClient, RateHz: 60, LoopHz: 1000, DelayS: 1.0 / 60})
	if err != nil {
		fmt.Println(err)
		return
	}
	loop, err := zwidth.Limit(c, zwidth.Row{Path: zwidth.PathEffect, RateHz: 1000, LoopHz: 1000})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("client at 60 Hz: %.0f N/m\n", client.LimitNpm)
	fmt.Printf("loop at 1 kHz: %.0f N/m, %.0f times stiffer\n", loop.LimitNpm, loop.LimitNpm/client.LimitNpm)
	// Output:
	// client at 60 Hz: 72 N/m
	// loop at 1 kHz: 24652 N/m, 340 times stiffer
}
