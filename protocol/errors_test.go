package protocol

import (
	"errors"
	"fmt"
	"net/http"
	"testing"
)

// AsError is the one mapping from any error to the table: HTTP statuses and
// WebSocket error entries both come from it.
func TestAsErrorMapsEveryErrorToTheTable(t *testing.T) {
	busy := Errorf(CodeUnavailable, "", "busy")
	for _, c := range []struct {
		name     string
		err      error
		path     string
		want     Code
		wantPath string
		status   int
	}{
		{"table error", busy, "arm3[0]", CodeUnavailable, "arm3[0]", http.StatusServiceUnavailable},
		{"wrapped table error", fmt.Errorf("actors: ask: %w", busy), "", CodeUnavailable, "", http.StatusServiceUnavailable},
		{"keeps its own path", Errorf(CodeOutOfRange, "lease.ms", "too long"), "session", CodeOutOfRange, "lease.ms", http.StatusBadRequest},
		{"anything else is internal", errors.New("disk on fire"), "x", CodeInternal, "x", http.StatusInternalServerError},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := AsError(c.err, c.path)
			if e.Code != c.want || e.Path != c.wantPath || e.Code.HTTPStatus() != c.status {
				t.Fatalf("got %+v (status %d), want %s at %q (status %d)", e, e.Code.HTTPStatus(), c.want, c.wantPath, c.status)
			}
			if e.Message == "" {
				t.Fatal("no message")
			}
		})
	}
	if busy.Path != "" {
		t.Fatal("AsError wrote into the error it was given")
	}
}

func TestHandshakeCode(t *testing.T) {
	tests := []struct {
		status int
		want   Code
	}{
		{http.StatusBadRequest, CodeBadHandshake},
		{http.StatusMethodNotAllowed, CodeMethodNotAllowed},
		{http.StatusForbidden, CodeForbiddenOrigin},
		{http.StatusInternalServerError, CodeInternal},
		{http.StatusUpgradeRequired, CodeBadHandshake},
	}
	for _, tc := range tests {
		if got := HandshakeCode(tc.status); got != tc.want {
			t.Errorf("HandshakeCode(%d) = %q, want %q", tc.status, got, tc.want)
		}
	}
}
