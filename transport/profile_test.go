package transport

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hapticd/hapticd/actors/store"
	"github.com/hapticd/hapticd/hw/hwtest"
)

// TestAnyValidProfileNameIsStored uses names within the 64-character limit
// whose escaped form is over 200 bytes: a WebSocket configure and an HTTP
// POST under each are stored and come back after a restart.
func TestAnyValidProfileNameIsStored(t *testing.T) {
	for _, name := range []string{strings.Repeat("é", 34), strings.Repeat("😀", 17), strings.Repeat("x", 64)} {
		t.Run(fmt.Sprintf("%d runes", len([]rune(name))), func(t *testing.T) {
			dir := t.TempDir()
			ts := startService(t, serviceConfig{arms: 1, dir: dir})
			id := ts.armIDs[0]
			c := ts.dial(t, ts.wsURL())
			c.expect()
			f := c.roundTrip(fmt.Sprintf(`{"session":{"configure":{"profile":{"name":%q}}},"arm3":[{"device_id":%q,"configure":{"damping":{"scalar":7}}}]}`, name, id))
			if f["errors"] != nil {
				t.Fatalf("configure under the profile: %v", f["errors"])
			}
			r := ts.do("POST", ts.base+"/arm3/0/config/basis?session="+url.QueryEscape(name), `{"permutation":"ZYX"}`)
			if r.status != 200 {
				t.Fatalf("POST under the profile: %v", r)
			}
			_ = c.conn.Close()
			ts.stop()

			ts2 := startService(t, serviceConfig{arms: 1, dir: dir})
			c2 := ts2.dial(t, ts2.wsURL())
			c2.expect()
			f = c2.roundTrip(fmt.Sprintf(`{"session":{"configure":{"profile":{"name":%q}},"force_render_full_state":{}}}`, name))
			if !jsonEqual(t, path(f, "arm3", 0, "config", "filters", "damping"), `{"scalar":7}`) || path(f, "arm3", 0, "config", "basis", "permutation") != "ZYX" {
				t.Fatalf("profile config after restart: %v", path(f, "arm3", 0, "config"))
			}
		})
	}
}

// TestEarlierProfileLayoutStillLoads puts a profile in the layout of
// earlier versions (profiles/<escaped name>/) and starts the service on it.
func TestEarlierProfileLayoutStillLoads(t *testing.T) {
	dir := t.TempDir()
	const name = "lab:rig1"
	ts := startService(t, serviceConfig{arms: 1, dir: dir})
	id := ts.armIDs[0]
	c := ts.dial(t, ts.wsURL())
	c.expect()
	c.roundTrip(fmt.Sprintf(`{"session":{"configure":{"profile":{"name":%q},"lease":{"ms":250}}},"arm3":[{"device_id":%q,"configure":{"damping":{"scalar":7}}}]}`, name, id))
	_ = c.conn.Close()
	ts.stop()
	// The same documents, where an earlier version kept them.
	old := filepath.Join(dir, "profiles", store.EscapeName(name))
	if err := os.MkdirAll(filepath.Dir(old), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, "profiles.v2", store.HashName(name)), old); err != nil {
		t.Fatal(err)
	}

	ts2 := startService(t, serviceConfig{arms: 1, dir: dir})
	c2 := ts2.dial(t, ts2.wsURL())
	c2.expect()
	f := c2.roundTrip(fmt.Sprintf(`{"session":{"configure":{"profile":{"name":%q}},"force_render_full_state":{}}}`, name))
	if !jsonEqual(t, path(f, "arm3", 0, "config", "filters", "damping"), `{"scalar":7}`) || num(path(f, "session", "config", "lease", "ms")) != 250 {
		t.Fatalf("profile of the earlier layout not loaded: %v %v", path(f, "arm3", 0, "config", "filters"), path(f, "session"))
	}
	if _, err := os.Stat(old); !os.IsNotExist(err) {
		t.Fatalf("the earlier layout's folder is still there after the move: %v", err)
	}
}

// TestStoredProfilesAreBounded picks more profiles than the bound: the
// least recently used one is removed, the others keep their config.
func TestStoredProfilesAreBounded(t *testing.T) {
	dir := t.TempDir()
	ts := startService(t, serviceConfig{arms: 1, dir: dir, maxProfiles: 2})
	id := ts.armIDs[0]
	use := func(name string, damping int) {
		c := ts.dial(t, ts.wsURL())
		c.expect()
		c.roundTrip(fmt.Sprintf(`{"session":{"configure":{"profile":{"name":%q}}},"arm3":[{"device_id":%q,"configure":{"damping":{"scalar":%d}}}]}`, name, id, damping))
		_ = c.conn.Close()
		// Session end flushes its profile: wait until it is on disk.
		hwtest.EventuallyNil(t, 5*time.Second, "the session profile on disk", func() error {
			if _, err := os.Stat(filepath.Join(dir, "profiles.v2", store.HashName(name), "session.json")); err != nil {
				return err
			}
			if n := path(ts.do("GET", ts.base+"/sessions", "").env, "data", "session_count"); n != 0.0 {
				return fmt.Errorf("%v sessions still open", n)
			}
			return nil
		})
	}
	use("first", 1)
	use("second", 2)
	use("third", 3)
	entries, err := os.ReadDir(filepath.Join(dir, "profiles.v2"))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 {
		t.Fatalf("%d stored profiles, want the bound of 2", len(entries))
	}
	if _, err := os.Stat(filepath.Join(dir, "profiles.v2", store.HashName("first"))); !os.IsNotExist(err) {
		t.Fatalf("the least recently used profile is still stored (%v)", err)
	}
	c := ts.dial(t, ts.wsURL())
	c.expect()
	f := c.roundTrip(`{"session":{"configure":{"profile":{"name":"second"}},"force_render_full_state":{}}}`)
	if !jsonEqual(t, path(f, "arm3", 0, "config", "filters", "damping"), `{"scalar":2}`) {
		t.Fatalf("a kept profile lost its config: %v", path(f, "arm3", 0, "config", "filters"))
	}
}

