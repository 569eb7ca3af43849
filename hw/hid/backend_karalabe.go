//go:build cgo && !nohid

package hid

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"time"

	karalabe "github.com/karalabe/hid"
)

// Available reports whether this build can open HID devices.
func Available() bool { return karalabe.Supported() }

// Enumerate lists the RawHID interfaces of this layout. It sends no report.
func Enumerate() ([]DeviceInfo, error) {
	all, err := karalabe.Enumerate(0, 0)
	if err != nil {
		return nil, fmt.Errorf("hw/hid: list HID devices: %w", err)
	}
	var out []DeviceInfo
	for _, in := range all {
		d := DeviceInfo{Path: in.Path, VID: in.VendorID, PID: in.ProductID, Serial: in.Serial,
			Product: in.Product, UsagePage: in.UsagePage, Usage: in.Usage, Interface: in.Interface}
		if d.matches() {
			out = append(out, d)
		}
	}
	return out, nil
}

// Open opens the RawHID interface d.
func Open(d DeviceInfo) (Device, error) {
	all, err := karalabe.Enumerate(d.VID, d.PID)
	if err != nil {
		return nil, fmt.Errorf("hw/hid: open %s: %w", d.Path, err)
	}
	for _, in := range all {
		if in.Path != d.Path {
			continue
		}
		dev, err := in.Open()
		if err != nil {
			return nil, fmt.Errorf("hw/hid: open %s: %w; if it is a permission error, install packaging/udev/70-hapticd.rules and replug", d.Path, err)
		}
		return &karalabeDevice{dev: dev}, nil
	}
	return nil, fmt.Errorf("hw/hid: open %s: no such device; it was unplugged, list devices again", d.Path)
}

// karalabeDevice adapts karalabe/hid to Device: one report per call, with
// the report-ID byte hidapi wants in front of output reports. Like the
// Driver that owns it, it is used by one goroutine at a time (hw.Driver's
// contract; the loop serialises Exchange, Halt and Close), so its buffers
// need no lock, and none is held across hidapi's I/O.
type karalabeDevice struct {
	dev  karalabe.Device
	out  [1 + ReportLen]byte
	in   [ReportLen]byte
	once sync.Once
	now  func() time.Time // the clock a write is timed by; nil is time.Now
}

func (k *karalabeDevice) Read(r *Report, timeout time.Duration) (bool, error) {
	// hidapi counts whole milliseconds. Round down, so a read never
	// outlasts the caller's deadline (the reply deadline is under the loop
	// period, often under 1 ms); below 1 ms this is 0, a read that does not
	// wait, and the driver polls until its deadline.
	ms := int(max(timeout, 0) / time.Millisecond)
	n, err := k.dev.ReadTimeout(k.in[:], ms)
	if err != nil {
		return false, readError(err)
	}
	if n == 0 {
		return false, nil
	}
	*r = Report{}
	copy(r[:], k.in[:n])
	return true, nil
}

func (k *karalabeDevice) Write(r *Report) error {
	b := k.out[:]
	if runtime.GOOS == "windows" {
		// karalabe/hid adds the report-ID byte itself on Windows.
		b = k.out[1:]
	}
	k.out[0] = 0 // unnumbered reports
	copy(k.out[1:], r[:])
	start := k.clock()
	n, err := k.dev.Write(b)
	if err != nil {
		return k.writeError(err, k.clock().Sub(start))
	}
	if n < ReportLen {
		return fmt.Errorf("hw/hid: short write of %d bytes", n)
	}
	return nil
}

// readError wraps ErrDisconnected around a read error of a board that is
// gone. hidapi's libusb (Linux) and macOS backends queue input reports
// from a thread of their own and fail a read only once that thread has
// stopped, which happens when the device goes away: such an error is final.
// On Windows a read fails with the system's message, "The device is not
// connected." for a pulled board.
func readError(err error) error {
	if errors.Is(err, karalabe.ErrDeviceClosed) {
		return err // closed by us, not pulled
	}
	if runtime.GOOS != "windows" || saysDisconnected(err) {
		return fmt.Errorf("%w (%w)", ErrDisconnected, err)
	}
	return err
}

// saysDisconnected reports whether a hidapi error's message says the device
// is gone (macOS: "Device is disconnected"; Windows: "The device is not
// connected.").
func saysDisconnected(err error) bool {
	msg := strings.ToLower(err.Error())
	return strings.Contains(msg, "disconnected") || strings.Contains(msg, "not connected")
}

// maxQueuedReports bounds writeError's look at the read side: hidapi
// queues at most 30 input reports and drops the oldest beyond that.
const maxQueuedReports = 32

func (k *karalabeDevice) clock() time.Time {
	if k.now != nil {
		return k.now()
	}
	return time.Now()
}

// writeStalledAfter tells a write that timed out from one that failed:
// hidapi gives up on a write the board does not take after 1 s (libusb's
// interrupt transfer, Windows' wait), while other failures are at once.
const writeStalledAfter = 500 * time.Millisecond

// writeError wraps ErrWriteStalled around a write error that came after
// hidapi's write timeout (the board takes no data), and ErrDisconnected
// around one of a board that is gone. hidapi's libusb backend (Linux) gives every write error the same
// message ("hid_error is not implemented yet"), so whether the board is
// gone is asked of the read side: reading without waiting fails once its
// thread has stopped, after the reports still queued. Those reports are
// dropped; the exchange that wrote has failed, and its replies would be
// stale.
func (k *karalabeDevice) writeError(err error, took time.Duration) error {
	if errors.Is(err, karalabe.ErrDeviceClosed) {
		return err
	}
	if took >= writeStalledAfter {
		return fmt.Errorf("%w (the write failed after %v: %w)", ErrWriteStalled, took.Round(time.Millisecond), err)
	}
	if saysDisconnected(err) {
		return fmt.Errorf("%w (%w)", ErrDisconnected, err)
	}
	if runtime.GOOS == "windows" {
		return err
	}
	for range maxQueuedReports {
		n, rerr := k.dev.ReadTimeout(k.in[:], 0)
		if rerr != nil {
			if errors.Is(readError(rerr), ErrDisconnected) {
				return fmt.Errorf("%w (%w)", ErrDisconnected, err)
			}
			break
		}
		if n == 0 {
			break
		}
	}
	return err
}

func (k *karalabeDevice) Close() error {
	var err error
	k.once.Do(func() { err = k.dev.Close() })
	return err
}
