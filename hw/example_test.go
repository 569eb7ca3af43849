package hw_test

import (
	"fmt"

	"github.com/hapticd/hapticd/hw"
)

func ExampleFormatUUID() {
	u := [16]byte{0x98, 0x6f, 0x62, 0xc1, 0x1e, 0x80, 0x5b, 0xd4, 0xa1, 0xf5, 0xf1, 0x5b, 0x3f, 0xb7, 0x34, 0x80}
	fmt.Println(hw.FormatUUID(u))
	// Output: 986F62C11E805BD4A1F5F15B3FB73480
}

func ExampleParseLegacyUUID() {
	u, ok := hw.ParseLegacyUUID("986f62c1-1e80-5bd4-a1f5-f15b3fb73480")
	fmt.Println(hw.FormatUUID(u), ok)
	// Output: 986F62C11E805BD4A1F5F15B3FB73480 true
}

func ExampleControlMode_String() {
	fmt.Println(hw.ModeForce, hw.KindArm)
	// Output: force arm
}
