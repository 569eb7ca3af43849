//go:build !cgo || nohid

package hid

// Available reports whether this build can open HID devices: not this one.
func Available() bool { return false }

// Enumerate reports that HID support is compiled out.
func Enumerate() ([]DeviceInfo, error) { return nil, ErrUnavailable }

// Open reports that HID support is compiled out.
func Open(DeviceInfo) (Device, error) { return nil, ErrUnavailable }
