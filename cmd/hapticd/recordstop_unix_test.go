//go:build unix

package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hapticd/hapticd/actors/recording"
	"github.com/hapticd/hapticd/hw/hwtest"
)

// TestRecordingEndsWithTheArmsAtZero with an arm behind the serial driver
// (the firmware emulator), whose loop runs on its own goroutine, not a
// scheduler shard: the recording ends on the zero the firmware is left
// holding. (This one held before the halt fed the taps: such a loop ticks
// on after the stop's Halt, until the service cancels it.)
func TestRecordingEndsWithTheEmulatedArmAtZero(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary against an emulated arm")
	}
	bin := buildBinary(t)
	emu, pts := plugEmulatedArm(t)
	dir := t.TempDir()
	d := startProcess(t, bin, append(emulatedArmArgs(filepath.Join(t.TempDir(), "state"), pts), "--record", dir)...)
	c, id := holdForce(t, d, emu)
	// The recording takes a device that came after its start within its
	// next look (every 100 ms; later on a loaded machine): the arm is
	// plugged in after --record began. Wait until a written chunk shows
	// the session holding the force, the state the release must follow.
	hwtest.EventuallyNil(t, 20*time.Second, "the recording to show the session holding the force", func() error {
		// The force stays commanded (its lease renewed) while the test waits.
		c.roundTrip(fmt.Sprintf(`{"arm3":[{"device_id":%q,"commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":2}}}}]}`, id))
		f, _ := readRecording(t, dir)
		if f == nil {
			return errors.New("no recording yet")
		}
		for key, ms := range recording.MessagesOf(f, recording.KindState) {
			if !strings.HasSuffix(key, "-"+id) {
				continue
			}
			for _, m := range ms {
				var st recording.State
				if json.Unmarshal(m.Data, &st) == nil && st.Owner != 0 && mag(st.Force) >= 1 {
					return nil
				}
			}
		}
		return fmt.Errorf("no recorded state of arm %s held by a session (%d chunks)", id, f.Chunks)
	})
	file := stopRecording(t, d, dir)
	if f := emu.Stats().LastForce; !isZero(f) {
		t.Fatalf("after SIGTERM the arm's firmware holds %+v N, want zero", f)
	}
	f := readCompleteRecording(t, file)
	var sts []recording.State
	for key, ms := range recording.MessagesOf(f, recording.KindState) {
		if !strings.HasSuffix(key, "-"+id) {
			continue
		}
		for _, m := range ms {
			var st recording.State
			if err := json.Unmarshal(m.Data, &st); err != nil {
				t.Fatal(err)
			}
			sts = append(sts, st)
		}
	}
	// The last state of the session holding its force: the stop's halt
	// zeroes the force of an arm its session may still own, so the last
	// owned state can be the release itself (CI's run under load: it was
	// below 1 N), not a failure to hold.
	held := -1
	for i, st := range sts {
		if st.Owner != 0 && mag(st.Force) >= 1 {
			held = i
		}
	}
	if held < 0 {
		t.Fatalf("the recording does not show the session holding the force (%d states)", len(sts))
	}
	if last := sts[len(sts)-1]; last.Force != [3]float64{} {
		t.Errorf("the recording ends with the arm at %v N (tick %d), want the zero its firmware holds", last.Force, last.Tick)
	}
	for i := held + 1; i < len(sts); i++ {
		if mag(sts[i].Force) > mag(sts[i-1].Force)+1e-9 {
			t.Errorf("after the release the recorded force rises from %v to %v N (tick %d)", sts[i-1].Force, sts[i].Force, sts[i].Tick)
		}
	}
}
