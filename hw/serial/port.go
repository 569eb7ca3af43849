package serial

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	bugst "go.bug.st/serial"
)

// Port is an open serial port.
type Port interface {
	// Read reads at least one byte into p, or returns 0, nil when the read
	// timeout passes first. An unplugged device gives an error.
	Read(p []byte) (int, error)
	// Write writes p; it does not wait for the device to read it, only,
	// when the output buffer is full, for room (a port Open opened waits
	// at most WriteTimeout, then drops the output still queued and fails
	// with ErrWriteStalled).
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
// The port is held (see Claim) until it is closed.
func Open(path string) (Port, error) {
	c, err := ClaimPort(path)
	if err != nil {
		return nil, err
	}
	p, err := c.Open()
	// A port that opened keeps the lock until it is closed; a failed open
	// lets it go here (closing a read-only descriptor has nothing to
	// report).
	_ = c.Release()
	return p, err
}

// openUnder opens the port at path, which the caller has locked; closed
// is called once, after the port is closed.
func openUnder(path string, closed func() error) (Port, error) {
	p, err := bugst.Open(path, &bugst.Mode{
		BaudRate: BaudRate,
		DataBits: 8,
		Parity:   bugst.NoParity,
		StopBits: bugst.OneStopBit,
	})
	if err != nil {
		return nil, fmt.Errorf("hw/serial: open %s: %w", path, explain(err))
	}
	op := &openPort{Port: p, fd: -1, closed: closed}
	// go.bug.st/serial writes with a blocking write(2) and has no write
	// timeout: the descriptor is made non-blocking so that Write can wait
	// for room with a deadline. On Windows the port's own write timeout
	// bounds each write instead. Where neither is possible the port keeps
	// blocking writes.
	if fd, ok := portFD(p); ok && setNonblock(fd) == nil {
		op.fd = fd
	} else if h, ok := portHandle(p); ok && setWriteTimeout(h) == nil {
		op.handle = h
	}
	return op, nil
}

// openPort is a port Open opened: its reads and writes say when the
// device is gone (ErrDisconnected), and its writes wait for room in the
// output buffer no longer than WriteTimeout (when fd or handle is known).
type openPort struct {
	bugst.Port
	fd int // the port's descriptor, non-blocking; -1 when unknown
	// handle is the Windows port's handle when its writes time out after
	// WriteTimeout (see setWriteTimeout); 0 when they do not.
	handle uintptr
	// stalled is set once a write stalled: the device may still hold
	// output back, which Close must drop. Atomic because Close may come
	// from another goroutine than the writer's.
	stalled atomic.Bool
	// closed tells the port's Claim, after the port itself is closed,
	// that the port no longer needs its lock.
	closed     func() error
	closedOnce sync.Once
}

func (p *openPort) Read(b []byte) (int, error) {
	n, err := p.Port.Read(b)
	if err != nil && errors.Is(err, errWouldBlock) {
		// The descriptor is non-blocking: a readiness that went away
		// before the read is a read that found nothing.
		return 0, nil
	}
	return n, disconnected(err)
}

// Write writes all of b. On a non-blocking descriptor it waits for room
// when the output buffer is full, until WriteTimeout has passed since the
// last byte went in; then it drops the output still queued (see
// stallWrite) and returns what it wrote and ErrWriteStalled.
func (p *openPort) Write(b []byte) (int, error) {
	if p.fd < 0 && p.handle == 0 {
		n, err := p.Port.Write(b)
		return n, disconnected(err)
	}
	written := 0
	// One deadline from the last byte that went in, not a fresh wait per
	// try: a poll that says "ready" while the write still would block (a
	// device file poll does not support) must not spin for ever.
	deadline := time.Now().Add(WriteTimeout)
	for {
		n, err := p.Port.Write(b[written:])
		written += max(n, 0)
		if err != nil && !errors.Is(err, errWouldBlock) && !writeTimedOut(err) {
			return written, disconnected(err)
		}
		if written >= len(b) {
			return written, nil
		}
		if n > 0 {
			deadline = time.Now().Add(WriteTimeout)
			continue // room was made: go on at once
		}
		if p.handle != 0 {
			// The write itself waited WriteTimeout and took nothing.
			return written, p.stallWrite(written, len(b))
		}
		room, err := waitWritable(p.fd, time.Until(deadline))
		if err != nil {
			return written, disconnected(err)
		}
		if !room {
			return written, p.stallWrite(written, len(b))
		}
	}
}

// SetReadTimeout sets the read timeout and, on a port whose writes time
// out, sets their timeout again: go.bug.st/serial sets all of a Windows
// port's timeouts at once, with writes that wait for ever.
func (p *openPort) SetReadTimeout(d time.Duration) error {
	if err := p.Port.SetReadTimeout(d); err != nil {
		return err
	}
	if p.handle != 0 {
		if err := setWriteTimeout(p.handle); err != nil {
			return fmt.Errorf("hw/serial: set the write timeout: %w", disconnected(err))
		}
	}
	return nil
}

// stallWrite drops the output queued in the port and returns the stall's
// error. The queue holds commands written before the stall (forces are
// sticky in firmware): a device that takes data again must not receive
// them, the zero force a driver sends after the failure must find room,
// and on a USB serial port close(2) would wait for the queue to drain
// (Linux's closing wait, 30 s by default) and hang the caller's Close.
func (p *openPort) stallWrite(written, want int) error {
	p.stalled.Store(true)
	err := fmt.Errorf("hw/serial: write: %d of %d bytes written in %v: %w", written, want, WriteTimeout, ErrWriteStalled)
	if ferr := p.Port.ResetOutputBuffer(); ferr != nil {
		return fmt.Errorf("%w; dropping the queued output failed too: %w", err, ferr)
	}
	return err
}

// Close drops the queued output first when a write stalled: the device
// takes no data, so close(2) would wait for it to drain (see stallWrite).
// The drop is best effort: a port already closed or unplugged has nothing
// to wait for.
func (p *openPort) Close() error {
	if p.stalled.Load() {
		_ = p.Port.ResetOutputBuffer()
	}
	err := p.Port.Close()
	// Once: a second Close must not close a descriptor number reused since.
	p.closedOnce.Do(func() { err = errors.Join(err, p.closed()) })
	return err
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

// WriteTimeout bounds how long a Write of a port Open opened waits for room
// in the port's output buffer. A device that reads at all drains it at
// USB speed; one that takes nothing for this long is hung, and waiting
// longer would hold a loop's tick or a scan with it.
const WriteTimeout = 100 * time.Millisecond

// ErrWriteStalled is wrapped by a Write error when the port's output
// buffer stayed full for WriteTimeout: the device takes no data.
var ErrWriteStalled = errors.New("the device takes no data (the port's output buffer stayed full); power-cycle or replug it")

// Errors a caller may test with errors.Is to decide how to report a port.
var (
	ErrPermission = errors.New("permission denied; install packaging/udev/70-hapticd.rules and run the service in the dialout group, then replug the device")
	ErrBusy       = errors.New("port is busy; another program holds it (another hapticd, ModemManager or the vendor tool: stop it)")
	ErrNotFound   = errors.New("no such port; the device was unplugged or the path is wrong")
	ErrNotSerial  = errors.New("not a serial port (the path is no terminal device); the path is wrong")
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
		case bugst.InvalidSerialPort:
			return fmt.Errorf("%w (%w)", ErrNotSerial, err)
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
