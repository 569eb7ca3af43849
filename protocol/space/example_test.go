package space_test

import (
	"fmt"

	"github.com/hapticd/hapticd/protocol/space"
)

// A client with Y up asks for basis "XZY" and a workspace twice the size
// of the device's. Positions scale; forces do not.
func Example() {
	basis, err := space.ParsePermutation("+XZY")
	if err != nil {
		fmt.Println(err)
		return
	}
	mount := space.IdentityTransform()
	mount.Scale = space.Vec3{X: 2, Y: 2, Z: 2}
	view := space.NewView(basis, mount)

	fmt.Println(basis)
	fmt.Println(view.PositionToApp(space.Vec3{X: 0.01, Y: 0.02, Z: 0.03}))
	fmt.Println(view.ForceToDevice(space.Vec3{Y: 1.5}))
	// Output:
	// XZY
	// {0.02 0.06 0.04}
	// {0 0 1.5}
}
