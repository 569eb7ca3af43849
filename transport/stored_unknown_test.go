package transport

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hapticd/hapticd/actors/store"
	"github.com/hapticd/hapticd/hw/hwtest"
)

// unknownRaw is the value of a member this build does not know, as a newer
// build (or a hand edit) wrote it: odd spacing and all, it must come back
// byte for byte.
const unknownRaw = `{"x": 1,  "list": [true, null, {"deep": "é"}]}`

// storedDocs writes every stored document a user has on a device: the
// device's (handedness), the profile's on the device (damping) and the
// profile's session level (lease). It returns the arm's id and the three
// files by kind.
func storedDocs(t *testing.T, dir, profile string) (id string, files map[string]string) {
	t.Helper()
	ts := startService(t, serviceConfig{arms: 1, dir: dir})
	id = ts.armIDs[0]
	c := ts.dial(t, ts.wsURL())
	c.expect()
	if f := c.roundTrip(fmt.Sprintf(`{"session":{"configure":{"profile":{"name":%q},"lease":{"ms":300}}},"arm3":[{"device_id":%q,"configure":{"damping":{"scalar":7}}}]}`, profile, id)); f["errors"] != nil {
		t.Fatalf("pick: %v", f["errors"])
	}
	if r := ts.do(http.MethodPost, ts.base+"/arm3/"+id+"/config/handedness", `"left"`); r.status != 200 {
		t.Fatalf("POST handedness: %v", r)
	}
	_ = c.conn.Close()
	ts.stop()
	folder := filepath.Join(dir, "profiles.v2", store.HashName(profile))
	files = map[string]string{
		"device":          filepath.Join(dir, "devices", "arm3-"+id+".json"),
		"profile device":  filepath.Join(folder, "arm3-"+id+".json"),
		"profile session": filepath.Join(folder, "session.json"),
	}
	for kind, f := range files {
		if _, err := os.Stat(f); err != nil {
			t.Fatalf("the %s document: %v", kind, err)
		}
	}
	return id, files
}

// addUnknown puts members this build does not know at the start of the
// stored document file: future_entry twice (the last counts, as for every
// name) and other_future. only: they are the whole document.
func addUnknown(t *testing.T, file string, only bool) {
	t.Helper()
	members := `"future_entry": "superseded", "future_entry": ` + unknownRaw + `, "other_future": [1, 2]`
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if only {
		b = []byte("{" + members + "}")
	} else {
		i := bytes.IndexByte(b, '{')
		b = []byte(string(b[:i+1]) + members + "," + string(b[i+1:]))
	}
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// members decodes a stored document's top-level members, each value's
// text as the file has it, and counts each name.
func members(t *testing.T, file string) (map[string]json.RawMessage, map[string]int) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	doc := map[string]json.RawMessage{}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%s: %v\n%s", file, err, b)
	}
	counts := map[string]int{}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.Token() // {
	for dec.More() {
		tok, _ := dec.Token()
		counts[tok.(string)]++
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return doc, counts
}

