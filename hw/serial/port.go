package serial

import (
	"errors"
	"fmt"
	"time"

	bugst "go.bug.st/serial"
)

// Port is an open serial port.
type Port interface {
	// Read reads at least one byte into p, or returns 0, nil when the read
	// timeout passes first. An unplugged device gives an error.
	Read(p []byte) (int, error)
	// Write writes p; it does not wait for the device.
	Write(p []byte) (int, error)
	// SetReadTimeout bounds every following Read; a negative d waits for
	// ever.
	SetReadTimeout(d time.Duration) error
	// ResetInputBuffer drops bytes received but not yet read.
	ResetInputBuffer() error
	// Close releases the port and ends a blocked Read.
	Close() error
}

// BaudRate is the line rate Open sets. USB CDC-ACM ignores it.
const BaudRate = 115200

// Open opens the serial port at path as 115200 8N1, raw, without flow
// control. Errors say how to fix common causes (permissions, a busy port).
func Open(path string) (Port, error) {
	p, err := bugst.Open(path, &bugst.Mode{
		BaudRate: BaudRate,
		DataBits: 8,
		Parity:   bugst.NoParity,
		StopBits: bugst.OneStopBit,
	})
	if err != nil {
		return nil, fmt.Errorf("hw/serial: open %s: %w", path, explain(err))
	}
	return openPort{p}, nil
}

// openPort is a port Open opened: its reads and writes say when the
// device is gone (ErrDisconnected).
type openPort struct{ bugst.Port }

func (p openPort) Read(b []byte) (int, error) {
	n, err := p.Port.Read(b)
	return n, disconnected(err)
}

func (p openPort) Write(b []byte) (int, error) {
	n, err := p.Port.Write(b)
	return n, disconnected(err)
}

// ErrDisconnected is wrapped by a Read or Write error of a port whose
// device is gone (unplugged, its USB link reset): no retry on this port
// can succeed; the device must be opened again once it is back.
var ErrDisconnected = errors.New("the device is disconnected; plug it in again")

// disconnected wraps ErrDisconnected around an error of a port whose
// device went away: go.bug.st/serial reports an unplugged tty as a closed
// port (it reads zero bytes from it), or the tty's own errno.
func disconnected(err error) error {
	if err == nil {
		return nil
	}
	var pe *bugst.PortError
	if errors.As(err, &pe) && pe.Code() == bugst.PortClosed {
		return fmt.Errorf("%w (%w)", ErrDisconnected, err)
	}
	for _, e := range goneErrnos {
		if errors.Is(err, e) {
			return fmt.Errorf("%w (%w)", ErrDisconnected, err)
		}
	}
	return err
}

// Errors a caller may test with errors.Is to decide how to report a port.
var (
	ErrPermission = errors.New("permission denied; install packaging/udev/70-hapticd.rules and run the service in the dialout group, then replug the device")
	ErrBusy       = errors.New("port is busy; another program holds it (stop ModemManager or the vendor tool)")
	ErrNotFound   = errors.New("no such port; the device was unplugged or the path is wrong")
)

func explain(err error) error {
	var pe *bugst.PortError
	if errors.As(err, &pe) {
		switch pe.Code() {
		case bugst.PermissionDenied:
			return fmt.Errorf("%w (%w)", ErrPermission, err)
		case bugst.PortBusy:
			return fmt.Errorf("%w (%w)", ErrBusy, err)
		case bugst.PortNotFound:
			return fmt.Errorf("%w (%w)", ErrNotFound, err)
		}
	}
	if errors.Is(err, errNoEnt) {
		return fmt.Errorf("%w (%w)", ErrNotFound, err)
	}
	if errors.Is(err, errAccess) {
		return fmt.Errorf("%w (%w)", ErrPermission, err)
	}
	return err
}
