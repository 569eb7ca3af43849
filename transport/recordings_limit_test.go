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
