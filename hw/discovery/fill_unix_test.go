//go:build unix

package discovery_test

import (
	"errors"
	"testing"

	"golang.org/x/sys/unix"
)

// fillOutput writes to the port at path until its output buffer is full
// (nobody reads the other side), and closes it: the bytes stay queued. It
// writes without blocking, so it fills the port whatever hw/serial does.
func fillOutput(t *testing.T, path string) {
	t.Helper()
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_NOCTTY|unix.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	chunk := make([]byte, 4096)
	for range 1024 { // a pseudo-terminal holds some KiB
		_, err := unix.Write(fd, chunk)
		if err == nil {
			continue
		}
		if !errors.Is(err, unix.EAGAIN) {
			t.Fatalf("filling %s: %v", path, err)
		}
		// The kernel moves queued bytes on to the other side's buffer
		// in the background, which makes room again for a while: full
		// is when no room comes within half a second.
		n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}, 500)
		if err != nil && !errors.Is(err, unix.EINTR) {
			t.Fatalf("filling %s: poll: %v", path, err)
		}
		if n == 0 && err == nil {
			return
		}
	}
	t.Fatalf("%s took 4 MiB without filling up", path)
}
