//go:build cgo && !nohid

package hid

import (
	"errors"
	"runtime"
	"testing"
	"time"

	karalabe "github.com/karalabe/hid"
)

// hidapiStandIn is a karalabe.Device whose reads and writes fail as
// hidapi's do; reads pop queued reports first, as hidapi's queue does.
type hidapiStandIn struct {
	karalabe.Device // methods the adapter does not call
	writeErr        error
	readErr         error // once the queue is empty
	queued          int
}

func (s *hidapiStandIn) Write(b []byte) (int, error) {
	if s.writeErr != nil {
		return 0, s.writeErr
	}
	return len(b), nil
}

func (s *hidapiStandIn) ReadTimeout(b []byte, _ int) (int, error) {
	if s.queued > 0 {
		s.queued--
		return len(b), nil
	}
	if s.readErr != nil {
		return 0, s.readErr
	}
	return 0, nil
}

// TestBackendMapsAStalledWrite: a board whose firmware hung with its USB
// link up takes no report; hidapi gives up on such a write after 1 s
// (libusb's interrupt transfer, Windows' wait) with a message that says
// nothing. A write that failed after that long wraps ErrWriteStalled, so
// the driver reports hw.ErrGone instead of holding its loop for seconds on
// every tick of the 50 failed exchanges it takes to fail a board.
func TestBackendMapsAStalledWrite(t *testing.T) {
	libusbErr := errors.New("hidapi: hid_error is not implemented yet")
	tests := []struct {
		name      string
		took      time.Duration
		wantStall bool
	}{
		{"a write that timed out", time.Second, true},
		{"a write that failed at once", 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			dev := &hidapiStandIn{writeErr: libusbErr}
			k := &karalabeDevice{dev: dev, now: func() time.Time {
				now := clock
				clock = clock.Add(tc.took) // each Write spans one step
				return now
			}}
			err := k.Write(&Report{})
			if stalled := errors.Is(err, ErrWriteStalled); stalled != tc.wantStall {
				t.Errorf("error %v: wraps ErrWriteStalled = %v, want %v", err, stalled, tc.wantStall)
			}
		})
	}
}

// TestBackendMapsUnplugToDisconnected: the errors hidapi gives for a pulled
// board wrap ErrDisconnected, so the driver reports hw.ErrGone; errors of a
// board still there, and our own close, do not. hidapi's libusb backend
// (Linux) says nothing useful on a failed write, so the adapter asks the
// read side, which fails once hidapi's input thread has stopped.
func TestBackendMapsUnplugToDisconnected(t *testing.T) {
	libusbErr := errors.New("hidapi: hid_error is not implemented yet")
	windowsErr := errors.New("hidapi: WriteFile: (0x0000048F) The device is not connected.")
	tests := []struct {
		name     string
		dev      hidapiStandIn
		write    bool // else read
		wantGone bool
		onlyOS   string // "" for every platform; "!windows" for hidapi's libusb and macOS backends
	}{
		{"libusb read after unplug", hidapiStandIn{readErr: libusbErr}, false, true, "!windows"},
		{"macOS read after unplug", hidapiStandIn{readErr: errors.New("hidapi: hid_read_timeout: device disconnected")}, false, true, ""},
		{"Windows read after unplug", hidapiStandIn{readErr: errors.New("hidapi: hid_read_timeout/GetOverlappedResult: (0x0000048F) The device is not connected.")}, false, true, ""},
		{"read after our own close", hidapiStandIn{readErr: karalabe.ErrDeviceClosed}, false, false, ""},
		{"libusb write after unplug, reports still queued", hidapiStandIn{writeErr: libusbErr, readErr: libusbErr, queued: 30}, true, true, "!windows"},
		{"libusb write failing on a board still there", hidapiStandIn{writeErr: libusbErr, queued: 2}, true, false, ""},
		{"Windows write after unplug", hidapiStandIn{writeErr: windowsErr}, true, true, ""},
		{"write after our own close", hidapiStandIn{writeErr: karalabe.ErrDeviceClosed, readErr: libusbErr}, true, false, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.onlyOS == "!windows" && runtime.GOOS == "windows" {
				t.Skip("hidapi's Windows backend says why in its message")
			}
			k := &karalabeDevice{dev: &tc.dev}
			var err error
			if tc.write {
				err = k.Write(&Report{})
			} else {
				_, err = k.Read(&Report{}, 0)
			}
			if err == nil {
				t.Fatal("no error")
			}
			if gone := errors.Is(err, ErrDisconnected); gone != tc.wantGone {
				t.Errorf("error %v: wraps ErrDisconnected = %v, want %v", err, gone, tc.wantGone)
			}
		})
	}
}
