//go:build darwin && !cgo

package serial

// USBIdentity tells whether Enumerate reads each port's USB id and product
// string in this build: not this one. go.bug.st/serial reads them through
// IOKit, which needs cgo on macOS.
const USBIdentity = false

// usbModemPattern is where macOS puts USB CDC-ACM ports (the call-out side,
// which opens without waiting for carrier).
const usbModemPattern = "/dev/cu.usbmodem*"

func listPorts() ([]PortInfo, error) { return globPorts(usbModemPattern) }