// A stored document holding members this build does not know (a newer
// build's entry after a downgrade, a misspelt name) keeps them, value for
// value as written, over a change of another entry of the document (a
// POST, a DELETE, a WebSocket change written behind): a downgrade for a
// day and an upgrade back lose nothing. On main they were ignored at the
// read and gone from the file at its next write, with no copy.
func TestStoredUnknownMembersSurviveAWrite(t *testing.T) {
	const profile = "lab:keep"
	type change struct {
		name  string
		kind  string // which document it writes
		write func(t *testing.T, ts *testService, c *wsClient, id string)
		// entry and want: the member it changes, as the file must have it.
		entry, want string
	}
	post := func(route, body string) func(*testing.T, *testService, *wsClient, string) {
		return func(t *testing.T, ts *testService, _ *wsClient, id string) {
			if r := ts.do(http.MethodPost, ts.base+"/arm3/"+id+"/config/"+route, body); r.status != 200 {
				t.Fatalf("POST %s: %v", route, r)
			}
		}
	}
	changes := []change{
		{"device POST", "device", post("passivity/force_clamp", `{"max_force":7}`), "force_clamp", `{"max_force":7}`},
		{"device DELETE", "device", func(t *testing.T, ts *testService, _ *wsClient, id string) {
			if r := ts.do(http.MethodDelete, ts.base+"/arm3/"+id+"/config/handedness", ""); r.status != 200 {
				t.Fatalf("DELETE handedness: %v", r)
			}
		}, "handedness", `"right"`},
		{"profile device POST", "profile device", post("filters/damping?session="+profile, `{"scalar":9}`), "damping", `{"scalar":9}`},
		{"profile device configure", "profile device", func(t *testing.T, ts *testService, c *wsClient, id string) {
			if f := c.roundTrip(fmt.Sprintf(`{"arm3":[{"device_id":%q,"configure":{"damping":{"scalar":9}}}]}`, id)); f["errors"] != nil {
				t.Fatalf("configure: %v", f["errors"])
			}
		}, "damping", `{"scalar":9}`},
		{"profile session configure", "profile session", func(t *testing.T, _ *testService, c *wsClient, _ string) {
			if f := c.roundTrip(`{"session":{"configure":{"lease":{"ms":400}}}}`); f["errors"] != nil {
				t.Fatalf("configure lease: %v", f["errors"])
			}
		}, "lease_ms", `400`},
	}
	for _, only := range []bool{false, true} {
		for _, ch := range changes {
			name := ch.name
			if only {
				if ch.name == "device DELETE" {
					continue // the entry has its default already: nothing to write
				}
				name += " of a document of unknown members only"
			}
			t.Run(name, func(t *testing.T) {
				dir := t.TempDir()
				id, files := storedDocs(t, dir, profile)
				file := files[ch.kind]
				addUnknown(t, file, only)

				ts := startService(t, serviceConfig{arms: 1, dir: dir})
				c := ts.dial(t, ts.wsURL())
				c.expect()
				if f := c.roundTrip(fmt.Sprintf(`{"session":{"configure":{"profile":{"name":%q}}}}`, profile)); f["errors"] != nil {
					t.Fatalf("pick: %v", f["errors"])
				}
				ch.write(t, ts, c, id)
				_ = c.conn.Close()
				ts.stop()

				doc, counts := members(t, file)
				if got := string(doc["future_entry"]); got != unknownRaw || counts["future_entry"] != 1 {
					b, _ := os.ReadFile(file)
					t.Errorf("future_entry after a write of %s: %q (%d times), want %q once; the file:\n%s", ch.entry, got, counts["future_entry"], unknownRaw, b)
				}
				if got := string(doc["other_future"]); got != `[1, 2]` || counts["other_future"] != 1 {
					t.Errorf("other_future after a write of %s: %q (%d times), want [1, 2] once", ch.entry, got, counts["other_future"])
				}
				if !sameJSON(t, doc[ch.entry], ch.want) {
					t.Errorf("%s after its write: %s, want %s", ch.entry, doc[ch.entry], ch.want)
				}
				for name, n := range counts {
					if n != 1 {
						t.Errorf("%s is %d times in the file written", name, n)
					}
				}
				if t.Failed() {
					return
				}

				// A second start reads what the first wrote: the members
				// stay where they are, in the same order, over one more write.
				before, _ := os.ReadFile(file)
				ts = startService(t, serviceConfig{arms: 1, dir: dir})
				c = ts.dial(t, ts.wsURL())
				c.expect()
				c.roundTrip(fmt.Sprintf(`{"session":{"configure":{"profile":{"name":%q}}}}`, profile))
				ch.write(t, ts, c, id)
				_ = c.conn.Close()
				ts.stop()
				after, _ := os.ReadFile(file)
				order := func(b []byte) string {
					return fmt.Sprint(strings.Index(string(b), `"future_entry"`) < strings.Index(string(b), `"other_future"`))
				}
				if doc, _ := members(t, file); string(doc["future_entry"]) != unknownRaw || order(before) != order(after) {
					t.Errorf("after a second start and write:\n%s\nwant the unknown members as before:\n%s", after, before)
				}
			})
		}
	}
}

// A profile removed (by the profiles' bound, the one reset of a whole
// stored document the service makes) takes its unknown members with it:
// the profile picked again starts from defaults, with none.
func TestStoredUnknownMembersGoWithTheirProfile(t *testing.T) {
	const profile = "lab:gone"
	dir := t.TempDir()
	id, files := storedDocs(t, dir, profile)
	addUnknown(t, files["profile device"], false)
	addUnknown(t, files["profile session"], false)

	ts := startService(t, serviceConfig{arms: 1, dir: dir, maxProfiles: 1})
	pick := func(name string) {
		c := ts.dial(t, ts.wsURL())
		c.expect()
		if f := c.roundTrip(fmt.Sprintf(`{"session":{"configure":{"profile":{"name":%q}}},"arm3":[{"device_id":%q,"configure":{"damping":{"scalar":5}}}]}`, name, id)); f["errors"] != nil {
			t.Fatalf("pick %s: %v", name, f["errors"])
		}
		if r := ts.do(http.MethodPost, ts.base+"/arm3/"+id+"/config/filters/damping?session="+name, `{"scalar":6}`); r.status != 200 {
			t.Fatalf("POST damping under %s: %v", name, r)
		}
		_ = c.conn.Close()
		hwtest.EventuallyNil(t, 5*time.Second, "the session to end", func() error {
			if n := path(ts.do(http.MethodGet, ts.base+"/sessions", "").env, "data", "session_count"); n != 0.0 {
				return fmt.Errorf("%v sessions still open", n)
			}
			return nil
		})
	}
	pick(profile) // read: the members are kept
	pick("other") // past the bound: the profile is removed
	if _, err := os.Stat(files["profile device"]); !os.IsNotExist(err) {
		t.Fatalf("the profile's document after the bound removed it: %v", err)
	}
	pick(profile) // stored anew
	ts.stop()
	for _, kind := range []string{"profile device", "profile session"} {
		if doc, _ := members(t, files[kind]); doc["future_entry"] != nil || doc["other_future"] != nil {
			b, _ := os.ReadFile(files[kind])
			t.Errorf("the %s document of the profile removed and stored anew has the removed one's unknown members:\n%s", kind, b)
		}
	}
}

