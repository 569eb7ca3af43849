package serial

import (
	"errors"
	"fmt"
	"sync"
)

// Claim holds a serial port for one owner across any number of opens and
// closes: while the claim, or a port opened under it, is held, every other
// Open or ClaimPort of the port fails with ErrBusy, in this process or
// another (on Unix an exclusive flock on the port, which binds root too;
// on Windows a named mutex, Global\hapticd-port-COMn, which only other
// hapticd processes look at). A service that
// reopens a device after a failure holds its claim in between, so no
// other service takes the device at that moment.
//
// The lock is dropped when the claim is released and every port opened
// under it is closed, whichever comes last. A Claim may be used from
// several goroutines.
type Claim struct {
	path string

	mu       sync.Mutex // guards the following
	lock     portLock
	locked   bool // lock is held
	released bool // Release was called
	open     int  // ports opened under the claim and not closed
}

// ErrReleased is wrapped by Claim.Open's error after Release.
var ErrReleased = errors.New("the claim on the port was released")

// ClaimPort takes the port at path for the caller without opening it for
// I/O. Errors wrap ErrBusy when another holds it, and ErrPermission or
// ErrNotFound as Open's do.
func ClaimPort(path string) (*Claim, error) {
	lock, err := lockPort(path)
	if err != nil {
		return nil, fmt.Errorf("hw/serial: open %s: %w", path, explain(err))
	}
	return &Claim{path: path, lock: lock, locked: true}, nil
}

// Path is the path the claim was taken on.
func (c *Claim) Path() string { return c.path }

// Open opens the claimed port as Open does. Closing the port leaves the
// claim held.
func (c *Claim) Open() (Port, error) {
	c.mu.Lock()
	if c.released {
		c.mu.Unlock()
		return nil, fmt.Errorf("hw/serial: open %s: %w", c.path, ErrReleased)
	}
	c.open++
	c.mu.Unlock()
	p, err := openUnder(c.path, c.portClosed)
	if err != nil {
		_ = c.portClosed()
		return nil, err
	}
	return p, nil
}

// Gone reports whether the device behind the claim went away: the port
// hung up under it (unplugged). A device plugged in again is a new node,
// which this claim does not hold: release it and claim the path anew.
func (c *Claim) Gone() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.locked && c.lock.hungUp()
}

// Release gives the claim up; the lock goes once the ports opened under it
// are closed too. A second Release does nothing.
func (c *Claim) Release() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.released = true
	return c.unlockIfUnusedLocked()
}

// portClosed is called once per port opened under the claim, when it
// closes.
func (c *Claim) portClosed() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.open--
	return c.unlockIfUnusedLocked()
}

func (c *Claim) unlockIfUnusedLocked() error {
	if !c.locked || !c.released || c.open > 0 {
		return nil
	}
	c.locked = false
	if err := c.lock.release(); err != nil {
		return fmt.Errorf("hw/serial: release %s: %w", c.path, err)
	}
	return nil
}
