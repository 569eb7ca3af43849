package main

// The race detector's reports of a lab's real processes, sorted into the
// pinned protoactor's own known races (tolerated: docs/lab.md, "Data
// races in the pinned protoactor") and everything else (ours, or new:
// the test fails). TestLabUnderRace (labrace_test.go) runs the lab.

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

// protoactorRaces is the allow-list: the pinned protoactor's own races,
// with the docs/lab.md item each is. A report is tolerated (and logged)
// when one access's protoactor frames (raceProtoactorFrames: those inward
// of its innermost hapticd frame) include a and the other's include b;
// any other report fails the lab's race test. The functions are
// protoactor's API or internals, never hapticd's: an access hapticd's code
// makes itself has no protoactor frame inward of its own, so it never
// matches. Add a pair only for a race that is protoactor's alone.
var protoactorRaces = []struct {
	a, b string // protoactor functions, one in each access's stack
	doc  string // the docs/lab.md item
}{
	// "its gossip state is marshalled by the connection's writer while
	// the gossip actor changes it": the gossip actor's writes (setKey,
	// from Informer.SetState) against proto.Marshal of the same state
	// (the endpoint writer's Serialize).
	{"cluster.(*GossipActor).Receive", "remote.(*protoSerializer).Serialize", lab1Gossip},
	// "the member list is read by the gossip actor without its lock
	// (ContainsMemberID, BlockList.Block) while a topology update writes
	// it": the members read by ContainsMemberID, or the blocked members
	// read by a topology update (getTopologyChanges, in
	// UpdateClusterTopology, which takes the list's lock), while the
	// other writes them. hapticd's health poller calls
	// UpdateClusterTopology as protoactor's automanaged provider does.
	{"cluster.(*MemberList).ContainsMemberID", "cluster.(*MemberList).UpdateClusterTopology", lab2MemberList},
	{"remote.(*BlockList).Block", "cluster.(*MemberList).getTopologyChanges", lab2MemberList},
	// "its remote Future and BlockList race with themselves on a
	// stream's end": a connecting stream's IsBlocked (endpointReader)
	// while the gossip blocks a member.
	{"remote.(*BlockList).Block", "remote.(*BlockList).IsBlocked", lab3FutureBlockList},
	// "its identity lookup's rendezvous is replaced by a topology update
	// while a request reads it": disthash's Manager.onClusterTopology
	// (run by UpdateClusterTopology's event) against Manager.Get (in
	// Cluster.Request, from any goroutine).
	{"cluster/identitylookup/disthash.(*Manager).onClusterTopology", "cluster/identitylookup/disthash.(*Manager).Get", lab4Rendezvous},
}

// The items of docs/lab.md, "Data races in the pinned protoactor".
const (
	lab1Gossip          = "gossip state marshalled while the gossip actor changes it"
	lab2MemberList      = "member list read without its lock"
	lab3FutureBlockList = "remote Future and BlockList race with themselves"
	lab4Rendezvous      = "identity lookup's rendezvous replaced while a request reads it"
)

// raceAccess is one of a report's two conflicting accesses.
type raceAccess struct {
	what      string   // "Write at 0x… by goroutine 45", as reported
	goroutine string   // "goroutine 45", or "main goroutine"
	stack     []string // function names, innermost first
}

// raceReport is one WARNING: DATA RACE of a report file.
type raceReport struct {
	file     string
	text     string // the report, whole
	accesses []raceAccess
	created  map[string][]string // creation stack by goroutine ("goroutine 45")
}

var (
	raceAccessLine  = regexp.MustCompile(`^((?:Previous )?(?:[Aa]tomic )?(?:[Rr]ead|[Ww]rite))(?: at 0x[0-9a-f]+)? by (goroutine \d+|main goroutine):$`)
	raceFoundLine   = regexp.MustCompile(`^Found \d+ data race\(s\)$`)
	raceCreatedLine = regexp.MustCompile(`^Goroutine (\d+) \([a-z]+\) created at:$`)
	// A closure's or wrapper's number (func1, func2.3, gowrap1) depends on
	// its place in the source: the signature keeps only its kind.
	raceClosureNum = regexp.MustCompile(`\.(func|gowrap|deferwrap)\d+(\.\d+)*`)
)

