//go:build linux

package rawsock

import (
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestHijackingHandsOverARawConnection: what an upgrader hijacks through
// Hijacking is the raw connection (so the sessions and the echo baseline,
// which both upgrade through it, read and write raw), and a writer that
// cannot be hijacked is left as it is.
func TestHijackingHandsOverARawConnection(t *testing.T) {
	got := make(chan net.Conn, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hj, ok := Hijacking(w).(http.Hijacker)
		if !ok {
			t.Error("Hijacking(a hijackable writer) cannot be hijacked")
			got <- nil
			return
		}
		c, _, err := hj.Hijack()
		if err != nil {
			t.Error(err)
			got <- nil
			return
		}
		got <- c
	}))
	defer srv.Close()
	go func() { _, _ = http.Get(srv.URL) }() // ends when the hijacked connection closes
	c := <-got
	if c == nil {
		t.FailNow()
	}
	defer c.Close()
	if _, ok := c.(*Conn); !ok {
		t.Fatalf("the hijacked connection is a %T, want a *rawsock.Conn", c)
	}

	rec := httptest.NewRecorder() // not a Hijacker
	if w := Hijacking(rec); w != http.ResponseWriter(rec) {
		t.Fatalf("Hijacking(a writer that cannot be hijacked) = %T, want it as it is", w)
	}
}
