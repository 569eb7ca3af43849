package transport

import (
	"net/http"
	"strings"
	"testing"
)

// Grip pairing and the expert status: what hapticd can say, in documents
// the OpenAPI schema describes (ts.do checks every answer against it).
func TestPairingAndExpertStatusAnswerClearly(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 1, grips: 1, wiredGrips: 1, haplyNames: true})
	r := ts.do(http.MethodGet, ts.base+"/pairing", "")
	if r.status != http.StatusOK {
		t.Fatalf("GET /pairing: %v", r)
	}
	want := map[string]string{ts.gripIDs[0]: "wireless_verse_grip", ts.wiredIDs[0]: "verse_grip"}
	grips, _ := path(r.env, "data", "grips").([]any)
	if len(grips) != len(want) {
		t.Fatalf("GET /pairing lists %v, want the two grips", grips)
	}
	for i := range grips {
		id, _ := path(grips[i], "device_id").(string)
		if want[id] == "" || path(grips[i], "device_type") != want[id] {
			t.Fatalf("grip %d: %v, want one of %v named as its frames name it", i, grips[i], want)
		}
		if p, ok := path(grips[i], "paired_with").([]any); !ok || len(p) != 0 {
			t.Fatalf("grip %s paired with %v: hapticd pairs nothing", id, path(grips[i], "paired_with"))
		}
	}
	if msg, _ := path(r.env, "data", "message").(string); !strings.Contains(msg, "does not pair") {
		t.Fatalf("GET /pairing does not say why nothing is paired: %v", r.env)
	}

	r = ts.do(http.MethodGet, ts.base+"/expert/status", "")
	if r.status != http.StatusOK || path(r.env, "data", "available") != false {
		t.Fatalf("GET /expert/status: %v", r)
	}
	see, _ := path(r.env, "data", "see").([]any)
	for _, s := range see {
		if got := ts.do(http.MethodGet, ts.base+s.(string), ""); got.status != http.StatusOK {
			t.Fatalf("the expert status points to %s, which answers %v", s, got)
		}
	}
	if len(see) == 0 {
		t.Fatal("the expert status names no route to look at instead")
	}

	// Neither takes a change: the answer says so in the envelope.
	for _, p := range []string{"/pairing", "/expert/status"} {
		if r := ts.do(http.MethodPost, ts.base+p, `{}`); r.status != http.StatusMethodNotAllowed || r.env["code"] != "method_not_allowed" {
			t.Fatalf("POST %s: %v", p, r)
		}
	}
}
