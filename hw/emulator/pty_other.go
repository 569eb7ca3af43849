//go:build !linux

package emulator

import (
	"errors"
	"fmt"
	"os"
)

// ptyPair exists off Linux only so that the portable API compiles; openPTY
// always fails there.
type ptyPair struct {
	master *os.File
	path   string
}

// openPTY fails: the emulator's pseudo-terminals are Linux's /dev/ptmx.
// Elsewhere emulators serve an io.ReadWriter through Serve.
func openPTY() (*ptyPair, error) {
	return nil, fmt.Errorf("hw/emulator: pseudo-terminal emulation needs Linux: %w", errors.ErrUnsupported)
}

func (p *ptyPair) close() error { return p.master.Close() }
