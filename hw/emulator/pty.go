package emulator

import (
	"os"
	"sync"
)

// StartPTY opens a pseudo-terminal, serves the emulated device o on its
// master side from a new goroutine, and returns the slave path for a
// driver. Close (or Unplug) ends it.
func StartPTY(o Options) (*Emulator, string, error) {
	e, err := New(o)
	if err != nil {
		return nil, "", err
	}
	p, err := openPTY()
	if err != nil {
		return nil, "", err
	}
	var once sync.Once
	var closeErr error
	e.mu.Lock()
	e.closeFn = func() error {
		once.Do(func() { closeErr = p.close() })
		return closeErr
	}
	e.serving = true
	e.mu.Unlock()
	go func() {
		defer close(e.done)
		_ = e.Serve(p.master)
	}()
	return e, p.path, nil
}

// PTY is an open pseudo-terminal pair: Master is the device side, Path the
// serial port a driver opens.
type PTY struct {
	Master *os.File
	Path   string
	pair   *ptyPair
}

// OpenPTY opens a raw pseudo-terminal pair, for tests and benchmarks that
// play the device side themselves (an echo baseline, say).
func OpenPTY() (*PTY, error) {
	p, err := openPTY()
	if err != nil {
		return nil, err
	}
	return &PTY{Master: p.master, Path: p.path, pair: p}, nil
}

// Close closes both sides held here; a driver's open slave sees an unplug.
func (p *PTY) Close() error { return p.pair.close() }
