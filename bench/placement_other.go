//go:build !linux

package bench

import (
	"errors"
	"os/exec"
)

var errNoPlacement = errors.New("CPU placement is implemented on Linux only")

func allowedCPUs() ([]int, error) { return nil, errNoPlacement }

func startPinned(*exec.Cmd, []int) error { return errNoPlacement }

func pinSelf([]int) (func(), error) { return nil, errNoPlacement }
