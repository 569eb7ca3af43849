package transport

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"

	"github.com/julienschmidt/httprouter"

	"github.com/hapticd/hapticd/actors/recording"
	"github.com/hapticd/hapticd/protocol"
)

// The recording routes. Recording itself (taps, writer, schema) is
// actors/recording's; the session taps are called from session.go.

// newRecorder is the service's recorder, whose channels carry the schemas
// GET /schema serves.
func newRecorder(cfg Config) *recording.Recorder {
	return recording.New(recording.Config{
		Service: cfg.Service, Dir: cfg.RecordDir, TapTicks: cfg.RecordTapTicks, Log: cfg.Log,
		ServedSchema: newSchemaSet(cfg.Service.Types()).Document,
	})
}

// startRecording serves POST /recordings {devices?, sessions?, rate_hz?, name?}.
func (a *api) startRecording(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	body, perr := readBody(w, r)
	if perr != nil {
		writeError(w, perr)
		return
	}
	var o recording.Options
	if len(bytes.TrimSpace(body)) > 0 {
		// One JSON object, as every route takes: json.Decoder alone reads
		// the first value and took null, or options followed by anything,
		// as a request to record.
		var doc protocol.Doc
		if perr := doc.Parse(body); perr != nil {
			writeError(w, perr)
			return
		}
		if k := doc.Root().Kind(); k != protocol.KindObject {
			writeError(w, protocol.Errorf(protocol.CodeInvalidValue, "", "recording options must be a JSON object {devices?, sessions?, rate_hz?, name?}, got %v", k))
			return
		}
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&o); err != nil {
			writeError(w, protocol.Errorf(protocol.CodeInvalidValue, "", "recording options: %v (fields: devices, sessions, rate_hz, name)", err))
			return
		}
	}
	info, err := a.rec.Start(o)
	if err != nil {
		// Only bad options are the client's fault: a directory the
		// service cannot write is not.
		code := protocol.CodeInternal
		switch {
		case errors.Is(err, recording.ErrBadOptions):
			code = protocol.CodeInvalidValue
		case errors.Is(err, recording.ErrNoDirectory), errors.Is(err, recording.ErrClosed), errors.Is(err, recording.ErrTooMany):
			code = protocol.CodeUnavailable
		}
		writeError(w, protocol.Errorf(code, "", "%v", err))
		return
	}
	writeData(w, info, nil)
}

// stopRecording serves DELETE /recordings/{id}: the file is complete when
// it answers.
func (a *api) stopRecording(w http.ResponseWriter, _ *http.Request, ps httprouter.Params) {
	id, err := strconv.ParseUint(ps.ByName("id"), 10, 64)
	if err != nil {
		writeError(w, protocol.Errorf(protocol.CodeInvalidValue, "", "recording id %q is not one: ids are the positive integers POST /recordings answers with", ps.ByName("id")))
		return
	}
	info, ok := a.rec.Stop(id)
	if !ok {
		writeError(w, protocol.Errorf(protocol.CodeUnknownRoute, "", "no recording %d listed (GET /recordings lists those running and the last %d stopped; a stopped recording's file stays where it was written)", id, recording.MaxStoppedListed))
		return
	}
	writeData(w, info, nil)
}

// listRecordings serves GET /recordings.
func (a *api) listRecordings(w http.ResponseWriter, _ *http.Request, _ httprouter.Params) {
	writeData(w, a.rec.List(), nil)
}

// recordChange records a config or settings change made over HTTP, with
// the status it got, when a recording is running.
func (a *api) recordChange(h httprouter.Handle) httprouter.Handle {
	return func(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
		if !a.rec.Recording() {
			h(w, r, ps)
			return
		}
		body, perr := readBody(w, r)
		if perr != nil {
			writeError(w, perr)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		h(sw, r, ps)
		// With the query: ?session= says whose a session-scoped change was.
		at := r.URL.Path
		if r.URL.RawQuery != "" {
			at += "?" + r.URL.RawQuery
		}
		a.rec.Config(r.Method, at, sw.status, body)
	}
}

// statusWriter remembers the status a handler answered.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}
