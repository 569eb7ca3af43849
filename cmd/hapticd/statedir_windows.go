package main

import (
	"os"
	"path/filepath"
)

// defaultStateDir is %LOCALAPPDATA%\hapticd: per user and not roamed to
// other machines (the configuration names this machine's devices). The
// Windows service is installed with --state-dir under %ProgramData%
// instead (see serviceRunArgs).
func defaultStateDir() string {
	if d := os.Getenv("LOCALAPPDATA"); d != "" {
		return filepath.Join(d, "hapticd")
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, "AppData", "Local", "hapticd")
	}
	return "hapticd-state"
}
