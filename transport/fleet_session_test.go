package transport

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/hapticd/hapticd/hw/hwtest"
)

// TestOneSessionHoldsAThousandArms is the load test's case ("a CI job
// would start with a thousand simulated arms"): one session commands all
// 1000 simulated arms in one message every 50 ms, at the default lease
// (100 ms). Every arm must stay under its command for the whole run: in
// use and in force mode in every frame, and no control-lease-expired for
// any. The ids are written in lower case, as clients write hex ids
// (NamesDeviceID) and the session's hint does not answer: a scan of every
// arm per entry made the message take 50 to 130 ms, past the lease.
func TestOneSessionHoldsAThousandArms(t *testing.T) {
	if testing.Short() {
		t.Skip("1000 simulated arms")
	}
	if raceEnabled {
		t.Skip("the race detector slows a 1000-entry message past the 100 ms lease it tests")
	}
	const arms = 1000
	// Loops at 250 Hz: the test's own arms load the machine less; the
	// lease is the same. The ring holds every lapse of every attempt.
	ts := startService(t, serviceConfig{arms: arms, loopHz: 250, eventRing: 20000})
	var msg strings.Builder
	msg.WriteString(`{"arm3":[`)
	for i, id := range ts.armIDs {
		if i > 0 {
			msg.WriteByte(',')
		}
		fmt.Fprintf(&msg, `{"device_id":%q,"commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":1}}}}`, strings.ToLower(id))
	}
	msg.WriteString(`]}`)
	// A stall of the machine (other work on its two cores) can hold one
	// message past the lease whatever it costs; a message that costs more
	// than the lease fails every attempt.
	const attempts = 3
	var failed []string
	for range attempts {
		err := holdArms(t, ts, []byte(msg.String()), arms)
		if err == nil {
			return
		}
		failed = append(failed, err.Error())
	}
	t.Fatalf("%d attempts of one session holding %d arms failed:\n%s", attempts, arms, strings.Join(failed, "\n"))
}

