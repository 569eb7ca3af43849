//go:build !windows

package main

import (
	"io"
	"strings"
	"testing"
)

// Off Windows, "hapticd service" fails and points at the OS's own service
// manager files instead of pretending to install anything.
func TestServiceIsWindowsOnly(t *testing.T) {
	for _, action := range []string{"install", "start", "stop", "uninstall"} {
		err := runService([]string{action}, io.Discard)
		if err == nil {
			t.Fatalf("service %s succeeded off Windows", action)
		}
		for _, want := range []string{"only on Windows", "packaging/systemd/hapticd.service", "packaging/launchd/"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("service %s: %q does not mention %q", action, err, want)
			}
		}
	}
}
