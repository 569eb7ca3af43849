package main

import (
	"path/filepath"
	"runtime"
	"testing"
)

// The state directory defaults to where each OS keeps an application's own
// data, so a first run needs no flag.
func TestDefaultStateDirPerOS(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("USERPROFILE", home)
	t.Setenv("XDG_STATE_HOME", filepath.Join(home, "xdg-state"))
	t.Setenv("LOCALAPPDATA", filepath.Join(home, "local-app-data"))
	var want string
	switch runtime.GOOS {
	case "windows":
		want = filepath.Join(home, "local-app-data", "hapticd")
	case "darwin":
		want = filepath.Join(home, "Library", "Application Support", "hapticd")
	default:
		want = filepath.Join(home, "xdg-state", "hapticd")
	}
	if got := defaultStateDir(); got != want {
		t.Errorf("defaultStateDir() = %q, want %q", got, want)
	}
}
