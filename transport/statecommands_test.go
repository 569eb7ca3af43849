package transport

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hapticd/hapticd/hw/hwtest"
)

// set_gravity_compensation, sent every cycle, changes the device's enable
// and writes it to disk only when it changes: the stored file is untouched
// by repeats, and a changed value survives a restart.
func TestSetGravityCompensationPersistsOnlyChanges(t *testing.T) {
	dir := t.TempDir()
	ts := startService(t, serviceConfig{arms: 1, dir: dir, haplyNames: true})
	arm := ts.armIDs[0]
	c := ts.dial(t, ts.wsURL())
	c.expect()
	file := filepath.Join(dir, "devices", "arm3-"+arm+".json")
	cycle := func(on bool) {
		t.Helper()
		clean(t, freshRoundTrip(c, fmt.Sprintf(`{"inverse3":[{"device_id":%q,"commands":{"probe_position":{},"set_gravity_compensation":%v}}]}`, arm, on)), "set_gravity_compensation")
	}
	cycle(true) // the default: nothing to store
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Fatalf("an unchanged enable was stored (%v)", err)
	}
	cycle(false)
	st, err := os.Stat(file)
	if err != nil {
		t.Fatalf("the changed enable was not stored: %v", err)
	}
	for range 200 {
		cycle(false)
	}
	if again, err := os.Stat(file); err != nil || !again.ModTime().Equal(st.ModTime()) {
		t.Fatalf("repeating the same enable rewrote the file (%v → %v, %v)", st.ModTime(), again.ModTime(), err)
	}
	if r := ts.do("GET", ts.base+"/inverse3/0/config/gravity_compensation", ""); !jsonEqual(t, r.data(), `{"enabled":false,"scaling_factor":1}`) {
		t.Fatalf("gravity_compensation %v", r)
	}
	// Another session may not change it while this one controls the arm.
	clean(t, freshRoundTrip(c, fmt.Sprintf(`{"session":{"configure":{"lease":{"ms":1000}}},"inverse3":[{"device_id":%q,"commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":0}}}}]}`, arm)), "force")
	other := ts.dial(t, ts.wsURL())
	other.expect()
	f := other.roundTrip(fmt.Sprintf(`{"inverse3":[{"device_id":%q,"commands":{"set_gravity_compensation":true}}]}`, arm))
	if path(f, "errors", 0, "code") != "device_busy" || path(f, "errors", 0, "path") != "inverse3[0].commands.set_gravity_compensation" {
		t.Fatalf("set_gravity_compensation under another session's control: %v", f["errors"])
	}
	ts.stop()
	ts = startService(t, serviceConfig{arms: 1, dir: dir, haplyNames: true})
	if r := ts.do("GET", ts.base+"/inverse3/0/config/gravity_compensation", ""); !jsonEqual(t, r.data(), `{"enabled":false,"scaling_factor":1}`) {
		t.Fatalf("after a restart: %v", r)
	}
}