// settings.json holding what a newer build wrote and this build does not
// know (a group of its own, a setting in a group this build has, a member
// of a setting's object) keeps each byte for byte over a change through
// the API: a downgrade for a day with one setting changed, and an upgrade
// back, lose nothing. A settings file that is not JSON (a member torn
// mid-value) is what it was before: moved aside, the defaults in force.
// On main the members were gone from the file at the POST.
func TestStoredSettingsKeepUnknownMembers(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "settings.json")
	doc := `{"audio": ` + unknownRaw + `, "devices": {"force_scale": 0.75, "max_speed": [1,  2]},` +
		` "features": {"haptic_boost": {"enabled": true}, "grip_hook": {"enabled": true, "strength": 0.25}}}`
	if err := os.WriteFile(file, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	ts := startService(t, serviceConfig{dir: dir})
	if r := ts.do(http.MethodGet, ts.base+"/settings/features/grip_hook/enabled", ""); !jsonEqual(t, r.data(), `true`) {
		t.Fatalf("grip_hook before the change: %v, want the stored true", r)
	}
	if r := ts.do(http.MethodPost, ts.base+"/settings/devices/force_scale", `{"value":0.5}`); r.status != http.StatusOK {
		t.Fatalf("POST force_scale: %v", r)
	}
	ts.stop()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var top map[string]json.RawMessage
	var devices, features, grip map[string]json.RawMessage
	if err := json.Unmarshal(b, &top); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	json.Unmarshal(top["devices"], &devices)
	json.Unmarshal(top["features"], &features)
	json.Unmarshal(features["grip_hook"], &grip)
	for _, c := range []struct{ what, got, want string }{
		{"audio", string(top["audio"]), unknownRaw},
		{"devices.max_speed", string(devices["max_speed"]), `[1,  2]`},
		{"features.haptic_boost", string(features["haptic_boost"]), `{"enabled": true}`},
		{"features.grip_hook.strength", string(grip["strength"]), `0.25`},
		{"devices.force_scale", string(devices["force_scale"]), `0.5`},
		{"features.grip_hook.enabled", string(grip["enabled"]), `true`},
	} {
		if c.got != c.want {
			t.Errorf("%s in the file: %s, want %s\n%s", c.what, c.got, c.want, b)
		}
	}

	// A torn member: the file is not JSON, as any torn settings file.
	torn := []byte(`{"audio": {"x": 1, "devices": {"force_scale": 0.75}}`)
	if err := os.WriteFile(file, torn, 0o600); err != nil {
		t.Fatal(err)
	}
	ts = startService(t, serviceConfig{dir: dir})
	if r := ts.do(http.MethodGet, ts.base+"/settings/devices/force_scale", ""); !jsonEqual(t, r.data(), `1`) {
		t.Errorf("force_scale with a torn settings file: %v, want the default 1", r)
	}
	aside, _ := filepath.Glob(file + ".corrupt-*")
	if len(aside) != 1 {
		t.Fatalf("moved aside: %v, want the torn file", aside)
	}
	if got, _ := os.ReadFile(aside[0]); !bytes.Equal(got, torn) {
		t.Errorf("the file moved aside has %s, want the torn bytes", got)
	}
}

// A device's document whose members this build does not know are over
// what it writes back (store.MaxKept) is read, its values in force; a
// POST of one of its entries answers 500 internal naming the file, the
// largest member and the fix, and changes nothing: the file is as it was,
// the value in force too. On main the member was copied and fsynced at
// every write, whatever its size.
func TestKeptMembersOverTheLimitAnswer500(t *testing.T) {
	dir := t.TempDir()
	id, files := storedDocs(t, dir, "lab:big")
	file := files["device"]
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.IndexByte(b, '{')
	b = []byte(string(b[:i+1]) + `"huge_future": "` + strings.Repeat("x", store.MaxKept) + `",` + string(b[i+1:]))
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	ts := startService(t, serviceConfig{arms: 1, dir: dir})
	url := ts.base + "/arm3/" + id + "/config/handedness"
	if r := ts.do(http.MethodGet, url, ""); !jsonEqual(t, r.data(), `"left"`) {
		t.Fatalf("handedness: %v, want the stored left", r)
	}
	r := ts.do(http.MethodPost, url, `"right"`)
	msg, _ := r.env["error"].(string)
	if r.status != http.StatusInternalServerError || r.env["code"] != "internal" {
		t.Fatalf("POST over a document with %d bytes of unknown members: %v, want 500 internal", store.MaxKept, r)
	}
	for _, want := range []string{file, "huge_future", "nothing was changed", "move them out of the file", "restart"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q does not say %q", msg, want)
		}
	}
	if r := ts.do(http.MethodGet, url, ""); !jsonEqual(t, r.data(), `"left"`) {
		t.Errorf("handedness after the refused POST: %v, want left still", r)
	}
	if after, _ := os.ReadFile(file); !bytes.Equal(after, b) {
		t.Errorf("the refused POST changed the file")
	}
}
