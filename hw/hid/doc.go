// Package hid drives DIY haptic boards (Teensy, STM32) that speak RawHID:
// usage page 0xFFAB, usage 0x0200, 64-byte reports. The report layout below
// is this project's own, open and small, so that anyone can write firmware
// for it.
//
// # Report layout (64 bytes, little-endian, unused bytes zero)
//
// Host → device (output report):
//
//	offset size  field
//	0      1     type: 0x01 force command, 0x02 info request
//	1      1     sequence number, echoed by the reply
//	2      12    force N, 3×float32 x, y, z (type 0x01 only)
//
// Device → host (input report):
//
//	offset size  field
//	0      1     type: 0x81 state (reply to 0x01), 0x82 info (reply to 0x02)
//	1      1     sequence number of the command answered
//	type 0x81:
//	2      12    position m, 3×float32
//	14     12    velocity m/s, 3×float32
//	26     1     buttons, bit 0 = A, bit 1 = B, bit 2 = C
//	27     1     status: bit 0 calibrated, bit 1 ready
//	type 0x82:
//	2      2     id, uint16
//	4      1     model
//	5      1     hardware version
//	6      1     firmware version
//	7      16    UUID
//
// Every command gets one reply. The sequence number lets the host drop a
// late reply to an earlier command instead of taking it for the current
// one. Like the serial arm, a force command is sticky: the firmware applies
// it until the next one, so the driver sends a zero force on Halt, on error
// and on Close.
//
// # Build
//
// The karalabe/hid backend needs cgo (it bundles hidapi and libusb). It is
// compiled in by default and left out with CGO_ENABLED=0 or -tags nohid;
// then Enumerate and Open report that HID is unavailable, and everything
// else (layout, driver, Fake) still works.
//
// # Concurrency
//
// A Driver is used by one goroutine at a time (its real-time loop).
package hid
