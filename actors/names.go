package actors

import (
	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/protocol"
)

// link is how a device reaches the host, as the naming table tells grips
// apart. hw keeps its own Link so that it imports no protocol.
func link(info hw.Info) protocol.Link {
	switch info.Link {
	case hw.LinkWireless:
		return protocol.LinkWireless
	case hw.LinkWired:
		return protocol.LinkWired
	}
	return protocol.LinkAny
}

// inverse3Model is the vendor's device type number for an Inverse3
// (config.device_info.device_type).
const inverse3Model = 4

// deviceModel is the device type number a frame reports: every arm this
// service drives answers as an Inverse3, which is what clients check;
// grips report none.
func deviceModel(info hw.Info) int {
	if info.Kind == hw.KindArm {
		return inverse3Model
	}
	return 0
}

// Link is how the device reaches the host, as the naming table tells
// devices apart (protocol.LinkAny for arms).
func (d *Device) Link() protocol.Link { return link(d.Info) }
