package main

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestSystemdUnitGrantsRealtime: the shipped unit starts the service with a
// real-time priority its limits allow (the flags parse, the priority is
// within LimitRTPRIO) and grants CAP_SYS_NICE, without which
// --realtime-priority silently falls back to normal scheduling.
func TestSystemdUnitGrantsRealtime(t *testing.T) {
	f, err := os.Open("../../packaging/systemd/hapticd.service")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	keys := map[string][]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") {
			keys[k] = append(keys[k], v)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	one := func(k string) string {
		t.Helper()
		if len(keys[k]) != 1 {
			t.Fatalf("%s= is set %d times in the unit, want once", k, len(keys[k]))
		}
		return keys[k][0]
	}
	exec := strings.Fields(one("ExecStart"))
	o, err := parseFlags(exec[1:])
	if err != nil {
		t.Fatalf("ExecStart flags %q: %v", exec[1:], err)
	}
	limit, err := strconv.Atoi(one("LimitRTPRIO"))
	if err != nil {
		t.Fatalf("LimitRTPRIO: %v", err)
	}
	if o.realtimePriority < 1 || o.realtimePriority > limit {
		t.Errorf("ExecStart asks for --realtime-priority %d, want 1..LimitRTPRIO (%d)", o.realtimePriority, limit)
	}
	for _, k := range []string{"AmbientCapabilities", "CapabilityBoundingSet"} {
		if !strings.Contains(one(k), "CAP_SYS_NICE") {
			t.Errorf("%s=%s lacks CAP_SYS_NICE", k, one(k))
		}
	}
	if v := keys["RestrictRealtime"]; len(v) > 0 && v[len(v)-1] == "yes" {
		t.Error("RestrictRealtime=yes forbids the SCHED_FIFO the service asks for")
	}
}
