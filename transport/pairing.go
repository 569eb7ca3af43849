package transport

import (
	"net/http"

	"github.com/julienschmidt/httprouter"

	"github.com/hapticd/hapticd/protocol"
)

// The vendor's Rust client also reads grip pairing and an "expert status"
// document, but only their existence is public: neither the paths nor the
// bodies are (spec MODULES.md, section 4). hapticd serves each at a path of
// its choice with what it can honestly say, documented in docs/protocol.md,
// on the 3.x listener only: the 3.0 API had neither.

// Route paths and schema names of the two documents.
const (
	pairingPath        = "/pairing"
	expertStatusPath   = "/expert/status"
	schemaPairing      = "pairing"
	schemaExpertStatus = "expert-status"
)

// pairingDoc is the data of GET /pairing: every grip with the arms it is
// paired with. hapticd pairs nothing (the vendor's pairing protocol is not
// public), so each list is empty, and Message says so.
type pairingDoc struct {
	Grips   []gripPairing `json:"grips"`
	Message string        `json:"message"`
}

// gripPairing is one grip's pairing.
type gripPairing struct {
	DeviceType string `json:"device_type"`
	DeviceID   string `json:"device_id"`
	// PairedWith lists the ids of the arms the grip is paired with.
	PairedWith []string `json:"paired_with"`
}

// expertStatusDoc is the data of GET /expert/status: hapticd has no such
// document, and says where what it has instead is.
type expertStatusDoc struct {
	Available bool     `json:"available"`
	Message   string   `json:"message"`
	See       []string `json:"see"`
}

const (
	pairingMessage = "hapticd does not pair grips with arms: the vendor's pairing protocol is not public, " +
		"so every grip is listed unpaired; a client may use any grip with any arm"
	expertStatusMessage = "hapticd has no expert status: the vendor's document is not public; " +
		"loop timing, overruns and process figures are at /stats, device status at /devices, recent events at /events"
)

// pairing answers GET /pairing.
func (a *api) pairing(w http.ResponseWriter, _ *http.Request, _ httprouter.Params) {
	doc := pairingDoc{Grips: []gripPairing{}, Message: pairingMessage}
	for _, d := range a.svc.Devices().OfType(protocol.TypeGrip) {
		doc.Grips = append(doc.Grips, gripPairing{DeviceType: d.Name, DeviceID: d.ID, PairedWith: []string{}})
	}
	writeData(w, doc, nil)
}

// expertStatus answers GET /expert/status.
func (a *api) expertStatus(w http.ResponseWriter, _ *http.Request, _ httprouter.Params) {
	writeData(w, expertStatusDoc{Message: expertStatusMessage, See: []string{"/stats", "/devices", "/events"}}, nil)
}
