package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/hapticd/hapticd/actors/recording"
	"github.com/hapticd/hapticd/hw/hwtest"
	"github.com/hapticd/hapticd/protocol/mcap"
)

// readRecording reads the one recording in dir, complete or cut short.
func readRecording(t *testing.T, dir string) (*mcap.File, error) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*.mcap"))
	if len(files) != 1 {
		return nil, fmt.Errorf("want one recording in %s, found %v", dir, files)
	}
	b, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	return mcap.Read(b)
}

// readCompleteRecording reads the recording file, which a stop must have
// ended complete (summary and footer).
func readCompleteRecording(t *testing.T, file string) *mcap.File {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	f, err := mcap.Read(b)
	if err != nil || !f.Complete {
		t.Fatalf("recording %s after the stop: %v (complete %v)", file, err, f != nil && f.Complete)
	}
	return f
}

// --record writes chunks as it goes: a service killed with SIGKILL leaves
// a file whose every chunk written before the kill is readable.
func TestRecordingSurvivesSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)
	dir := t.TempDir()
	d := startProcess(t, bin, "--state-dir", t.TempDir(), "--record", dir, "--sim-motion", "circle", "--sim-arms", "2")
	var before *mcap.File
	hwtest.EventuallyNil(t, 20*time.Second, "three chunks recorded", func() error {
		f, err := readRecording(t, dir)
		if f == nil || f.Chunks < 3 || !errors.Is(err, mcap.ErrTruncated) {
			return fmt.Errorf("%v (%+v)", err, f)
		}
		before = f
		return nil
	})
	if err := d.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = d.cmd.Wait()
	after, err := readRecording(t, dir)
	if !errors.Is(err, mcap.ErrTruncated) || after.Complete {
		t.Fatalf("after SIGKILL: %v, complete %v; want a file cut short", err, after != nil && after.Complete)
	}
	if after.Chunks < before.Chunks || len(after.Messages) < len(before.Messages) {
		t.Fatalf("after SIGKILL %d chunks, %d messages readable; %d chunks, %d messages were before it", after.Chunks, len(after.Messages), before.Chunks, len(before.Messages))
	}
	for i, m := range before.Messages {
		if a := after.Messages[i]; a.ChannelID != m.ChannelID || a.LogTime != m.LogTime || !bytes.Equal(a.Data, m.Data) {
			t.Fatalf("message %d changed after the kill", i)
		}
	}
	states := 0
	for _, m := range after.Messages {
		if after.Channels[m.ChannelID].Metadata["kind"] == recording.KindState {
			states++
		}
	}
	if states == 0 {
		t.Fatal("no device states in the recording")
	}
}
