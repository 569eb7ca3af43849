package serial

import (
	"errors"
	"reflect"
	"time"

	bugst "go.bug.st/serial"
	"golang.org/x/sys/windows"
)

// errWouldBlock never matches: a Windows port's writes wait in WriteFile,
// bounded by the port's write timeout (setWriteTimeout).
var errWouldBlock = errors.New("hw/serial: would block")

// portFD reports that Windows ports have no descriptor to poll.
func portFD(bugst.Port) (int, bool) { return -1, false }

func setNonblock(int) error { return errors.ErrUnsupported }

func waitWritable(int, time.Duration) (bool, error) { return true, nil }

// portHandle returns the handle of a port go.bug.st/serial opened, which
// it does not export: the pinned version keeps it in its windowsPort's
// handle field, as portFD reads unixPort's on Unix
// (TestWindowsWriteToAPortNobodyReadsStalls fails under Wine if that
// changes).
func portHandle(p bugst.Port) (uintptr, bool) {
	v := reflect.ValueOf(p)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return 0, false
	}
	h := v.Elem().FieldByName("handle")
	if !h.IsValid() || h.Kind() != reflect.Uintptr || h.Uint() == 0 {
		return 0, false
	}
	return uintptr(h.Uint()), true
}

// setWriteTimeout makes every write on the port give up after
// WriteTimeout: WriteFile then completes with what went in (fewer bytes,
// or a timeout error from some drivers). The read timeouts are kept.
func setWriteTimeout(h uintptr) error {
	var t windows.CommTimeouts
	if err := windows.GetCommTimeouts(windows.Handle(h), &t); err != nil {
		return err
	}
	t.WriteTotalTimeoutMultiplier = 0
	t.WriteTotalTimeoutConstant = uint32(WriteTimeout / time.Millisecond)
	return windows.SetCommTimeouts(windows.Handle(h), &t)
}

// writeTimedOut reports whether a write failed only because its timeout
// passed: serial.sys completes it with fewer bytes, some USB serial
// drivers with one of these errors.
func writeTimedOut(err error) bool {
	return errors.Is(err, windows.ERROR_SEM_TIMEOUT) || errors.Is(err, windows.ERROR_TIMEOUT)
}
