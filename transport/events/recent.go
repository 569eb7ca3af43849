package events

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"

	"github.com/hapticd/hapticd/actors/activity"
	"github.com/hapticd/hapticd/protocol"
	"github.com/hapticd/hapticd/protocol/event"
)

// Limits of GET /events.
const (
	DefaultRecentLimit = 100
	MaxRecentLimit     = 10000
)

// NewRecentHandler serves GET /events?since=SEQ&limit=N on the HTTP port:
// up to limit ring entries with seq > since (default 0: the oldest the ring
// holds), oldest first, and next_seq, the seq of the first event not
// returned. To continue without a gap, ask again with since=next_seq-1.
// missed counts the events after since that the ring no longer holds (0
// when since is 0 or still in the ring), as the socket's events-dropped
// event does for a replay that starts too far back. restarted says that
// since was handed out by an earlier run (hapticd restarted since, as the
// socket's service-restarted event does): it is answered from this run's
// first event, missed counting those of them the ring no longer holds.
//
//	{"ok":true,"data":{"events":[...],"next_seq":N,"missed":M,"restarted":false}}
//
// limit defaults to 100 and may be 1..10000. A bad since or limit answers
// 400 {"ok":false,"error":"...","code":"invalid_value"}.
func NewRecentHandler(a *activity.Activity) http.Handler {
	return recentHandler{act: a}
}

type recentHandler struct{ act *activity.Activity }

func (h recentHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeError(w, protocol.CodeMethodNotAllowed,
			fmt.Sprintf("events: %s is not supported on /events; use GET", r.Method))
		return
	}
	var since uint64
	sinceText, given, perr := protocol.QueryValue(r.URL.RawQuery, "since")
	if perr != nil {
		writeError(w, perr.Code, "events: "+perr.Message)
		return
	}
	if given {
		v, err := strconv.ParseUint(sinceText, 10, 64)
		if err != nil {
			writeError(w, protocol.CodeInvalidValue,
				fmt.Sprintf("events: since %q is not a sequence number; give a non-negative integer (the seq of the last event you saw, or 0 for the oldest)", sinceText))
			return
		}
		since = v
	}
	limit := DefaultRecentLimit
	limitText, given, perr := protocol.QueryValue(r.URL.RawQuery, "limit")
	if perr != nil {
		writeError(w, perr.Code, "events: "+perr.Message)
		return
	}
	if given {
		v, problem := parseLimit(limitText)
		if problem != "" {
			writeError(w, protocol.CodeInvalidValue, "events: "+problem)
			return
		}
		limit = v
	}
	page, err := h.act.Recent(since, limit)
	if err != nil {
		msg := fmt.Sprintf("events: %v", err)
		if errors.Is(err, activity.ErrStopped) {
			msg = "events: hapticd is shutting down; the activity channel is stopped"
		}
		writeError(w, protocol.CodeUnavailable, msg)
		return
	}
	evs := page.Events
	size := 112
	for i := range evs {
		size += 192 + len(evs[i].Data) + len(evs[i].Message)
	}
	body := make([]byte, 0, size)
	body = append(body, `{"ok":true,"data":{"events":[`...)
	for i := range evs {
		if i > 0 {
			body = append(body, ',')
		}
		body = event.AppendJSON(body, &evs[i])
	}
	body = append(body, `],"next_seq":`...)
	body = strconv.AppendUint(body, page.NextSeq, 10)
	body = append(body, `,"missed":`...)
	body = strconv.AppendUint(body, page.Missed, 10)
	body = append(body, `,"restarted":`...)
	body = strconv.AppendBool(body, page.Restarted)
	body = append(body, "}}\n"...)
	header(w)
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body) // the client is gone if this fails
	}
}

// parseLimit reads limit=: digits only (no sign, as since), 1 to
// MaxRecentLimit. The problem says which of those the text is not: "abc"
// was called out of range.
func parseLimit(text string) (int, string) {
	v, err := strconv.ParseUint(text, 10, 64)
	switch {
	case err == nil && v >= 1 && v <= MaxRecentLimit:
		return int(v), ""
	case err == nil || errors.Is(err, strconv.ErrRange):
		return 0, fmt.Sprintf("limit %s is out of range; give an integer from 1 to %d", text, MaxRecentLimit)
	}
	if f, ferr := strconv.ParseFloat(text, 64); ferr == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
		return 0, fmt.Sprintf("limit %q is not a count of events; give an integer from 1 to %d, in digits only", text, MaxRecentLimit)
	}
	return 0, fmt.Sprintf("limit %q is not a number; give an integer from 1 to %d", text, MaxRecentLimit)
}

func header(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
}

// writeError answers with the JSON error envelope; the status comes from
// protocol's error table.
func writeError(w http.ResponseWriter, code protocol.Code, message string) {
	header(w)
	w.WriteHeader(code.HTTPStatus())
	_, _ = w.Write(protocol.AppendErrorEnvelope(nil, &protocol.Error{Code: code, Message: message}))
}