const raceSeparator = "=================="

// parseRaceReports reads a race detector's log (GORACE log_path) into its
// reports; text it does not recognize (another warning of the detector, a
// report it cannot parse) comes back in odd, to fail on too.
func parseRaceReports(file, text string) (reports []raceReport, odd []string) {
	var block []string
	flush := func() {
		// The count a process prints at its exit is no report.
		block = slices.DeleteFunc(block, raceFoundLine.MatchString)
		b := strings.TrimSpace(strings.Join(block, "\n"))
		block = block[:0]
		if b == "" {
			return
		}
		r, ok := parseRaceReport(b)
		if !ok {
			odd = append(odd, b)
			return
		}
		r.file = file
		reports = append(reports, r)
	}
	for _, line := range strings.Split(text, "\n") {
		if strings.TrimSpace(line) == raceSeparator {
			flush()
			continue
		}
		block = append(block, line)
	}
	flush()
	return reports, odd
}

func parseRaceReport(text string) (raceReport, bool) {
	lines := strings.Split(text, "\n")
	if len(lines) == 0 || strings.TrimSpace(lines[0]) != "WARNING: DATA RACE" {
		return raceReport{}, false
	}
	r := raceReport{text: text, created: map[string][]string{}}
	var frame func(f string) // adds a frame to the stack being read
	for _, line := range lines[1:] {
		switch {
		case raceAccessLine.MatchString(line):
			m := raceAccessLine.FindStringSubmatch(line)
			r.accesses = append(r.accesses, raceAccess{what: strings.TrimSuffix(line, ":"), goroutine: m[2]})
			a := &r.accesses[len(r.accesses)-1]
			frame = func(f string) { a.stack = append(a.stack, f) }
		case raceCreatedLine.MatchString(line):
			g := "goroutine " + raceCreatedLine.FindStringSubmatch(line)[1]
			r.created[g] = []string{}
			frame = func(f string) { r.created[g] = append(r.created[g], f) }
		case strings.HasPrefix(line, "  ") && !strings.HasPrefix(line, "   ") && frame != nil:
			// A frame's function; its file:line follows, indented deeper.
			frame(strings.TrimSuffix(strings.TrimSpace(line), "()"))
		case strings.HasPrefix(line, "      ") || strings.TrimSpace(line) == "":
		default:
			frame = nil // "Location is …", "[failed to restore the stack]"
		}
	}
	return r, len(r.accesses) == 2
}

const protoactorModule = "github.com/asynkron/protoactor-go/"

// ourFrame says f is hapticd's: its packages', or its command's (main).
func ourFrame(f string) bool {
	return strings.HasPrefix(f, "github.com/hapticd/hapticd/") || strings.HasPrefix(f, "main.")
}

// raceFuncName is f without protoactor's module path and with a closure's
// number dropped.
func raceFuncName(f string) string {
	return raceClosureNum.ReplaceAllString(strings.TrimPrefix(f, protoactorModule), ".$1")
}

// raceKeyFunc is an access's innermost frame of protoactor or of hapticd
// (raceFuncName), "" when the stack has none or could not be restored:
// a frame of the standard library or of another dependency (protobuf,
// grpc) is where the access happened, not who made it.
func raceKeyFunc(stack []string) string {
	for _, f := range stack {
		if ourFrame(f) || strings.HasPrefix(f, protoactorModule) {
			return raceFuncName(f)
		}
	}
	return ""
}

// raceProtoactorFrames are the protoactor functions of stack (raceFuncName)
// inward of its innermost hapticd frame: what protoactor's code did on
// its own before the access, whoever called it.
func raceProtoactorFrames(stack []string) []string {
	var fs []string
	for _, f := range stack {
		if ourFrame(f) {
			break
		}
		if strings.HasPrefix(f, protoactorModule) {
			fs = append(fs, raceFuncName(f))
		}
	}
	return fs
}

