//go:build linux

package main

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// rejectedOn are the stored-entry-rejected events in m's event ring
// (GET /events), each's data.
func rejectedOn(t *testing.T, m *labMember) []map[string]any {
	t.Helper()
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(m.url("/events?limit=10000"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Data struct {
			Events []struct {
				Name string         `json:"name"`
				Data map[string]any `json:"data"`
			} `json:"events"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, e := range body.Data.Events {
		if e.Name == "stored-entry-rejected" {
			out = append(out, e.Data)
		}
	}
	return out
}

// A lab's node whose arm's stored force clamp its build does not accept
// (after an upgrade or downgrade) tells the lab's gateway's events, though
// it read the file at its start, before any gateway subscribed: the
// gateway started after the node (docs/lab.md's upgrade order) publishes
// one stored-entry-rejected naming the node and the arm; a gateway
// already running when the node restarts with the same file, one more.
// The gateway's GET /events showed none.
func TestLabGatewayTellsANodesRejectedStoredEntry(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs two processes")
	}
	lab := newTestLab(t, buildBinary(t), labHostA, labHostGW)
	node := lab.node(labHostA)
	arm := onlyArm(t, node)
	if st, err := postJSON(node.url("/arm3/"+arm+"/config/passivity/force_clamp"), `{"max_force":7}`); err != nil || st != 200 {
		t.Fatalf("POST force_clamp on the node: %d %v", st, err)
	}
	stop := func(m *labMember) {
		_ = m.cmd.Process.Signal(syscall.SIGTERM)
		_ = m.cmd.Wait()
	}
	stop(node)
	file := filepath.Join(lab.state[labHostA], "devices", "arm3-"+arm+".json")
	var doc map[string]json.RawMessage
	b, err := os.ReadFile(file)
	if err != nil || json.Unmarshal(b, &doc) != nil {
		t.Fatalf("the node's stored document %s: %v %s", file, err, b)
	}
	doc["force_clamp"] = json.RawMessage(`{"max_force":"ten"}`)
	if b, err = json.Marshal(doc); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}

	node = lab.node(labHostA)
	if got := rejectedOn(t, node); len(got) != 1 {
		t.Fatalf("the node's own events: %d stored-entry-rejected, want 1: %v", len(got), got)
	}
	gw := lab.gateway(labHostGW)
	waitArmOnGateway(t, gw, arm)
	check := func(want int, when string) {
		t.Helper()
		waitLab(t, 5*time.Second, when+": the gateway's stored-entry-rejected", func() bool { return len(rejectedOn(t, gw)) >= want })
		time.Sleep(time.Second) // its next subscriptions' inventories, 4 a second
		got := rejectedOn(t, gw)
		if len(got) != want {
			t.Fatalf("%s: the gateway's events hold %d stored-entry-rejected, want %d: %v", when, len(got), want, got)
		}
		e := got[want-1]
		if e["node_id"] != "a" || e["device_id"] != arm || e["entry"] != "force_clamp" || e["path"] != file || e["profile"] != nil {
			t.Fatalf("%s: the gateway's stored-entry-rejected %v, want node a's arm %s, force_clamp in %s", when, e, arm, file)
		}
	}
	check(1, "the gateway started after the node")

	stop(node)
	node = lab.node(labHostA)
	check(2, "the node restarted with the same file, the gateway running")
}
