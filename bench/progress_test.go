package bench

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hapticd/hapticd/hw/hwtest"
)

// lockedBuffer is a bytes.Buffer safe for the live line's goroutine.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestLiveProgressLine(t *testing.T) {
	var out lockedBuffer
	o := RunOptions{Progress: &out, Live: true}
	stop := o.live("hapticd", 12*time.Second)
	hwtest.Eventually(t, 10*time.Second, "the live line rewritten four times", func() bool { return strings.Count(out.String(), "\r") >= 4 })
	stop()
	s := out.String()
	if !strings.Contains(s, "\r\033[Khapticd: ") || !strings.Contains(s, " s of 12.0 s") {
		t.Fatalf("live line %q: want the phase and its elapsed time of 12.0 s, rewritten in place", s)
	}
	if !strings.HasSuffix(s, "\r\033[K") {
		t.Fatalf("live line %q not cleared at the end of the phase", s)
	}

	// Off a terminal (Live unset) and with --quiet (no Progress): nothing.
	for _, o := range []RunOptions{{Progress: &out}, {Live: true}} {
		before := out.String()
		o.live("echo", time.Second)()
		if out.String() != before {
			t.Fatalf("%+v wrote %q", o, strings.TrimPrefix(out.String(), before))
		}
	}
}
