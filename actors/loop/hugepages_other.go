//go:build !linux

package loop

import "unsafe"

// adviseHugePages does nothing here: huge pages for the loop's memory are
// asked for on Linux only.
func adviseHugePages(unsafe.Pointer, uintptr) {}