// signature is the report's pair of key functions (raceKeyFunc), sorted:
// what the failure and the log name it by.
func (r raceReport) signature() [2]string {
	a, b := raceKeyFunc(r.accesses[0].stack), raceKeyFunc(r.accesses[1].stack)
	if b < a {
		a, b = b, a
	}
	return [2]string{a, b}
}

// tolerated says which docs/lab.md item the report is, "" when it is none:
// ours, or a race nobody has looked at yet.
func (r raceReport) tolerated() string {
	x, y := raceProtoactorFrames(r.accesses[0].stack), raceProtoactorFrames(r.accesses[1].stack)
	for _, k := range protoactorRaces {
		if slices.Contains(x, k.a) && slices.Contains(y, k.b) || slices.Contains(x, k.b) && slices.Contains(y, k.a) {
			return k.doc
		}
	}
	return ""
}

// readRaceLogs parses every file named prefix.* (GORACE
// log_path=prefix: one per process, prefix.PID).
func readRaceLogs(t *testing.T, prefix string) (reports []raceReport, odd []string) {
	t.Helper()
	files, err := filepath.Glob(prefix + ".*")
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		r, o := parseRaceReports(filepath.Base(f), string(b))
		reports = append(reports, r...)
		odd = append(odd, o...)
	}
	return reports, odd
}

// failOnOurRaces logs the tolerated reports (signature and count) and
// fails with every other one, printed whole.
func failOnOurRaces(t *testing.T, reports []raceReport, odd []string) {
	t.Helper()
	counts := map[string]int{}
	for _, r := range reports {
		if doc := r.tolerated(); doc != "" {
			sig := r.signature()
			counts[fmt.Sprintf("%s / %s (docs/lab.md: %s)", sig[0], sig[1], doc)]++
			continue
		}
		sig := r.signature()
		t.Errorf("a data race not on protoactor's known list (%s: %q against %q):\n%s", r.file, sig[0], sig[1], r.text)
	}
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range counts {
			if !yield(k) {
				return
			}
		}
	})
	for _, k := range keys {
		t.Logf("tolerated %d× protoactor's own race %s", counts[k], k)
	}
	for _, o := range odd {
		t.Errorf("the race detector's log has text that is no data race report:\n%s", o)
	}
}

