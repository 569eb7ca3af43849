package transport

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"

	"github.com/hapticd/hapticd/protocol"
)

// maxBodyBytes is the largest request body any route reads (docs/walkthrough.md).
const maxBodyBytes = 64 << 10

// appliedTo names one (device, session) a POST or DELETE changed.
type appliedTo struct {
	DeviceType string `json:"device_type"`
	DeviceID   string `json:"device_id"`
	SessionID  uint64 `json:"session_id,omitempty"`
}

type okEnvelope struct {
	OK        bool        `json:"ok"`
	Data      any         `json:"data,omitempty"`
	AppliedTo []appliedTo `json:"applied_to,omitempty"`
	// Warnings are what the body said that the service ignored (a member
	// the entry does not have), in the shape of a frame's warnings; absent
	// when there were none.
	Warnings []protocol.Error `json:"warnings,omitempty"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	_ = enc.Encode(v) // the client is gone if this fails; nothing to tell it
}

func writeData(w http.ResponseWriter, data any, applied []appliedTo) {
	writeJSON(w, http.StatusOK, okEnvelope{OK: true, Data: data, AppliedTo: applied})
}

// writeApplied answers a POST or DELETE of a config route: the value in
// force and applied_to, which is there even when empty (a DELETE of every
// session's entry with no session connected changed none), and the body's
// warnings, if any.
func writeApplied(w http.ResponseWriter, data any, applied []appliedTo, warnings []protocol.Error) {
	if applied == nil {
		applied = []appliedTo{}
	}
	writeJSON(w, http.StatusOK, struct {
		OK        bool             `json:"ok"`
		Data      any              `json:"data"`
		AppliedTo []appliedTo      `json:"applied_to"`
		Warnings  []protocol.Error `json:"warnings,omitempty"`
	}{true, data, applied, warnings})
}

// writeWarned answers a POST of a setting: the value in force and the
// body's warnings, if any.
func writeWarned(w http.ResponseWriter, data any, warnings []protocol.Error) {
	writeJSON(w, http.StatusOK, okEnvelope{OK: true, Data: data, Warnings: warnings})
}

// writeOK answers a deprecated route: {"ok": true}, and the body's
// warnings, if any.
func writeOK(w http.ResponseWriter, warnings []protocol.Error) {
	writeJSON(w, http.StatusOK, struct {
		OK       bool             `json:"ok"`
		Warnings []protocol.Error `json:"warnings,omitempty"`
	}{true, warnings})
}

// writeError answers with the status of the error's code (one table in
// protocol) and the JSON error envelope.
func writeError(w http.ResponseWriter, e *protocol.Error) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(e.Code.HTTPStatus())
	_, _ = w.Write(protocol.AppendErrorEnvelope(nil, e)) // the client is gone if this fails
}

// writePartialError answers a write to several targets that failed partway:
// the error envelope plus applied_to, the targets that took the change.
func writePartialError(w http.ResponseWriter, e *protocol.Error, applied []appliedTo) {
	writeJSON(w, e.Code.HTTPStatus(), struct {
		OK        bool          `json:"ok"`
		Error     string        `json:"error"`
		Code      protocol.Code `json:"code"`
		AppliedTo []appliedTo   `json:"applied_to"`
	}{false, e.Message, e.Code, applied})
}

// asError turns any error from below into the envelope's shape.
func asError(err error) *protocol.Error { return protocol.AsError(err, "") }

// readBody reads a request body up to maxBodyBytes. Bodies are parsed as
// JSON whatever the Content-Type says (curl without -H sends a form type).
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, *protocol.Error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return nil, protocol.Errorf(protocol.CodeBodyTooLarge, "", "request body is over %d KiB", maxBodyBytes>>10)
		}
		return nil, protocol.Errorf(protocol.CodeInvalidJSON, "", "could not read the request body: %v", err)
	}
	return body, nil
}