// holdArms opens a session on ts, sends it body (a command for each of the
// arms) every 50 ms until every arm shows it, then for 4 s more, and says
// why the session did not hold them all throughout: an arm not in use or
// not in force mode in a frame, or a lease of the session's that lapsed.
// The session is closed when it returns.
func holdArms(t *testing.T, ts *testService, body []byte, arms int) error {
	t.Helper()
	const (
		period = 50 * time.Millisecond
		held   = 4 * time.Second
	)
	c := ts.dial(t, ts.wsURL())
	defer c.conn.Close()
	// The inventory is read, not validated: the validator's garbage for
	// 1000 arms (250 MB) would be collected during the run.
	_ = c.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, inv, err := c.conn.ReadMessage()
	var head struct {
		SessionID uint64 `json:"session_id"`
	}
	if err == nil {
		err = json.Unmarshal(inv, &head)
	}
	if err != nil {
		t.Fatalf("read the inventory: %v", err)
	}

	// exchange sends the message and reads its frame, returning how many
	// arms are not under the command, and one of them. The frame (600 KB)
	// is read into one buffer and counted, not decoded, unless an arm is
	// missing, and not validated against the schema: the client's garbage
	// (it shares the process) would make the service's collections, and
	// the lapses, the client's doing.
	var frame []byte
	var refused error // a frame's errors or warnings, or not every arm
	exchange := func() (missing int, example string) {
		t.Helper()
		if err := c.conn.WriteMessage(websocket.TextMessage, body); err != nil {
			t.Fatalf("send: %v", err)
		}
		_ = c.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, r, err := c.conn.NextReader()
		if err == nil {
			frame, err = readInto(frame[:0], r, 16<<20)
		}
		if err != nil {
			t.Fatalf("read frame: %v", err)
		}
		held := min(bytes.Count(frame, []byte(`"in_use":true`)), bytes.Count(frame, []byte(`"control_mode":"force"`)))
		if held == arms && !bytes.Contains(frame, []byte(`"errors"`)) && !bytes.Contains(frame, []byte(`"warnings"`)) {
			return 0, ""
		}
		var f struct {
			Errors   []json.RawMessage `json:"errors"`
			Warnings []json.RawMessage `json:"warnings"`
			Arm3     []struct {
				DeviceID string `json:"device_id"`
				State    struct {
					Force map[string]float64 `json:"current_cursor_force"`
					Mode  string             `json:"control_mode"`
				} `json:"state"`
				Status struct {
					InUse bool `json:"in_use"`
				} `json:"status"`
			} `json:"arm3"`
		}
		if err := json.Unmarshal(frame, &f); err != nil {
			t.Fatalf("frame: %v", err)
		}
		if len(f.Errors)+len(f.Warnings) > 0 || len(f.Arm3) != arms {
			// A stale_command warning: the message waited past the
			// lease before it was read, and was not applied.
			refused = fmt.Errorf("a frame with %d arms, errors %s, warnings %s", len(f.Arm3), f.Errors, f.Warnings)
			return arms, ""
		}
		for _, a := range f.Arm3 {
			if !a.Status.InUse || a.State.Mode != "force" {
				missing++
				example = fmt.Sprintf("%s (in use %v, %s mode, %v N)", a.DeviceID, a.Status.InUse, a.State.Mode, a.State.Force)
			}
		}
		return missing, example
	}
	// paced calls step every period, until it returns true.
	paced := func(step func() bool) {
		for next := time.Now(); ; {
			if step() {
				return
			}
			next = next.Add(period)
			time.Sleep(time.Until(next))
		}
	}

	hwtest.EventuallyNil(t, 20*time.Second, "every arm under the command", func() error {
		var err error
		paced(func() bool {
			if n, ex := exchange(); refused != nil {
				t.Fatal(refused)
			} else if n > 0 {
				err = fmt.Errorf("%d arms not, such as %s", n, ex)
			}
			return true
		})
		return err
	})
	start, messages, slowest := time.Now(), 0, time.Duration(0)
	var lost error
	paced(func() bool {
		sent := time.Now()
		n, ex := exchange()
		messages++
		slowest = max(slowest, time.Since(sent))
		if refused != nil {
			lost = refused
			return true
		}
		if n > 0 {
			lost = fmt.Errorf("after %v of one message every %v (%d sent, the slowest answered in %v), %d arms are not under the command, such as %s",
				time.Since(start).Round(time.Millisecond), period, messages, slowest.Round(time.Millisecond), n, ex)
			return true
		}
		return time.Since(start) > held
	})
	if lost != nil {
		return lost
	}
	if lapsed := ts.eventsNamed(t, "control-lease-expired", head.SessionID); len(lapsed) > 0 {
		return fmt.Errorf("%d leases lapsed under a message every %v (the slowest answered in %v), such as %s", len(lapsed), period, slowest.Round(time.Millisecond), lapsed[0])
	}
	t.Logf("%d messages commanding %d arms, the slowest answered in %v", messages, arms, slowest.Round(time.Millisecond))
	return nil
}

// eventsNamed is every event named name about session the service
// published, as JSON (the ring must still hold them all: it fails the test
// otherwise).
func (ts *testService) eventsNamed(t *testing.T, name string, session uint64) []string {
	t.Helper()
	r := ts.do("GET", ts.base+"/events?since=0&limit=10000", "")
	var page struct {
		Data struct {
			Events []json.RawMessage `json:"events"`
			Missed uint64            `json:"missed"`
		} `json:"data"`
	}
	if err := json.Unmarshal(r.body, &page); err != nil || r.status != 200 {
		t.Fatalf("GET /events: %v %s", err, r)
	}
	if page.Data.Missed > 0 {
		t.Fatalf("the event ring lost %d events: a %s among them would not be seen", page.Data.Missed, name)
	}
	var named []string
	for _, e := range page.Data.Events {
		var head struct {
			Name string
			Data struct {
				SessionID uint64 `json:"session_id"`
			}
		}
		if err := json.Unmarshal(e, &head); err != nil {
			t.Fatalf("event %s: %v", e, err)
		}
		if head.Name == name && head.Data.SessionID == session {
			named = append(named, string(e))
		}
	}
	return named
}
