package actors

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

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

// family is the product family a device reports (config.type,
// device_info.device_type): an arm's by the device type number its driver
// reports (hw.Info.Model; an unknown one answers as an Inverse3, which is
// what clients check), a grip's by its link.
func family(dt protocol.DeviceType, info hw.Info) protocol.Family {
	return protocol.FamilyOf(dt, link(info), int(info.Model))
}

// firmwareDigest is an arm's config.extended_firmware_version: 32 uppercase
// hex digits, as the vendor's inventories show. The provisional wire
// carries only a firmware version byte, so hapticd derives the digest from
// the family and the version numbers: equal firmware gives equal digests.
// Grips report none ("").
func firmwareDigest(info hw.Info, fam protocol.Family) string {
	if info.Kind != hw.KindArm {
		return ""
	}
	sum := sha256.Sum256(fmt.Appendf(nil, "hapticd/firmware/%s/%d.%d", fam.Name, info.FirmwareVersion, info.HardwareVersion))
	return strings.ToUpper(hex.EncodeToString(sum[:16]))
}

// Link is how the device reaches the host, as the naming table tells
// devices apart (protocol.LinkAny for arms).
func (d *Device) Link() protocol.Link { return link(d.Info) }
