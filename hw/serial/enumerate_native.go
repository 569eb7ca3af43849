//go:build !darwin || cgo

package serial

import "go.bug.st/serial/enumerator"

// USBIdentity tells whether Enumerate reads each port's USB id and product
// string in this build.
const USBIdentity = true

func listPorts() ([]PortInfo, error) {
	list, err := enumerator.GetDetailedPortsList()
	if err != nil {
		return nil, err
	}
	out := make([]PortInfo, 0, len(list))
	for _, d := range list {
		pi := PortInfo{Path: d.Name, IsUSB: d.IsUSB, SerialNumber: d.SerialNumber, Product: d.Product}
		if d.IsUSB {
			pi.VID = parseHex16(d.VID)
			pi.PID = parseHex16(d.PID)
		}
		out = append(out, pi)
	}
	return out, nil
}
