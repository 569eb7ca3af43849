// The architecture is a test: every package's imports are checked against
// the house of DESIGN.md, so an arrow up fails here with the reason.
package hapticd_test

import (
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/hapticd/hapticd"

// houseRule says which project packages and third-party modules a package
// (and its sub-packages) may import. The standard library is always allowed.
type houseRule struct {
	prefix     string   // package path below the module, e.g. "protocol"
	project    []string // project package prefixes it may import
	thirdParty []string
	why        string
	// importedBy, when set, are the only package prefixes (besides the
	// package's own) that may import it: a package beside the others of
	// its layer that only the layers above use.
	importedBy []string
}

var house = []houseRule{
	{prefix: "protocol", project: []string{"protocol"},
		why: "protocol is wire types and validation: no I/O, no actors, so every transport can share it"},
	{prefix: "hw", project: []string{"hw"},
		thirdParty: []string{"go.bug.st/serial", "github.com/karalabe/hid", "golang.org/x/sys"},
		why:        "hw is drivers and value types: it must not know about actors, sessions or HTTP"},
	// golang.org/x/time (actors, transport): rate.Limiter, the one rate
	// limiter of device-busy events, event logging and events-socket input
	// reports.
	// actors/cluster carries devices across hosts: protoactor's remote
	// speaks gRPC (grpc for its TLS credentials) with protobuf messages
	// (google.golang.org/protobuf for the generated wire types); with
	// automanaged membership protoactor's provider serves its health
	// endpoint with labstack/echo, which the package hands a listener bound
	// to --cluster-bind; with etcd discovery protoactor's etcd provider
	// needs etcd's client (go.etcd.io/etcd/client/v3, given zap's no-op
	// logger so its own output stays out of the service's log). Only the
	// cluster package may use them: a single host links none of it.
	{prefix: "actors/cluster", project: []string{"actors", "protocol", "hw"},
		thirdParty: []string{"github.com/asynkron/protoactor-go", "github.com/labstack/echo", "github.com/rs/zerolog", "go.etcd.io/etcd/client/v3", "go.uber.org/zap", "google.golang.org/grpc", "google.golang.org/protobuf"},
		why:        "the lab's cluster link sits beside the actors, above protocol and hw; only it speaks gRPC and protobuf"},
	{prefix: "actors/recording", project: []string{"actors", "protocol", "hw"},
		thirdParty: []string{"github.com/rs/zerolog"},
		importedBy: []string{"transport", "cmd/hapticd"},
		why:        "recording taps the actors' loops and events and replays into hw drivers; transport serves its routes and cmd its flags, and no actor depends on it"},
	{prefix: "actors", project: []string{"actors", "protocol", "hw"},
		thirdParty: []string{"github.com/asynkron/protoactor-go", "github.com/rs/zerolog", "golang.org/x/sys", "golang.org/x/time"},
		why:        "actors sit below the transports: a device must not depend on how clients reach it"},
	{prefix: "transport/rawsock", project: []string{"transport/rawsock"},
		why: "the sessions' socket layer (raw reads and writes) is shared with the echo baseline, so it imports nothing of hapticd"},
	{prefix: "transport/schematest", project: []string{"transport/schematest", "protocol"},
		thirdParty: []string{"github.com/santhosh-tekuri/jsonschema/v6"},
		why:        "schematest is a test helper: it validates what a running service writes against the schema it serves, and only tests import it"},
	{prefix: "transport", project: []string{"transport", "protocol", "actors"},
		// Prometheus: GET /metrics is an HTTP route like the others; the
		// collector only reads what actors and loops already count.
		thirdParty: []string{"github.com/gorilla/websocket", "github.com/julienschmidt/httprouter", "github.com/rs/zerolog", "github.com/asynkron/protoactor-go", "golang.org/x/time",
			"github.com/prometheus/client_golang", "github.com/prometheus/client_model"},
		why: "transports reach devices only through actors, never a driver directly"},
	{prefix: "bench/echoserver", project: []string{"bench/echoserver", "transport/rawsock"},
		thirdParty: []string{"github.com/gorilla/websocket"},
		why:        "the echo baseline is a bare WebSocket server on the sessions' socket layer: hapticbench and hapticd baseline-arms both run it, so it imports nothing else of either"},
	{prefix: "bench", project: []string{"bench", "protocol"},
		thirdParty: []string{"github.com/gorilla/websocket", "golang.org/x/sys"},
		why: "the load generator is a client: it sees the service only as a client would " +
			"(x/sys only to place its own threads and the servers it starts on CPUs, --cpus)"},
	{prefix: "cmd/hapticbench", project: []string{"bench"},
		why: "the bench command line is a thin shell over bench"},
	{prefix: "cmd/hapticpkg",
		thirdParty: []string{"github.com/goreleaser/nfpm/v2"},
		why:        "the packager is a release tool: it packs the built binary and packaging/ files with nFPM and imports no hapticd code"},
}

type listedPackage struct {
	ImportPath string
	Imports    []string
	Standard   bool
}

func TestHouseRules(t *testing.T) {
	cmd := exec.Command("go", "list", "-json", module+"/...")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(out)
	checked := 0
	for {
		var p listedPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decode go list output: %v", err)
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
		rule, ok := ruleFor(rel)
		if !ok {
			continue
		}
		checked++
		for _, imp := range p.Imports {
			if !allowed(rule, imp) {
				t.Errorf("%s imports %s: not allowed by the house (%s)", rel, imp, rule.why)
			}
			if dep, ok := ruleFor(strings.TrimPrefix(imp, module+"/")); ok && !importableBy(dep, rel) {
				t.Errorf("%s imports %s: only %v may (%s)", rel, imp, dep.importedBy, dep.why)
			}
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("go list: %v", err)
	}
	if checked == 0 {
		t.Fatal("no package was checked: the module path or go list output changed")
	}
}

func ruleFor(rel string) (houseRule, bool) {
	for _, r := range house {
		if rel == r.prefix || strings.HasPrefix(rel, r.prefix+"/") {
			return r, true
		}
	}
	return houseRule{}, false
}

func allowed(r houseRule, imp string) bool {
	if rel, ok := strings.CutPrefix(imp, module+"/"); ok {
		for _, p := range r.project {
			if rel == p || strings.HasPrefix(rel, p+"/") {
				return true
			}
		}
		return false
	}
	first, _, _ := strings.Cut(imp, "/")
	if !strings.Contains(first, ".") {
		return true // standard library (and "C" for cgo)
	}
	for _, p := range r.thirdParty {
		if imp == p || strings.HasPrefix(imp, p+"/") {
			return true
		}
	}
	return false
}

// importableBy says whether the package rel may import one under r.
func importableBy(r houseRule, rel string) bool {
	if r.importedBy == nil || rel == r.prefix || strings.HasPrefix(rel, r.prefix+"/") {
		return true
	}
	for _, p := range r.importedBy {
		if rel == p || strings.HasPrefix(rel, p+"/") {
			return true
		}
	}
	return false
}

func TestHouseRuleMatcher(t *testing.T) {
	tests := []struct {
		pkg, imp string
		want     bool
	}{
		{"protocol", "encoding/json", true},
		{"protocol/v30", module + "/protocol", true},
		{"protocol", module + "/actors", false},
		{"protocol/space", module + "/hw", false},
		{"hw/sim", module + "/hw", true},
		{"hw", module + "/transport", false},
		{"hw/serial", "go.bug.st/serial", true},
		{"hw/sim", "github.com/rs/zerolog", false},
		{"actors", module + "/transport", false},
		{"actors/loop", module + "/hw", true},
		{"transport", module + "/hw/sim", false},
		{"bench", module + "/actors", false},
		{"bench", "github.com/gorilla/websocket", true},
		{"cmd/hapticbench", module + "/hw/sim", false},
		{"transport", "github.com/prometheus/client_golang/prometheus", true},
		{"actors", "github.com/prometheus/client_golang/prometheus", false},
		{"cmd/hapticpkg", "github.com/goreleaser/nfpm/v2/deb", true},
		{"cmd/hapticpkg", module + "/protocol", false},
		{"actors/cluster", "google.golang.org/grpc/credentials", true},
		{"actors/cluster/wire", "google.golang.org/protobuf/reflect/protoreflect", true},
		{"actors", "google.golang.org/grpc", false},
		{"protocol", "github.com/asynkron/protoactor-go/remote", false},
		{"transport/schematest", "github.com/santhosh-tekuri/jsonschema/v6", true},
		{"transport", "github.com/santhosh-tekuri/jsonschema/v6", false},
		{"protocol/schema", "github.com/santhosh-tekuri/jsonschema/v6", false},
		{"actors/recording", module + "/hw/replay", true},
		{"actors/recording", module + "/transport", false},
		{"actors/recording", "github.com/gorilla/websocket", false},
		{"bench/echoserver", module + "/transport/rawsock", true},
		{"bench/echoserver", module + "/transport", false},
		{"transport/rawsock", module + "/protocol", false},
	}
	for _, tt := range tests {
		r, ok := ruleFor(tt.pkg)
		if !ok {
			t.Fatalf("no rule for %s", tt.pkg)
		}
		if got := allowed(r, tt.imp); got != tt.want {
			t.Errorf("%s importing %s: allowed=%v, want %v", tt.pkg, tt.imp, got, tt.want)
		}
	}
	recording, _ := ruleFor("actors/recording")
	for _, tt := range []struct {
		importer string
		want     bool
	}{{"transport", true}, {"cmd/hapticd", true}, {"actors/recording", true}, {"actors", false}, {"actors/loop", false}, {"bench", false}} {
		if got := importableBy(recording, tt.importer); got != tt.want {
			t.Errorf("%s importing actors/recording: %v, want %v", tt.importer, got, tt.want)
		}
	}
}

// designTable returns the rows of the first table under heading in
// docs/design.md, each row's cells trimmed.
func designTable(t *testing.T, heading string) [][]string {
	t.Helper()
	b, err := os.ReadFile("docs/design.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "\n"+heading+"\n")
	if !ok {
		t.Fatalf("docs/design.md has no %q section", heading)
	}
	var rows [][]string
	for _, line := range strings.Split(rest, "\n") {
		if strings.HasPrefix(line, "## ") {
			break
		}
		if !strings.HasPrefix(line, "| `") && !strings.HasPrefix(line, "| ") {
			if len(rows) > 0 {
				break // the table ended
			}
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		if strings.HasPrefix(cells[0], "`") {
			rows = append(rows, cells)
		}
	}
	if len(rows) == 0 {
		t.Fatalf("docs/design.md: no table under %q", heading)
	}
	return rows
}

// codeList reads a cell of `a`, `b` items.
func codeList(cell string) []string {
	var out []string
	for _, part := range strings.Split(cell, ",") {
		if p := strings.Trim(strings.TrimSpace(part), "`"); p != "" {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// The house in docs/design.md is the house enforced here, rule for rule.
func TestDesignDocMatchesHouse(t *testing.T) {
	doc := map[string][2][]string{}
	for _, row := range designTable(t, "## The house") {
		if len(row) < 3 {
			t.Fatalf("docs/design.md house row %v: want rule, project imports, third-party", row)
		}
		doc[strings.Trim(row[0], "`")] = [2][]string{codeList(row[1]), codeList(row[2])}
	}
	for _, r := range house {
		d, ok := doc[r.prefix]
		if !ok {
			t.Errorf("docs/design.md's house has no row for %s (%s)", r.prefix, r.why)
			continue
		}
		delete(doc, r.prefix)
		project, third := slices.Sorted(slices.Values(r.project)), slices.Sorted(slices.Values(r.thirdParty))
		if !slices.Equal(d[0], project) || !slices.Equal(d[1], third) {
			t.Errorf("docs/design.md says %s may import %v and %v; deps_test.go says %v and %v", r.prefix, d[0], d[1], project, third)
		}
	}
	for prefix := range doc {
		t.Errorf("docs/design.md's house has a row for %s, which deps_test.go has no rule for", prefix)
	}
}

// docs/design.md lists every package of the module but the test helpers
// (packages named ...test), and no other.
func TestDesignDocListsPackages(t *testing.T) {
	out, err := exec.Command("go", "list", module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	want := map[string]bool{}
	for _, p := range strings.Fields(string(out)) {
		rel := strings.TrimPrefix(strings.TrimPrefix(p, module), "/")
		if rel == "" || strings.HasSuffix(rel[strings.LastIndex(rel, "/")+1:], "test") {
			continue // the module root holds only this test
		}
		want[rel] = true
	}
	for _, row := range designTable(t, "## Packages") {
		p := strings.Trim(row[0], "`")
		if !want[p] {
			t.Errorf("docs/design.md lists %s, which is no package of the module (or a test helper)", p)
		}
		delete(want, p)
	}
	for p := range want {
		t.Errorf("docs/design.md does not list package %s", p)
	}
}
