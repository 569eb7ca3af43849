package transport

import (
	"fmt"
	"math"
	"net/http"
	"testing"
	"time"
)

// TestEffectsFollowAMountChangedOverHTTPAtOnce: a mount or basis POSTed
// for a session (T08's remote configurator) turns the space that session's
// effects were declared in, and the arm renders them in the new space from
// its next tick, not only once the session sends again. The declaring
// session here stays quiet within its lease; another session watches the
// force on the arm. A field of 1 N along the session's +x pushes along the
// device's +x as declared, then where the new view puts the session's +x.
func TestEffectsFollowAMountChangedOverHTTPAtOnce(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 1})
	id := ts.armIDs[0]
	c := ts.dial(t, ts.wsURL())
	sid := itoa(int(num(c.expect()["session_id"])))
	watcher := ts.dial(t, ts.wsURL())
	watcher.expect()
	c.roundTrip(`{"session":{"configure":{"lease":{"ms":1000}}}}`)
	for _, tc := range []struct {
		entry, body string
		want        [3]float64 // the device's axis the session's +x becomes
	}{
		{"mount", fmt.Sprintf(`{"transform":{"rotation":{"w":%g,"x":0,"y":0,"z":%g}}}`, math.Cos(math.Pi/4), math.Sin(math.Pi/4)), [3]float64{0, -1, 0}}, // 90° about z
		{"basis", `{"permutation":"YXZ"}`, [3]float64{0, 1, 0}},
	} {
		t.Run(tc.entry, func(t *testing.T) {
			// Starved, the second of lease can run out before the watcher
			// sees the force; such an attempt says nothing and is made again.
			const attempts = 3
			for attempt := 1; ; attempt++ {
				void := effectsFollowAView(t, ts, c, watcher, id, sid, tc.entry, tc.body, tc.want)
				if void == "" {
					return
				}
				if attempt == attempts {
					t.Fatalf("%s (in each of %d attempts)", void, attempts)
				}
				t.Logf("attempt %d voided, declaring again: %s", attempt, void)
			}
		})
	}
}

// effectsFollowAView is one attempt of
// TestEffectsFollowAMountChangedOverHTTPAtOnce: c declares the field under
// the default view, then body is POSTed to c's entry on the arm;
// it returns why the attempt says nothing (the lease lapsed first), "" when
// it passed.
func effectsFollowAView(t *testing.T, ts *testService, c, watcher *wsClient, id, sid, entry, body string, want [3]float64) (void string) {
	t.Helper()
	route := ts.base + "/arm3/" + id + "/config/" + entry + "?session=" + sid
	// The default view: no entry of an earlier attempt or case left.
	for _, entry := range []string{"mount", "basis"} {
		reset := ts.base + "/arm3/" + id + "/config/" + entry + "?session=" + sid
		if r := ts.do(http.MethodDelete, reset, ""); r.status != http.StatusOK {
			t.Fatalf("DELETE %s: %v", reset, r)
		}
	}
	field := `{"clear":true,"set":[{"id":"push","type":"field","force":{"x":1,"y":0,"z":0},"origin":{"x":0,"y":0,"z":0},"radius":5,"valid_ms":10000}]}`
	declared := time.Now()
	if f := c.roundTrip(effectsMsg(id, field)); f["errors"] != nil {
		t.Fatalf("field refused: %v", f["errors"])
	}
	// forceReaches polls the watcher's frames until the arm pushes want;
	// by "by", a frame that still shows another force fails the test.
	forceReaches := func(want [3]float64, by time.Time, what string) (void string) {
		var got [3]float64
		for {
			f := watcher.roundTrip(`{}`)
			// A frame may show the arm as it was before the loop's
			// next tick took the declaration: only past the lease is a
			// free arm a lapse.
			if path(f, "arm3", 0, "status", "in_use") != true && time.Since(declared) > 900*time.Millisecond {
				return fmt.Sprintf("the lease lapsed before the watcher saw %s (force %v)", what, got)
			}
			got = vec(path(f, "arm3", 0, "state", "current_cursor_force"))
			near := true
			for i := range got {
				near = near && math.Abs(got[i]-want[i]) < 0.05
			}
			if near {
				return ""
			}
			if time.Now().After(by) {
				t.Fatalf("%s: the arm pushes %v, want %v", what, got, want)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	if void := forceReaches([3]float64{1, 0, 0}, time.Now().Add(5*time.Second), "the field as declared"); void != "" {
		return void
	}
	if r := ts.do(http.MethodPost, route, body); r.status != http.StatusOK {
		t.Fatalf("POST %s: %v", route, r)
	}
	// The field glides to its new direction over a few ticks; 300 ms is
	// generous for a loaded machine and well inside what a user notices.
	return forceReaches(want, time.Now().Add(300*time.Millisecond), "the field in the turned space, the declaring session quiet")
}