// set_transform moves what the session sees and only that session: the
// force a session sends is turned by its own workspace, another session's
// view is unchanged, and a partial update keeps the parts it omits.
func TestSetTransformIsPerSession(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 1, haplyNames: true})
	arm := ts.armIDs[0]
	nav := ts.dial(t, ts.wsURL())
	obs := ts.dial(t, ts.wsURL())
	nav.expect()
	obs.expect()
	// Turned 90° about Z: the device's +X shows as the session's +Y, so the
	// session's +X is the device's -Y.
	clean(t, freshRoundTrip(nav, fmt.Sprintf(`{"inverse3":[{"device_id":%q,"commands":{"set_transform":{"rotation":{"w":0.7071067811865476,"x":0,"y":0,"z":0.7071067811865476}}}}]}`, arm)), "set_transform")
	clean(t, freshRoundTrip(nav, fmt.Sprintf(`{"inverse3":[{"device_id":%q,"commands":{"set_transform":{"position":{"x":0,"y":0,"z":0.25}}}}]}`, arm)), "set_transform")
	hwtest.EventuallyNil(t, 5*time.Second, "the force through the transform", func() error {
		f := freshRoundTrip(nav, fmt.Sprintf(`{"inverse3":[{"device_id":%q,"commands":{"set_cursor_force":{"vector":{"x":1.5,"y":0,"z":0}}}}]}`, arm))
		clean(t, f, "force")
		o := obs.roundTrip(`{}`)
		mine := vec(path(f, "inverse3", 0, "state", "current_cursor_force"))
		theirs := vec(path(o, "inverse3", 0, "state", "current_cursor_force"))
		if !near3(mine, [3]float64{1.5, 0, 0}, 0.01) || !near3(theirs, [3]float64{0, -1.5, 0}, 0.01) {
			return fmt.Errorf("force %v in the navigator's workspace, %v in the observer's view", mine, theirs)
		}
		if tr := path(f, "inverse3", 0, "state", "transform"); path(tr, "rotation", "z") == nil || path(tr, "position", "z") != 0.25 || path(tr, "scale") != nil {
			return fmt.Errorf("navigator's state.transform %v", tr)
		}
		if tr := path(o, "inverse3", 0, "state", "transform"); !strings.EqualFold(fmt.Sprint(tr), "map[]") {
			return fmt.Errorf("observer's state.transform %v", tr)
		}
		return nil
	})
}

// Under the product names an index counts the devices of the collection
// the name writes; an id matches any grip; *verse_grip takes every grip.
func TestGripNamesInPaths(t *testing.T) {
	ts := startService(t, serviceConfig{grips: 1, wiredGrips: 1, haplyNames: true})
	c := ts.dial(t, ts.wsURL())
	c.expect()
	wireless, wired := ts.gripIDs[0], ts.wiredIDs[0]
	for _, tt := range []struct {
		path string
		want []string
	}{
		{"/wireless_verse_grip/0", []string{wireless}},
		{"/verse_grip/0", []string{wired}},
		{"/verse_grip/" + wireless, []string{wireless}}, // by id: any grip
		{"/grip/1", []string{wired}},
		{"/custom_verse_grip/*", []string{wireless, wired}},
		{"/*verse_grip/*", []string{wireless, wired}},
	} {
		r := ts.do("POST", ts.base+tt.path+"/config/basis?session=:-1", `{"permutation":"XZY"}`)
		var got []string
		for i := range tt.want {
			id, _ := path(r.env, "applied_to", i, "device_id").(string)
			got = append(got, id)
		}
		if r.status != 200 || fmt.Sprint(got) != fmt.Sprint(tt.want) || path(r.env, "applied_to", len(tt.want)) != nil {
			t.Errorf("POST %s: %v, want it applied to %v", tt.path, r, tt.want)
		}
	}
	if r := ts.do("GET", ts.base+"/verse_grip/1/config/basis?session=:-1", ""); r.status != 404 {
		t.Errorf("GET /verse_grip/1 with one wired grip: %v", r)
	}
}

// The 3.0 format writes the same names, keyed by id, and takes every name.
func TestLegacyFormatNames(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 1, grips: 1, haplyNames: true})
	arm, grip := ts.armIDs[0], ts.gripIDs[0]
	c := ts.dial(t, ts.legacyWS())
	inv := c.expect()
	if path(inv, "inverse3", arm, "config", "type") != "inverse3" || path(inv, "wireless_verse_grip", grip, "state") == nil || inv["arm3"] != nil {
		t.Fatalf("3.0 inventory: %v", inv)
	}
	for _, key := range []string{"inverse3", "arm3"} {
		f := freshRoundTrip(c, fmt.Sprintf(`{%q:{%q:{"commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":1}},"set_gravity_compensation":true}}},"verse_grip":{%q:{"commands":{"probe_orientation":{}}}}}`, key, arm, grip))
		clean(t, f, key)
		if path(f, "inverse3", arm, "state", "mode") == nil {
			t.Fatalf("3.0 frame: %v", f)
		}
	}
	if r := ts.do("GET", ts.legacy+"/3.0/*inverse/0/config/handedness", ""); r.status != 200 || r.data() != "right" {
		t.Fatalf("3.0 family selector: %v", r)
	}
}
