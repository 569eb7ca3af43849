//go:build !(linux || darwin || freebsd || openbsd || windows)

package serial

// portLock locks nothing: these platforms rely on go.bug.st/serial's own
// exclusive mode, which holds a port only while it is open.
type portLock struct{}

func lockPort(string) (portLock, error) { return portLock{}, nil }

func (portLock) release() error { return nil }

func (portLock) hungUp() bool { return false }
