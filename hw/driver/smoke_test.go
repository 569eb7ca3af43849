package driver_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/hw/emulator"
	"github.com/hapticd/hapticd/hw/serial"
)

// The standard capture session: open (wake-up, zero force), smokeTicks
// ticks of smokeForce, close (zero force). Captures in testdata/captures
// were recorded with it, so replaying them checks that the driver still
// speaks byte for byte as it did to that device.
const smokeTicks = 20

var smokeForce = hw.Vec3{Z: 0.5}

// TestSmokeRecord records the standard session from a real arm into
// testdata/captures. It runs only when asked:
//
//	HAPTICD_SMOKE_PORT=/dev/ttyACM0 go test -run TestSmokeRecord ./hw/driver
//
// With HAPTICD_SMOKE_PORT=emulator it records from the emulator instead.
func TestSmokeRecord(t *testing.T) {
	path := os.Getenv("HAPTICD_SMOKE_PORT")
	if path == "" {
		t.Skip("set HAPTICD_SMOKE_PORT to a real arm's port to record a capture")
	}
	name := filepath.Base(path)
	if path == "emulator" {
		_, path = startEmulator(t, emulator.Options{Index: 0})
		name = "emulator-arm-0"
	}
	port, err := serial.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	tap := serial.Tap(port)
	if _, err := session(tap, smokeTicks, smokeForce); err != nil {
		t.Fatalf("session on %s: %v", path, err)
	}
	out := filepath.Join("testdata", "captures", name+".jsonl")
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := serial.WriteRecording(f, tap.Records()); err != nil {
		t.Fatal(err)
	}
	t.Logf("recorded %s", out)
}

// TestReplayCaptures replays every committed capture.
func TestReplayCaptures(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "captures", "*.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no captures in testdata/captures; record one with HAPTICD_SMOKE_PORT=emulator")
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			f, err := os.Open(file)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			records, err := serial.ReadRecording(f)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := session(serial.Replay(records), smokeTicks, smokeForce); err != nil {
				t.Fatalf("replay of %s: %v", file, err)
			}
		})
	}
}
