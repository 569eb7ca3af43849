package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/hapticd/hapticd/hw/hwtest"
)

// The log is what these tests check: the operator reads it, so its lines,
// timestamps and levels are the behaviour under test here.

// loggedProcess is a hapticd process whose whole log is kept.
type loggedProcess struct {
	cmd *exec.Cmd
	mu  sync.Mutex
	log bytes.Buffer
}

func (p *loggedProcess) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log.Write(b)
}

func (p *loggedProcess) lines() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Split(strings.TrimSuffix(p.log.String(), "\n"), "\n")
}

// startLogged runs the binary on free ports with stderr on a pipe (not a
// terminal) and waits for its ready line.
func startLogged(t *testing.T, bin string, args ...string) *loggedProcess {
	t.Helper()
	p := &loggedProcess{}
	p.cmd = exec.Command(bin, append([]string{"--port", "0", "--legacy-port", "0", "--events-port", "0", "--state-dir", t.TempDir()}, args...)...)
	p.cmd.Stderr = p
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		_ = p.cmd.Wait()
	})
	hwtest.EventuallyNil(t, 20*time.Second, "hapticd to log ready", func() error {
		for _, l := range p.lines() {
			if strings.Contains(l, "ready") {
				return nil
			}
		}
		return fmt.Errorf("no ready line yet; log so far:\n%s", strings.Join(p.lines(), "\n"))
	})
	return p
}

// stop sends SIGTERM and waits for a clean exit.
func (p *loggedProcess) stop(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Wait(); err != nil {
		t.Fatalf("exit after SIGTERM: %v\n%s", err, strings.Join(p.lines(), "\n"))
	}
}

// jsonLines decodes a JSON-format log, one object per line.
func jsonLines(t *testing.T, lines []string) []map[string]any {
	t.Helper()
	out := make([]map[string]any, 0, len(lines))
	for _, l := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line is not one JSON object: %q", l)
		}
		out = append(out, m)
	}
	return out
}

func (p *loggedProcess) addr(t *testing.T, listener string) string {
	t.Helper()
	for _, m := range jsonLines(t, p.lines()) {
		if m["listener"] == listener && m["addr"] != nil {
			return m["addr"].(string)
		}
	}
	t.Fatalf("no %s listener in the log", listener)
	return ""
}

// rfc3339ms is RFC 3339 with exactly three fractional digits.
var rfc3339ms = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}(Z|[+-]\d\d:\d\d)$`)

func TestLogs(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)

	t.Run("json: one line per event, millisecond timestamps, nothing above info", func(t *testing.T) {
		p := startLogged(t, bin, "--log-format", "json")
		base := "http://" + p.addr(t, "http")
		c := dialWS(t, "ws://"+p.addr(t, "http")+"/")
		sid := readJSON(t, c)["session_id"]
		_ = c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
		var events []any
		hwtest.EventuallyNil(t, 10*time.Second, "the session events", func() error {
			_, env := httpDo(t, "GET", base+"/events?since=0", "")
			events, _ = dig2(env, "data", "events").([]any)
			for _, e := range events {
				if dig2(e, "name") == "session-ended" {
					return nil
				}
			}
			return fmt.Errorf("no session-ended event yet: %v", events)
		})
		p.stop(t)

		lines := jsonLines(t, p.lines())
		for _, m := range lines {
			if ts, _ := m["time"].(string); !rfc3339ms.MatchString(ts) {
				t.Errorf("time %q is not RFC 3339 with milliseconds: %v", ts, m)
			}
			if lvl := m["level"]; lvl != "info" && lvl != "debug" {
				t.Errorf("a clean start, session and shutdown logged at %v: %v", lvl, m)
			}
		}
		for _, e := range events {
			seq := dig(e, "seq")
			n := 0
			for _, m := range lines {
				if m["seq"] == seq {
					n++
				}
			}
			if n != 1 {
				t.Errorf("event %v (seq %v) logged %d times, want once", dig2(e, "name"), seq, n)
			}
		}
		// Nothing else speaks of the session: the two events are its lines.
		about := 0
		for _, m := range lines {
			if m["session_id"] == sid || dig2(m, "data", "session_id") == sid {
				about++
			}
		}
		if about != 2 {
			t.Errorf("%d log lines about session %v, want 2 (session-started and session-ended)", about, sid)
		}
	})

	t.Run("console: no colour off a terminal, millisecond timestamps", func(t *testing.T) {
		p := startLogged(t, bin, "--log-format", "console")
		p.stop(t)
		stamp := regexp.MustCompile(`^(\S+) `)
		for _, l := range p.lines() {
			if strings.Contains(l, "\x1b[") {
				t.Errorf("colour codes in a log written to a pipe: %q", l)
			}
			if m := stamp.FindStringSubmatch(l); m == nil || !rfc3339ms.MatchString(m[1]) {
				t.Errorf("line does not start with an RFC 3339 millisecond timestamp: %q", l)
			}
		}
	})

	t.Run("an idle service warns of nothing over 10 s", func(t *testing.T) {
		p := startLogged(t, bin, "--log-format", "json", "--sim-arms", "1", "--sim-grips", "1")
		// Idling for the whole window is the behaviour under test.
		time.Sleep(10 * time.Second)
		p.stop(t)
		for _, m := range jsonLines(t, p.lines()) {
			if lvl := m["level"]; lvl != "info" && lvl != "debug" {
				t.Errorf("idle service logged at %v: %v", lvl, m)
			}
		}
	})
}
