package transport

import (
	"fmt"
	"os"
	"testing"

	"github.com/hapticd/hapticd/actors/recording"
	"github.com/hapticd/hapticd/protocol"
)

// At most recording.MaxRunning recordings run at once: each holds rings
// for every device and costs every loop tick a copy, so a client starting
// them in a loop slowed every arm's loop and filled the disk N times as
// fast. Past the bound POST answers 503 unavailable and takes no file and
// no id; a stopped one frees its place.
func TestRecordingsRunningAtOnceAreBounded(t *testing.T) {
	dir := t.TempDir()
	ts := startService(t, serviceConfig{arms: 1, recordDir: dir})
	for i := range recording.MaxRunning {
		ts.startRecording(fmt.Sprintf(`{"name":"r%d"}`, i))
	}
	r := ts.do("POST", ts.base+"/recordings", `{"name":"one-too-many"}`)
	if r.status != 503 || r.env["code"] != string(protocol.CodeUnavailable) {
		t.Fatalf("POST /recordings with %d running: %v, want 503 unavailable", recording.MaxRunning, r)
	}
	if files, _ := os.ReadDir(dir); len(files) != recording.MaxRunning {
		t.Fatalf("%d files in the recordings directory, want %d (the refused start left none)", len(files), recording.MaxRunning)
	}
	if stopped := ts.do("DELETE", ts.base+"/recordings/1", ""); stopped.status != 200 {
		t.Fatalf("DELETE /recordings/1: %v", stopped)
	}
	next := ts.startRecording(`{"name":"after-a-stop"}`)
	if id := num(path(next.data(), "id")); id != recording.MaxRunning+1 {
		t.Fatalf("the start after a stop got id %v, want %d (the refused one took none)", id, recording.MaxRunning+1)
	}
}

// A stopped recording stayed listed in GET /recordings for the process's
// whole life, holding its queue (about 600 KiB): a lab recording each trial
// all day grew without bound. The list keeps the running recordings and
// the last recording.MaxStoppedListed stopped ones; an older one leaves it
// (DELETE then answers 404) and its file stays on disk, as every recording's
// does: the service never removes one.
func TestStoppedRecordingsListedAreBounded(t *testing.T) {
	dir := t.TempDir()
	ts := startService(t, serviceConfig{arms: 1, recordDir: dir})
	const extra = 3
	total := recording.MaxStoppedListed + extra
	for i := range total {
		started := ts.startRecording(fmt.Sprintf(`{"name":"trial-%d"}`, i))
		id := int(num(path(started.data(), "id")))
		if r := ts.do("DELETE", fmt.Sprintf("%s/recordings/%d", ts.base, id), ""); r.status != 200 {
			t.Fatalf("DELETE /recordings/%d: %v", id, r)
		}
	}
	running := ts.startRecording(`{"name":"still-running"}`)
	runningID := int(num(path(running.data(), "id")))

	list := ts.do("GET", ts.base+"/recordings", "")
	entries, _ := list.data().([]any)
	if len(entries) != recording.MaxStoppedListed+1 {
		t.Fatalf("GET /recordings lists %d recordings after %d stopped and 1 running, want %d: the last %d stopped and the running one",
			len(entries), total, recording.MaxStoppedListed+1, recording.MaxStoppedListed)
	}
	for i, e := range entries {
		want := extra + 1 + i // ids start at 1; the oldest extra left the list
		if id := int(num(path(e, "id"))); id != want {
			t.Fatalf("entry %d of GET /recordings is id %d, want %d (oldest first, the %d oldest stopped gone)", i, id, want, extra)
		}
	}
	if last := entries[len(entries)-1]; path(last, "active") != true || int(num(path(last, "id"))) != runningID {
		t.Fatalf("last entry %v, want the running recording %d, active", last, runningID)
	}
	if files, _ := os.ReadDir(dir); len(files) != total+1 {
		t.Fatalf("%d files in the recordings directory, want %d: a recording's file is the user's and stays", len(files), total+1)
	}
	gone := ts.do("DELETE", ts.base+"/recordings/1", "")
	if gone.status != 404 || gone.env["code"] != string(protocol.CodeUnknownRoute) {
		t.Fatalf("DELETE of a recording no longer listed: %v, want 404 unknown_route", gone)
	}
	kept := ts.do("DELETE", fmt.Sprintf("%s/recordings/%d", ts.base, extra+1), "")
	if kept.status != 200 || path(kept.data(), "active") != false {
		t.Fatalf("DELETE of the oldest stopped recording still listed: %v, want 200 with its final state", kept)
	}
}
