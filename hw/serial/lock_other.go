//go:build !(linux || darwin || freebsd || openbsd)

package serial

// lockPort locks nothing: a Windows port opens without sharing, so a
// second opener already fails (busy); other platforms rely on
// go.bug.st/serial's own exclusive mode.
func lockPort(string) (release func() error, err error) { return func() error { return nil }, nil }
