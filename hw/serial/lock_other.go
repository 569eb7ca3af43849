//go:build !(linux || darwin || freebsd || openbsd)

package serial

// portLock locks nothing: a Windows port opens without sharing, so a
// second opener fails (busy) while the port is open, but not between a
// close and the next open; other platforms rely on go.bug.st/serial's own
// exclusive mode.
type portLock struct{}

func lockPort(string) (portLock, error) { return portLock{}, nil }

func (portLock) release() error { return nil }

func (portLock) hungUp() bool { return false }
