package emulator

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// ptyPair is an open pseudo-terminal: the master the emulator serves and
// the slave a driver opens by path.
type ptyPair struct {
	master *os.File
	slave  int // held open so the line settings persist and the master never reads EIO between driver opens
	path   string
}

func openPTY() (*ptyPair, error) {
	m, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("hw/emulator: open /dev/ptmx: %w; the emulator needs pseudo-terminals (mount devpts)", err)
	}
	fail := func(what string, err error) (*ptyPair, error) {
		unix.Close(m)
		return nil, fmt.Errorf("hw/emulator: %s: %w", what, err)
	}
	if err := unix.IoctlSetPointerInt(m, unix.TIOCSPTLCK, 0); err != nil {
		return fail("unlock pseudo-terminal", err)
	}
	n, err := unix.IoctlGetInt(m, unix.TIOCGPTN)
	if err != nil {
		return fail("name pseudo-terminal", err)
	}
	path := fmt.Sprintf("/dev/pts/%d", n)
	s, err := unix.Open(path, unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fail("open "+path, err)
	}
	if err := makeRaw(s); err != nil {
		unix.Close(s)
		return fail("set "+path+" raw", err)
	}
	// Non-blocking so that os.File uses the poller and Close ends a
	// blocked Read.
	if err := unix.SetNonblock(m, true); err != nil {
		unix.Close(s)
		return fail("set master non-blocking", err)
	}
	return &ptyPair{master: os.NewFile(uintptr(m), "/dev/ptmx"), slave: s, path: path}, nil
}

// makeRaw is cfmakeraw: bytes pass unchanged, no echo, no line editing.
func makeRaw(fd int) error {
	t, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return err
	}
	t.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON
	t.Oflag &^= unix.OPOST
	t.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
	t.Cflag &^= unix.CSIZE | unix.PARENB
	t.Cflag |= unix.CS8
	t.Cc[unix.VMIN] = 1
	t.Cc[unix.VTIME] = 0
	return unix.IoctlSetTermios(fd, unix.TCSETS, t)
}

func (p *ptyPair) close() error {
	err := p.master.Close()
	if p.slave >= 0 {
		err = errors.Join(err, unix.Close(p.slave))
		p.slave = -1
	}
	return err
}