// The classifier on reports of real lab runs (testdata/race, trimmed to
// the frames it reads): hapticd's race before 4683813 (both innermost
// frames protoactor's, our goroutine reading the address our start was
// writing) is not tolerated; one of each protoactor kind is; and on made-up
// reports of ours, of a hapticd callback inside protoactor's call, and of
// a lost stack, none tolerated.
func TestRaceReportClassifier(t *testing.T) {
	ours := "==================\nWARNING: DATA RACE\nWrite at 0x00c000123456 by goroutine 7:\n" +
		"  runtime.mapassign_faststr()\n      /go/src/runtime/map.go:1 +0x1\n" +
		"  github.com/hapticd/hapticd/actors/cluster.(*Node).forget.func1()\n      /x/node.go:1 +0x1\n\n" +
		"Previous read at 0x00c000123456 by goroutine 8:\n" +
		"  github.com/hapticd/hapticd/actors/cluster.(*Node).push()\n      /x/node.go:2 +0x1\n\n" +
		"Goroutine 7 (running) created at:\n  github.com/hapticd/hapticd/actors/cluster.StartNode()\n      /x/node.go:3 +0x1\n" +
		"==================\nFound 1 data race(s)\n"
	// A callback of hapticd's that protoactor's topology update calls,
	// racing with the gossip actor's read: the write is hapticd's own
	// (its innermost owned frame), whatever protoactor frames are further
	// out, so the pair of the member list's race does not cover it.
	callback := "==================\nWARNING: DATA RACE\nWrite at 0x00c000123456 by goroutine 7:\n" +
		"  github.com/hapticd/hapticd/actors/cluster.(*healthPoller).onTopology()\n      /x/healthpoll.go:1 +0x1\n" +
		"  github.com/asynkron/protoactor-go/cluster.(*MemberList).UpdateClusterTopology()\n      /x/member_list.go:1 +0x1\n\n" +
		"Previous read at 0x00c000123456 by goroutine 8:\n" +
		"  github.com/asynkron/protoactor-go/cluster.(*MemberList).ContainsMemberID()\n      /x/member_list.go:2 +0x1\n" +
		"==================\n"
	// protoactor's pair, its older access's stack lost: not tolerated,
	// nothing says which race it is.
	lost := "==================\nWARNING: DATA RACE\nWrite at 0x00c000123456 by goroutine 7:\n" +
		"  github.com/asynkron/protoactor-go/cluster.setKey()\n      /x/informer.go:1 +0x1\n\n" +
		"Previous read at 0x00c000123456 by goroutine 8:\n  [failed to restore the stack]\n" +
		"==================\n"
	tests := []struct {
		name, text string
		sig        [2]string
		doc        string // "" not tolerated
	}{
		{"address-before-4683813.txt", "", [2]string{"actor.(*ActorSystem).Address", "remote.(*Remote).Start"}, ""},
		{"gossip-setkey-serialize.txt", "", [2]string{"cluster.setKey", "remote.(*protoSerializer).Serialize"}, lab1Gossip},
		{"memberlist-contains-update.txt", "", [2]string{"cluster.(*MemberList).ContainsMemberID", "cluster.(*MemberList).UpdateClusterTopology"}, lab2MemberList},
		{"memberset-containsid-memberstomap.txt", "", [2]string{"cluster.(*MemberSet).ContainsID", "cluster.MembersToMap"}, lab2MemberList},
		{"blocklist-block-blockedmembers.txt", "", [2]string{"remote.(*BlockList).Block", "remote.(*BlockList).BlockedMembers"}, lab2MemberList},
		{"topology-blocklist-block.txt", "", [2]string{"cluster.(*MemberList).getTopologyChanges", "remote.(*BlockList).Block"}, lab2MemberList},
		{"blocklist-block-isblocked.txt", "", [2]string{"remote.(*BlockList).Block", "remote.(*BlockList).IsBlocked"}, lab3FutureBlockList},
		{"disthash-get-ontopology.txt", "", [2]string{"cluster.NewRendezvous", "cluster/identitylookup/disthash.(*Manager).Get"}, lab4Rendezvous},
		{"ours", ours, [2]string{"github.com/hapticd/hapticd/actors/cluster.(*Node).forget.func", "github.com/hapticd/hapticd/actors/cluster.(*Node).push"}, ""},
		{"hapticd callback", callback, [2]string{"cluster.(*MemberList).ContainsMemberID", "github.com/hapticd/hapticd/actors/cluster.(*healthPoller).onTopology"}, ""},
		{"lost stack", lost, [2]string{"", "cluster.setKey"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text := tt.text
			if text == "" {
				b, err := os.ReadFile(filepath.Join("testdata", "race", tt.name))
				if err != nil {
					t.Fatal(err)
				}
				text = string(b)
			}
			reports, odd := parseRaceReports(tt.name, text)
			if len(reports) != 1 || len(odd) != 0 {
				t.Fatalf("%d reports and odd text %q, want one report and no odd text", len(reports), odd)
			}
			r := reports[0]
			if got := r.signature(); got != tt.sig {
				t.Errorf("signature %q, want %q", got, tt.sig)
			}
			if got := r.tolerated(); got != tt.doc {
				t.Errorf("tolerated as %q, want %q", got, tt.doc)
			}
			if tt.text == "" && len(r.created) == 0 {
				t.Errorf("no goroutine's creation stack read")
			}
			for g, s := range r.created {
				if len(s) == 0 {
					t.Errorf("%s's creation stack read empty", g)
				}
			}
		})
	}
	// Text of the detector's that is no report is kept, to fail on.
	if _, odd := parseRaceReports("x", "==================\nWARNING: something else\n==================\n"); len(odd) != 1 {
		t.Errorf("odd text %q, want the warning", odd)
	}
}