// Two sessions of one profile on one arm (two instances of an app, or an
// app and a lab tool): A sets damping, then B changes force_gate, each
// acknowledged. The profile's next session, after a restart, has both:
// a session's change stores the entries it changed, never its whole
// config over the entries another session stored.
func TestTwoSessionsOfAProfileKeepEachOthersEntries(t *testing.T) {
	const profile = "co.example:two-instances"
	type change func(t *testing.T, ts *testService, c *wsClient, sid string)
	configure := func(entry string) change {
		return func(t *testing.T, ts *testService, c *wsClient, _ string) {
			if f := c.roundTrip(fmt.Sprintf(`{"arm3":[{"device_id":%q,"configure":%s}]}`, ts.armIDs[0], entry)); f["errors"] != nil {
				t.Fatalf("configure %s: %v", entry, f["errors"])
			}
		}
	}
	request := func(method, route, body string) change {
		return func(t *testing.T, ts *testService, _ *wsClient, sid string) {
			if r := ts.do(method, ts.base+"/arm3/0/config/"+route+"?session="+sid, body); r.status != 200 {
				t.Fatalf("%s %s: %v", method, route, r)
			}
		}
	}
	for _, c := range []struct {
		name   string
		before change // B, before A's change
		a, b   change
		gate   string // force_gate the next session has
	}{
		{"configure then configure", nil, configure(`{"damping":{"scalar":7}}`), configure(`{"force_gate":{"gain":0.5}}`), `{"gain":0.5}`},
		{"POST then configure", nil, request("POST", "filters/damping", `{"scalar":7}`), configure(`{"force_gate":{"gain":0.5}}`), `{"gain":0.5}`},
		{"configure then POST", nil, configure(`{"damping":{"scalar":7}}`), request("POST", "filters/force_gate", `{"gain":0.5}`), `{"gain":0.5}`},
		{"configure then DELETE", configure(`{"force_gate":{"gain":0.5}}`), configure(`{"damping":{"scalar":7}}`), request("DELETE", "filters/force_gate", ""), `{"gain":0.3}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			ts := startService(t, serviceConfig{arms: 1, dir: dir})
			var clients [2]*wsClient
			var sids [2]string
			for i := range clients {
				clients[i] = ts.dial(t, ts.wsURL())
				sids[i] = fmt.Sprint(num(clients[i].expect()["session_id"]))
				if f := clients[i].roundTrip(fmt.Sprintf(`{"session":{"configure":{"profile":{"name":%q}}}}`, profile)); f["errors"] != nil {
					t.Fatalf("pick: %v", f["errors"])
				}
			}
			if c.before != nil {
				c.before(t, ts, clients[1], sids[1])
			}
			c.a(t, ts, clients[0], sids[0])
			c.b(t, ts, clients[1], sids[1])
			f := nextSessionOfProfile(t, ts, clients[:], dir, profile)
			filters := path(f, "arm3", 0, "config", "filters")
			if !jsonEqual(t, path(filters, "damping"), `{"scalar":7}`) || !jsonEqual(t, path(filters, "force_gate"), c.gate) {
				t.Errorf("the profile's next session has filters %v; want A's damping {scalar 7} and B's force_gate %s", filters, c.gate)
			}
		})
	}
}

// The profile's session level (basis, lease) is one document too: session A
// of a profile sets the lease, session B of the same profile then the
// basis, and the profile's next session has both.
func TestTwoSessionsOfAProfileKeepEachOthersSessionEntries(t *testing.T) {
	const profile = "co.example:two-instances-session"
	dir := t.TempDir()
	ts := startService(t, serviceConfig{arms: 1, dir: dir})
	var clients [2]*wsClient
	for i := range clients {
		clients[i] = ts.dial(t, ts.wsURL())
		clients[i].expect()
		if f := clients[i].roundTrip(fmt.Sprintf(`{"session":{"configure":{"profile":{"name":%q}}}}`, profile)); f["errors"] != nil {
			t.Fatalf("pick: %v", f["errors"])
		}
	}
	if f := clients[0].roundTrip(`{"session":{"configure":{"lease":{"ms":700}}}}`); f["errors"] != nil {
		t.Fatalf("A's lease: %v", f["errors"])
	}
	if f := clients[1].roundTrip(`{"session":{"configure":{"basis":{"permutation":"ZXY"}}}}`); f["errors"] != nil {
		t.Fatalf("B's basis: %v", f["errors"])
	}
	f := nextSessionOfProfile(t, ts, clients[:], dir, profile)
	if lease, basis := num(path(f, "session", "config", "lease", "ms")), path(f, "session", "config", "basis", "permutation"); lease != 700 || basis != "ZXY" {
		t.Errorf("the profile's next session has lease %v ms and basis %v; want A's 700 and B's ZXY", lease, basis)
	}
}

// nextSessionOfProfile closes clients, stops ts and starts the service again
// over dir, and returns the full frame of a new session picking profile.
func nextSessionOfProfile(t *testing.T, ts *testService, clients []*wsClient, dir, profile string) map[string]any {
	t.Helper()
	for _, cl := range clients {
		_ = cl.conn.Close()
	}
	ts.stop()
	ts2 := startService(t, serviceConfig{arms: 1, dir: dir})
	next := ts2.dial(t, ts2.wsURL())
	next.expect()
	return next.roundTrip(fmt.Sprintf(`{"session":{"configure":{"profile":{"name":%q}},"force_render_full_state":{}}}`, profile))
}
