//go:build !windows

package main

import (
	"errors"
	"io"
)

// runService explains that services are the OS's business here.
func runService([]string, io.Writer) error {
	return errors.New(`service: "hapticd service" registers a Windows service and exists only on Windows; ` +
		"on Linux install packaging/systemd/hapticd.service (the .deb and .rpm packages do), " +
		"on macOS load packaging/launchd/org.hapticd.hapticd.plist with launchctl")
}
