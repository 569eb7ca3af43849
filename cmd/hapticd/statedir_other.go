//go:build !windows && !darwin

package main

import (
	"os"
	"path/filepath"
)

// defaultStateDir follows the XDG base directory rules.
func defaultStateDir() string {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "hapticd")
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".local", "state", "hapticd")
	}
	return "hapticd-state"
}
