package transport

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
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
	// An empty body is no options: curl -X POST without -d records
	// everything (docs/recording.md).
	if len(bytes.TrimSpace(body)) > 0 {
		if o, perr = decodeRecordingOptions(body); perr != nil {
			writeError(w, perr)
			return
		}
	}
	if perr := a.resolveRecorded(&o); perr != nil {
		writeError(w, perr)
		return
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

// recordingMembers are the members POST /recordings reads, for messages.
const recordingMembers = "devices, sessions, rate_hz and name"

// decodeRecordingOptions reads POST /recordings' body by the rules every
// body and message follows (docs/protocol.md, Input): one JSON object, a
// member given twice counts by its last occurrence (an invalid earlier one
// is superseded), a null member is an absent one (its default), and a
// number past float64 (1e400) is invalid_value. Unlike a config body, an
// unknown member is refused, not a warning: a misspelt rate_hz or devices
// would record something else than asked. Each error names the member at
// fault in its path and says what it takes, in the service's words (it was
// encoding/json's, naming Go types: "cannot unmarshal number into Go
// struct field Options.name of type string").
func decodeRecordingOptions(body []byte) (recording.Options, *protocol.Error) {
	var o recording.Options
	var doc protocol.Doc
	if perr := doc.Parse(body); perr != nil {
		return o, perr
	}
	root := doc.Root()
	if k := root.Kind(); k != protocol.KindObject {
		return o, protocol.Errorf(protocol.CodeInvalidValue, "", "recording options must be a JSON object {devices?, sessions?, rate_hz?, name?}, got %v", k)
	}
	for it := root.Members(); it.Next(); {
		var perr *protocol.Error
		switch {
		case it.KeyIs("devices"), it.KeyIs("sessions"), it.KeyIs("rate_hz"), it.KeyIs("name"):
			if it.Superseded() {
				continue
			}
		default:
			return o, protocol.Errorf(protocol.CodeInvalidValue, string(it.Key()),
				"recording options have no member %q: POST /recordings takes %s (a misspelt one would record something else than asked)", it.Key(), recordingMembers)
		}
		v := it.Value()
		if v.Kind() == protocol.KindNull {
			continue // absent: its default
		}
		switch {
		case it.KeyIs("devices"):
			o.Devices, perr = readRecordedDevices(v)
		case it.KeyIs("sessions"):
			o.Sessions, perr = readRecordedSessions(v)
		case it.KeyIs("rate_hz"):
			o.RateHz, perr = readRecordingRate(v)
		case it.KeyIs("name"):
			s, ok := v.String()
			if !ok {
				perr = protocol.Errorf(protocol.CodeInvalidValue, "name", "name must be a string (letters, digits, '-', '_' and '.'), got %v", v.Kind())
			}
			o.Name = s
		}
		if perr != nil {
			return recording.Options{}, perr
		}
	}
	return o, nil
}

func readRecordedDevices(v protocol.Value) ([]string, *protocol.Error) {
	if v.Kind() != protocol.KindArray {
		return nil, protocol.Errorf(protocol.CodeInvalidValue, "devices", `devices must be an array of device ids like ["049D"], got %v`, v.Kind())
	}
	var ids []string
	for el := v.Elements(); el.Next(); {
		id, ok := el.Value().String()
		if !ok {
			return nil, protocol.Errorf(protocol.CodeInvalidValue, fmt.Sprintf("devices[%d]", el.Index()),
				"devices[%d] must be a device id, a string as GET /devices lists it, got %v", el.Index(), el.Value().Kind())
		}
		ids = append(ids, id)
	}
	if len(ids) == 0 {
		return nil, errEmptyRecorded("devices", "device")
	}
	return ids, nil
}

// errEmptyRecorded refuses an empty devices or sessions list: it would
// record nothing of its kind, so it is a client's filter that came out
// empty, and taking it as "every one" (as its absence is) recorded the
// whole fleet.
func errEmptyRecorded(member, kind string) *protocol.Error {
	return protocol.Errorf(protocol.CodeInvalidValue, member,
		"%s is empty: it would record no %s; leave it out to record every %s", member, kind, kind)
}

// maxSessionID bounds a session id read from a number: past 2^53 a
// float64 no longer holds every integer.
const maxSessionID = 1 << 53

func readRecordedSessions(v protocol.Value) ([]uint64, *protocol.Error) {
	if v.Kind() != protocol.KindArray {
		return nil, protocol.Errorf(protocol.CodeInvalidValue, "sessions", "sessions must be an array of session ids like [3], got %v", v.Kind())
	}
	var ids []uint64
	for el := v.Elements(); el.Next(); {
		e := el.Value()
		f, ok := e.Float()
		if e.Kind() != protocol.KindNumber || !ok || f < 0 || f > maxSessionID || f != math.Trunc(f) {
			got := e.Kind().String()
			if e.Kind() == protocol.KindNumber {
				got = string(e.Raw())
			}
			return nil, protocol.Errorf(protocol.CodeInvalidValue, fmt.Sprintf("sessions[%d]", el.Index()),
				"sessions[%d] must be a session id, a whole number as GET /sessions lists it, got %s", el.Index(), got)
		}
		ids = append(ids, uint64(f))
	}
	if len(ids) == 0 {
		return nil, errEmptyRecorded("sessions", "session")
	}
	return ids, nil
}

// readRecordingRate reads rate_hz as a number; its range is Start's to
// check (recording.Options).
func readRecordingRate(v protocol.Value) (float64, *protocol.Error) {
	if v.Kind() != protocol.KindNumber {
		return 0, protocol.Errorf(protocol.CodeInvalidValue, "rate_hz", "rate_hz must be a number (0 for every tick, or at least %g), got %v", recording.MinRateHz, v.Kind())
	}
	f, ok := v.Float()
	if !ok {
		return 0, protocol.Errorf(protocol.CodeInvalidValue, "rate_hz", "rate_hz is not a number a float64 holds (finite, and 0 or at least 5e-324 in size): %s", v.Raw())
	}
	return f, nil
}

// resolveRecorded names o's devices by the service's own ids and checks
// its sessions against those connected. A device id is matched as
// everywhere a client gives one (docs/protocol.md, Input): exactly, or
// else regardless of case, so "cbbd" records arm CBBD (the recorder
// matches ids exactly, and recorded none of it). An id that names no
// device is 404 unknown_device, as a deprecated route's device_id: it
// used to start a recording with none of the device in it. A session id
// must be connected now: ids are handed out once per run, so one that is
// not is over (and never comes back) or not handed out yet, which a client
// cannot know in advance; 404 unknown_session.
func (a *api) resolveRecorded(o *recording.Options) *protocol.Error {
	if len(o.Devices) > 0 {
		all := a.svc.Devices().All()
		var own []string
		for i, given := range o.Devices {
			var exact bool
			var folded []string
			for _, d := range all {
				switch protocol.NamesDeviceID(given, d.ID) {
				case protocol.IDExact:
					exact = true
				case protocol.IDFolded:
					folded = append(folded, d.ID)
				}
			}
			switch {
			case exact:
				own = appendNew(own, given)
			case len(folded) > 0:
				for _, id := range folded {
					own = appendNew(own, id)
				}
			default:
				return protocol.Errorf(protocol.CodeUnknownDevice, fmt.Sprintf("devices[%d]", i),
					"no device has id %q: GET /devices lists the devices' ids (omit devices to record every device, also those that connect later)", given)
			}
		}
		o.Devices = own
	}
	if len(o.Sessions) > 0 {
		live := map[uint64]bool{}
		for _, s := range a.svc.SessionRefs() {
			live[s.ID] = true
		}
		var ids []uint64
		for i, id := range o.Sessions {
			if !live[id] {
				return protocol.Errorf(protocol.CodeUnknownSession, fmt.Sprintf("sessions[%d]", i),
					"no session %d is connected: GET /sessions lists those connected (omit sessions to record every session, also those that connect later)", id)
			}
			if !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
		o.Sessions = ids
	}
	return nil
}

// appendNew appends s unless list has it.
func appendNew(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
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
