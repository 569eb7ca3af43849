package transport

import (
	"net/http"
	"time"

	"github.com/hapticd/hapticd/actors"
)

// HardwarePort is one port as the hardware scan last saw it: why an arm
// that is plugged in is missing from GET /devices (STYLE habit 8).
type HardwarePort struct {
	Path     string `json:"path"`
	Explicit bool   `json:"explicit"`         // named by --hw-port (or --emulate-arms)
	USBID    string `json:"usb_id,omitempty"` // "16c0:0483"; empty for an explicit port
	Product  string `json:"product,omitempty"`
	Serial   string `json:"serial,omitempty"`
	// Kind is the device the port was taken for: "arm" or "grip"; empty
	// when skipped.
	Kind string `json:"kind,omitempty"`
	// Outcome is "loaded" (a driver is open on it), "skipped" (not a known
	// device: it got no byte) or "failed" (it did not open, or its device
	// was lost).
	Outcome string `json:"outcome"`
	// DeviceType and DeviceID name the device served from the port, as
	// GET /devices lists it (filled in here, from the devices served).
	DeviceType string `json:"device_type,omitempty"`
	DeviceID   string `json:"device_id,omitempty"`
	Reason     string `json:"reason,omitempty"` // why skipped or failed
	Hint       string `json:"hint,omitempty"`   // how to fix a failure
	// Failures counts the port's failures in a row; RetryAt is when a
	// failed port is tried again (a replug tries it at the next scan).
	Failures int        `json:"failures"`
	RetryAt  *time.Time `json:"retry_at,omitempty"`
}

// HardwarePorts is the hardware scan's latest outcome, ports sorted by
// path.
type HardwarePorts struct {
	ScannedAt time.Time // zero before the first scan
	Ports     []HardwarePort
}

// portsDoc is the data of GET /ports.
type portsDoc struct {
	// Watching is false when the service watches no hardware (no
	// --hw-port, no --emulate-arms, --hw-scan-period 0).
	Watching  bool           `json:"watching"`
	ScannedAt *time.Time     `json:"scanned_at"` // null before the first scan
	Ports     []HardwarePort `json:"ports"`
}

// ports answers GET /ports: every port the last scan saw, each loaded,
// skipped or failed with its reason and fix hint, the loaded ones with
// the device they serve.
func (s *Server) ports(w http.ResponseWriter, scan func() HardwarePorts) {
	doc := portsDoc{Ports: []HardwarePort{}}
	if scan != nil {
		r := scan()
		doc.Watching = true
		if !r.ScannedAt.IsZero() {
			doc.ScannedAt = &r.ScannedAt
		}
		if r.Ports != nil {
			doc.Ports = r.Ports
		}
	}
	// By the port the driver reports, so the id is the one the service
	// serves the device on (a derived one when two arms share an id).
	served := map[string]*actors.Device{}
	for _, d := range s.svc.Devices().All() {
		if d.Info.Port != "" {
			served[d.Info.Port] = d
		}
	}
	for i := range doc.Ports {
		p := &doc.Ports[i]
		if d := served[p.Path]; d != nil {
			p.DeviceType, p.DeviceID = d.Name, d.ID
		}
	}
	writeData(w, doc, nil)
}
