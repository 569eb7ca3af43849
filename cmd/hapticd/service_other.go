//go:build !windows

package main

import (
	"errors"
	"fmt"
	"io"
)

// errServiceWindowsOnly explains that services are the OS's business here.
var errServiceWindowsOnly = errors.New(`service: "hapticd service" registers a Windows service and exists only on Windows; ` +
	"on Linux install packaging/systemd/hapticd.service (the .deb and .rpm packages do), " +
	"on macOS load packaging/launchd/org.hapticd.hapticd.plist with launchctl")

// runService prints its usage for -h (every subcommand has one) and
// otherwise explains that it exists only on Windows.
func runService(args []string, out io.Writer) error {
	if len(args) == 1 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help") {
		fmt.Fprint(out, serviceUsage)
		fmt.Fprintf(out, "\n%v\n", errServiceWindowsOnly)
		return nil
	}
	return errServiceWindowsOnly
}
