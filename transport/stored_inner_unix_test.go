//go:build unix

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

	"github.com/hapticd/hapticd/actors/store"
)

// A POST (or DELETE) that sets an entry to the value in force writes, so
// that a newer build's field kept inside the entry goes with the value it
// was part of. When that write cannot be made (a folder the service may
// not write into, members over the 4 MiB kept limit elsewhere in the
// document) the request still answers as it did before such fields were
// kept: the value set is the one stored, so it is 200, and the file is
// left as it was, the field in it. On main it answered 500 "could not
// store the value durably, so it was not applied".
func TestSettingTheValueInForceAnswersAsBeforeWhenTheWriteCannotBeMade(t *testing.T) {
	if asNobody(t) {
		return
	}
	const profile = "lab:inforce"
	const field = `"future_field": 1`
	huge := `"huge_future": "` + strings.Repeat("x", store.MaxKept) + `"`
	type request struct{ method, route, body string }
	for _, tc := range []struct {
		name string
		kind string   // which stored document
		in   []string // the entry's object the field is in
		req  request  // its body "": the GET's answer, the value in force
	}{
		{"POST of a device's entry", "device", []string{"force_clamp"}, request{http.MethodPost, "passivity/force_clamp", ""}},
		{"DELETE of a device's entry at its default", "device", []string{"force_slew_limit"}, request{http.MethodDelete, "passivity/force_slew_limit", ""}},
		{"POST of a profile's entry", "profile device", []string{"damping"}, request{http.MethodPost, "filters/damping?session=" + profile, ""}},
		{"DELETE of a profile's entry at its default", "profile device", []string{"force_gate"}, request{http.MethodDelete, "filters/force_gate?session=" + profile, ""}},
	} {
		for _, cannot := range []string{"folder not writable", "over the kept limit"} {
			t.Run(tc.name+", "+cannot, func(t *testing.T) {
				dir := t.TempDir()
				id, files := storedDocs(t, dir, profile)
				file := files[tc.kind]
				insertInside(t, file, field, tc.in...)
				if cannot == "over the kept limit" {
					b, err := os.ReadFile(file)
					if err != nil {
						t.Fatal(err)
					}
					i := bytes.IndexByte(b, '{')
					if err := os.WriteFile(file, []byte(string(b[:i+1])+huge+","+string(b[i+1:])), 0o600); err != nil {
						t.Fatal(err)
					}
				}
				ts := startService(t, serviceConfig{arms: 1, dir: dir})
				c := ts.dial(t, ts.wsURL())
				c.expect()
				if f := c.roundTrip(fmt.Sprintf(`{"session":{"configure":{"profile":{"name":%q}}}}`, profile)); f["errors"] != nil {
					t.Fatalf("pick: %v", f["errors"])
				}
				url := ts.base + "/arm3/" + id + "/config/" + tc.req.route
				inForce := ts.do(http.MethodGet, url, "")
				if inForce.status != 200 {
					t.Fatalf("GET: %v", inForce)
				}
				body := tc.req.body
				if tc.req.method == http.MethodPost {
					b, _ := json.Marshal(inForce.data())
					body = string(b)
				}
				folder := filepath.Dir(file)
				if cannot == "folder not writable" {
					if err := os.Chmod(folder, 0o555); err != nil {
						t.Fatal(err)
					}
					defer os.Chmod(folder, 0o700)
				}
				before, _ := os.ReadFile(file)
				r := ts.do(tc.req.method, url, body)
				b, _ := json.Marshal(inForce.data())
				if r.status != 200 || !jsonEqual(t, r.data(), string(b)) {
					t.Errorf("%s %s of the value in force: %v, want 200 with %s as before", tc.req.method, tc.req.route, r, b)
				}
				if after, _ := os.ReadFile(file); !bytes.Equal(after, before) {
					t.Errorf("the file changed:\n%s", after)
				}
				if got, _ := memberAt(t, file, append(tc.in, "future_field")...); string(got) != "1" {
					t.Errorf("the field in the file: %s, want it kept", got)
				}
				// Writable again for the profile's session document, which
				// the shutdown flushes.
				if err := os.Chmod(folder, 0o700); err != nil {
					t.Fatal(err)
				}
				_ = c.conn.Close()
				ts.stop()
			})
		}
	}
}
