package main

import (
	"os"
	"path/filepath"
)

// defaultStateDir is ~/Library/Application Support/hapticd, where macOS
// applications keep the data they create.
func defaultStateDir() string {
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, "Library", "Application Support", "hapticd")
	}
	return "hapticd-state"
}
