package transport

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
)

// docJSONBlock is the first ```json block of docs/protocol.md after the
// heading given.
func docJSONBlock(t *testing.T, doc, heading string) string {
	t.Helper()
	i := strings.Index(doc, "\n"+heading+"\n")
	if i < 0 {
		t.Fatalf("docs/protocol.md has no %q", heading)
	}
	rest := doc[i:]
	start := strings.Index(rest, "```json\n")
	if start < 0 {
		t.Fatalf("docs/protocol.md has no json block under %q", heading)
	}
	rest = rest[start+len("```json\n"):]
	return rest[:strings.Index(rest, "```")]
}

// docSessionExample is an inline session message of the docs:
// `{"session": {"configure": ...}}` in backticks.
var docSessionExample = regexp.MustCompile("`(\\{\"session\": \\{\"configure\": [^`]*\\})`")

// TestProtocolDocExamplesRunAsWritten: the JSON examples docs/protocol.md
// and docs/walkthrough.md give a client, sent as it copies them (with its
// own arm's id for the page's 049D), are accepted and answered as the pages
// say: the effects declaration with only the unknown_effect warning for
// the id it removes, the navigation body as the defaults it says it shows,
// and each session.configure example without an error.
func TestProtocolDocExamplesRunAsWritten(t *testing.T) {
	raw, err := os.ReadFile("../docs/protocol.md")
	if err != nil {
		t.Fatal(err)
	}
	protocolDoc := string(raw)
	raw, err = os.ReadFile("../docs/walkthrough.md")
	if err != nil {
		t.Fatal(err)
	}
	walkthrough := string(raw)

	ts := startService(t, serviceConfig{arms: 1, haplyNames: true})
	arm := ts.armIDs[0]
	ownArm := func(s string) string { return strings.ReplaceAll(s, "049D", arm) }
	c := ts.dial(t, ts.wsURL())
	c.expect() // the inventory
	// The longest lease: the effects are listed while the session holds the
	// arm, and a machine busy with other tests may take 100 ms to GET.
	c.roundTrip(`{"session": {"configure": {"lease": {"ms": 1000}}}}`)

	t.Run("effects", func(t *testing.T) {
		f := c.roundTrip(ownArm(docJSONBlock(t, protocolDoc, "## Effects (servo-rate rendering)")))
		if f["errors"] != nil {
			t.Fatalf("the Effects example was refused: %v", f["errors"])
		}
		// "Removing an id the session does not have is an unknown_effect
		// warning": the example removes "old-wall".
		if !jsonEqual(t, f["warnings"], `[{"code":"unknown_effect","message":"no effect \"old-wall\" on this arm: nothing removed","path":"inverse3[0].effects.remove[0]"}]`) {
			t.Errorf("warnings %v, want the one unknown_effect of the removed id", f["warnings"])
		}
		r := ts.do(http.MethodGet, ts.base+"/inverse3/0/effects", "")
		var ids []string
		effects, _ := path(r.data(), "effects").([]any)
		for _, e := range effects {
			ids = append(ids, fmt.Sprint(path(e, "id")))
		}
		// "buzz" lasts 200 ms: a loaded machine may have seen it end.
		if r.status != http.StatusOK || len(ids) == 0 || ids[0] != "floor" {
			t.Errorf("GET /inverse3/0/effects after the example: %v, want the floor wall (and buzz)", r)
		}
	})

	t.Run("navigation", func(t *testing.T) {
		example := docJSONBlock(t, protocolDoc, "## Navigation (`navigation`)")
		route := ts.base + "/inverse3/0/config/navigation?session=:-1"
		// "members left out take the defaults above (so {"mode": "bubble"}
		// turns the default bubble on)": the example is the defaults.
		for _, body := range []string{`{"mode": "bubble"}`, example} {
			r := ts.do(http.MethodPost, route, body)
			if r.status != http.StatusOK {
				t.Fatalf("POST %s: %v", body, r)
			}
			if !jsonEqual(t, r.data(), example) {
				got, _ := json.Marshal(r.data())
				t.Errorf("POST %s answered %s, the page shows %s", body, got, example)
			}
		}
		if r := ts.do(http.MethodDelete, route, ""); r.status != http.StatusOK || path(r.data(), "mode") != "off" {
			t.Errorf("DELETE: %v, want mode off", r)
		}
	})

	t.Run("session configure", func(t *testing.T) {
		var examples []string
		for _, d := range []string{protocolDoc, walkthrough} {
			for _, m := range docSessionExample.FindAllStringSubmatch(d, -1) {
				examples = append(examples, m[1])
			}
		}
		if len(examples) < 3 {
			t.Fatalf("found %d session.configure examples in the pages, want the subscribe examples", len(examples))
		}
		for _, e := range examples {
			if !json.Valid([]byte(e)) {
				t.Errorf("the pages' example %s is not JSON", e)
				continue
			}
			// A subscription naming state fields narrows the frames that
			// answer it; one without "state" widens them again.
			c.stateSubset = strings.Contains(e, `"state": [`)
			if f := c.roundTrip(ownArm(e)); f["errors"] != nil {
				t.Errorf("%s was refused: %v", e, f["errors"])
			}
		}
	})
}
