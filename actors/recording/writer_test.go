package recording

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/rs/zerolog"

	"github.com/hapticd/hapticd/actors/loop"
	"github.com/hapticd/hapticd/protocol/mcap"
)

// fullDisk takes the first room bytes written to it, then refuses, as a
// disk that fills does (the write that crosses the line is partial).
type fullDisk struct {
	got  bytes.Buffer
	room int
}

func (d *fullDisk) Write(p []byte) (int, error) {
	n := min(len(p), d.room-d.got.Len())
	d.got.Write(p[:n])
	if n < len(p) {
		return n, syscall.ENOSPC
	}
	return n, nil
}

// When the disk fills, the counts say what the file holds: every message
// of a chunk written before (by the writer's flush or by the message that
// filled it) stays counted as written, and every other message the
// recording was handed counts as dropped, whichever write failed. A chunk
// written whole before the disk filled in its message indexes is in the
// file too: its messages stay written.
func TestFailedWriteCountsWhatTheFileHolds(t *testing.T) {
	// 200 messages fill the disk in the header, in a chunk, or between a
	// chunk and its message indexes; 20 (a short recording) also in the
	// data end, the summary and the footer that follow the last chunk.
	for _, tc := range []struct{ sent, step int }{{200, 50}, {20, 25}} {
		t.Run(fmt.Sprintf("sent=%d", tc.sent), func(t *testing.T) {
			// Every room below what the whole file takes, in steps.
			whole := recordOnto(t, &fullDisk{room: 1 << 30}, tc.sent)
			for room := 1500; room < min(whole, 22000); room += tc.step {
				t.Run(fmt.Sprint(room), func(t *testing.T) { failedWriteCounts(t, room, tc.sent) })
			}
		})
	}
}

// recordOnto records sent client messages onto disk as the recorder's
// writer does (a flush every 50) and returns how many bytes reached it.
func recordOnto(t *testing.T, disk *fullDisk, sent int) int {
	t.Helper()
	wr, _ := writerOnto(t, disk, sent)
	if wr.failed {
		t.Fatalf("recording onto a disk with room: failed")
	}
	return disk.got.Len()
}

func writerOnto(t *testing.T, disk *fullDisk, sent int) (*writer, *recording) {
	t.Helper()
	dir := t.TempDir()
	rs := New(Config{Dir: dir, Log: zerolog.Nop()})
	r := &recording{id: 1, name: "full", path: filepath.Join(dir, "full.mcap"), clock: loop.SystemClock(),
		queue: make(chan item, 1), stop: func() {}, done: make(chan struct{})}
	r.active.Store(true)
	w, err := mcap.NewWriter(disk, mcap.Header{Library: "hapticd"}, 1024) // chunks of about 3 messages
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(r.path) // for Sync and Close only
	if err != nil {
		t.Fatal(err)
	}
	wr := newWriter(rs, r, f, w)
	wr.addSchemas()
	body := []byte(`{"pad":"` + string(bytes.Repeat([]byte("x"), 300)) + `"}`)
	for i := range sent {
		wr.emit(item{kind: KindClient, key: "1", ns: int64(i + 1), data: body})
		if i%50 == 49 {
			wr.flush() // as the writer's ticker does
		}
	}
	wr.finish()
	return wr, r
}

func failedWriteCounts(t *testing.T, room, sent int) {
	disk := &fullDisk{room: room}
	wr, r := writerOnto(t, disk, sent)
	if !wr.failed || r.active.Load() {
		t.Fatalf("after %d bytes of room: failed %v, active %v; want the recording ended", room, wr.failed, r.active.Load())
	}
	got := filepath.Join(t.TempDir(), "got.mcap")
	if err := os.WriteFile(got, disk.got.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	file, _, err := Load(got) // as replay and export read it: up to its last whole chunk
	if err != nil {
		t.Fatalf("the bytes that reached the disk do not read: %v", err)
	}
	var clients int
	for _, m := range file.Messages {
		if file.Channels[m.ChannelID].Metadata["kind"] == KindClient {
			clients++
		}
	}
	if got := r.written.Load(); got != uint64(len(file.Messages)) {
		t.Errorf("messages counted written %d, the file holds %d", got, len(file.Messages))
	}
	if got := r.dropped.Load(); got != uint64(sent-clients) {
		t.Errorf("dropped %d, want the %d of %d client messages the file does not hold", got, sent-clients, sent)
	}
}
