package serial

import (
	"fmt"
	"path/filepath"
)

// PortInfo is what the system tells about a serial port without opening it.
type PortInfo struct {
	Path         string
	IsUSB        bool
	VID, PID     uint16
	SerialNumber string
	Product      string
	// Unidentified is set when this build cannot read the port's USB
	// identity (macOS without cgo, see USBIdentity): the port may be a
	// device, but only --hw-port opens it.
	Unidentified bool
}

// Enumerate lists the serial ports of the system with their USB details (read
// from sysfs on Linux, SetupAPI on Windows, IOKit on macOS: no byte is sent
// to any port). A macOS build without cgo lists /dev/cu.usbmodem* without
// details (see USBIdentity).
func Enumerate() ([]PortInfo, error) {
	out, err := listPorts()
	if err != nil {
		return nil, fmt.Errorf("hw/serial: list serial ports: %w", err)
	}
	return out, nil
}

// globPorts lists the device nodes matching pattern as unidentified ports:
// the fallback where USB details cannot be read.
func globPorts(pattern string) ([]PortInfo, error) {
	paths, err := filepath.Glob(pattern)
	if err != nil {
		return nil, err
	}
	out := make([]PortInfo, 0, len(paths))
	for _, p := range paths {
		out = append(out, PortInfo{Path: p, Unidentified: true})
	}
	return out, nil
}

func parseHex16(s string) uint16 {
	var v uint16
	for _, c := range s {
		switch {
		case c >= '0' && c <= '9':
			v = v<<4 | uint16(c-'0')
		case c >= 'a' && c <= 'f':
			v = v<<4 | uint16(c-'a'+10)
		case c >= 'A' && c <= 'F':
			v = v<<4 | uint16(c-'A'+10)
		default:
			return 0
		}
	}
	return v
}
