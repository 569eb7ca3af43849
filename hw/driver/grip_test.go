package driver_test

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/hw/driver"
	"github.com/hapticd/hapticd/hw/emulator"
	"github.com/hapticd/hapticd/hw/hwtest"
	"github.com/hapticd/hapticd/hw/serial"
	"github.com/hapticd/hapticd/hw/wire"
)

// shortWritePort takes one byte less than each write asks.
type shortWritePort struct{ *hwtest.ArmPort }

func (p shortWritePort) Write(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	return p.ArmPort.Write(b[:len(b)-1])
}

func TestOpenGripFailures(t *testing.T) {
	o := driver.GripOptions{Path: "test", InfoAttempts: 2, InfoTimeout: 5 * time.Millisecond}
	tests := []struct {
		name    string
		short   bool
		wantErr error
	}{
		// An arm never answers the grip query: no grip info, and not an
		// arm's wake-up failure.
		{"nothing answers", false, driver.ErrNoGripInfo},
		{"short write", true, driver.ErrPortWrite},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ap := hwtest.NewArmPort(0x049D, [16]byte{1})
			var err error
			if tc.short {
				_, err = driver.OpenGrip(shortWritePort{ap}, o)
			} else {
				_, err = driver.OpenGrip(ap, o)
			}
			if !errors.Is(err, tc.wantErr) {
				t.Errorf("OpenGrip error = %v, want %v", err, tc.wantErr)
			}
			if errors.Is(err, driver.ErrWake) {
				t.Errorf("OpenGrip error %v reports an arm's wake-up failure", err)
			}
			if !ap.Closed {
				t.Error("OpenGrip did not close the port it failed on")
			}
		})
	}
}

// TestOpenGripIdentifiesThroughStatusFrames plays a dongle by hand on a real
// pseudo-terminal: it streams its grip's status without pause, so a status
// frame comes before the info frame that answers the query. Status frames
// hold the grip-info header byte (0xD0) in their payload (here in the
// grip's id), and that byte must not be taken for the start of an info
// frame: the grip must open with the identity the info frame gives.
func TestOpenGripIdentifiesThroughStatusFrames(t *testing.T) {
	tests := []struct {
		name string
		id   uint16
	}{
		{"id with 0xD0 in its low byte", 0x12D0},
		{"id with 0xD0 in its high byte", 0xD012},
		{"id without 0xD0", 0x1234},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			status := wire.GripStatus{ID: tc.id, Orientation: hw.Quat{W: 1}, Battery: 0.5}
			out := wire.AppendGripStatus(nil, &status)
			out = wire.AppendGripInfo(out, wire.GripInfo{ID: tc.id, Model: 3})
			out = wire.AppendGripStatus(out, &status)
			pty := playDongle(t, out)
			p, err := serial.Open(pty.Path)
			if err != nil {
				t.Fatal(err)
			}
			g, err := driver.OpenGrip(p, driver.GripOptions{Path: pty.Path, InfoTimeout: testReplyTimeout})
			if err != nil {
				t.Fatalf("OpenGrip: %v", err)
			}
			defer g.Close()
			if got, want := g.Info().ID, strconv.Itoa(int(tc.id)); got != want {
				t.Errorf("Info().ID = %s, want %s (UUID %s)", got, want, g.Info().UUID)
			}
			var st hw.State
			if err := g.Exchange(nil, &st); err != nil {
				t.Fatalf("Exchange: %v", err)
			}
			if st.Battery != 0.5 {
				t.Errorf("battery %v, want 0.5 from the grip's status", st.Battery)
			}
		})
	}
}

// An unplugged device's port reads as hung up: the driver's error wraps
// hw.ErrGone, so the loop fails the device at once instead of after the
// run of misses a silent one gets. Arm and grip alike.
func TestUnpluggedDeviceIsGone(t *testing.T) {
	tests := []struct {
		name string
		kind hw.Kind
	}{
		{"arm", hw.KindArm},
		{"grip", hw.KindGrip},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, path := startEmulator(t, emulator.Options{Kind: tc.kind, Index: 60 + i})
			var dev hw.Driver
			if tc.kind == hw.KindArm {
				dev = openArm(t, path, driver.ArmOptions{ReplyTimeout: 50 * time.Millisecond})
			} else {
				p, err := serial.Open(path)
				if err != nil {
					t.Fatal(err)
				}
				g, err := driver.OpenGrip(p, driver.GripOptions{Path: path, InfoTimeout: testReplyTimeout})
				if err != nil {
					t.Fatalf("OpenGrip: %v", err)
				}
				t.Cleanup(func() { g.Close() })
				dev = g
			}
			cmd := hw.Command{}
			var st hw.State
			if err := dev.Exchange(&cmd, &st); err != nil {
				t.Fatalf("Exchange before the unplug: %v", err)
			}
			if err := e.Unplug(); err != nil {
				t.Fatal(err)
			}
			var err error
			hwtest.Eventually(t, 10*time.Second, "an exchange to fail after the unplug", func() bool {
				err = dev.Exchange(&cmd, &st)
				return err != nil
			})
			if !errors.Is(err, hw.ErrGone) {
				t.Errorf("Exchange after the unplug: %v, want it to wrap hw.ErrGone", err)
			}
		})
	}
}

// TestGripWithItsSensorDownReportsItsError: a grip whose orientation
// sensor is down streams its error beside a zero quaternion. Its frames
// are its own (error, buttons, battery): the driver reports them and keeps
// the last orientation it had, where it used to drop every such frame as
// noise and, after StaleAfter, fail the grip as switched off.
func TestGripWithItsSensorDownReportsItsError(t *testing.T) {
	const id = 0x1234
	good := wire.GripStatus{ID: id, Orientation: hw.Quat{Z: 1}, Battery: 0.5}
	down := wire.GripStatus{ID: id, Error: 5, Buttons: 1, Battery: 0.25}
	out := wire.AppendGripInfo(nil, wire.GripInfo{ID: id, Model: 3})
	out = wire.AppendGripStatus(out, &good)
	for range 20 {
		out = wire.AppendGripStatus(out, &down)
	}
	pty := playDongle(t, out)
	g := openGrip(t, pty.Path, driver.GripOptions{InfoTimeout: time.Second, StaleAfter: 10 * time.Second})
	var st hw.State
	hwtest.Eventually(t, 10*time.Second, "the grip's error reported", func() bool {
		if err := g.Exchange(nil, &st); err != nil {
			t.Fatalf("Exchange: %v", err)
		}
		return st.GripError == 5
	})
	if st.Buttons&hw.ButtonA == 0 || st.Battery != 0.25 || st.Status&hw.StatusReady != 0 {
		t.Errorf("buttons %v, battery %v, status %v: want button A, 0.25, not ready", st.Buttons, st.Battery, st.Status)
	}
	if st.Orientation != good.Orientation {
		t.Errorf("orientation %v, want the last one the grip sent (%v)", st.Orientation, good.Orientation)
	}
}

// openGrip opens the real serial port at path and the grip behind it,
// closed when the test ends.
func openGrip(t *testing.T, path string, o driver.GripOptions) *driver.Grip {
	t.Helper()
	p, err := serial.Open(path)
	if err != nil {
		t.Fatalf("serial.Open: %v", err)
	}
	o.Path = path
	g, err := driver.OpenGrip(p, o)
	if err != nil {
		t.Fatalf("OpenGrip: %v", err)
	}
	t.Cleanup(func() { g.Close() })
	return g
}

// playDongle plays a dongle by hand on a real pseudo-terminal: it answers
// every grip-info query with reply. The caller opens pty.Path.
func playDongle(t *testing.T, reply []byte) *emulator.PTY {
	t.Helper()
	pty, err := emulator.OpenPTY()
	if err != nil {
		hwtest.SkipIfUnsupported(t, err)
		t.Fatal(err)
	}
	served := make(chan struct{})
	t.Cleanup(func() { pty.Close(); <-served })
	go func() {
		defer close(served)
		buf := make([]byte, 64)
		for {
			n, err := pty.Master.Read(buf)
			if err != nil {
				return
			}
			if bytes.IndexByte(buf[:n], wire.HeaderGripInfo) < 0 {
				continue
			}
			if _, err := pty.Master.Write(reply); err != nil {
				return
			}
		}
	}()
	return pty
}

// A dongle's nonsense is not passed on as a grip's state. A grip listed
// with id 0 is none (no grip has it: hapticd's grip ids are 1..65535, and
// 0 is what firmware reports for a failed identification): the driver
// takes the next grip listed, and fails to open, saying so, when the
// dongle lists no other; it opened a grip "0" that no status frame ever
// named, which then failed as switched off. A grip-error frame with code
// 0 (none) is no error: the grip stayed listed not ready without one.
func TestGripNonsenseIsNotPassedOn(t *testing.T) {
	const id = 0x1234
	status := wire.GripStatus{ID: id, Orientation: hw.Quat{W: 1}, Battery: 0.5}
	noError := wire.Append(nil, wire.ToHost, &wire.Message{Header: wire.HeaderGripError, GripUser: wire.GripStatus{ID: id}})
	tests := []struct {
		name    string
		reply   []byte
		wantErr error // from OpenGrip; nil: opens as grip id
	}{
		{"a grip listed with id 0, then a real one",
			append(wire.AppendGripInfo(wire.AppendGripInfo(nil, wire.GripInfo{Remaining: 1}), wire.GripInfo{ID: id, Model: 3}), wire.AppendGripStatus(nil, &status)...), nil},
		{"only a grip with id 0", wire.AppendGripInfo(nil, wire.GripInfo{Model: 3}), driver.ErrNoGripInfo},
		{"an error frame without an error",
			append(wire.AppendGripStatus(wire.AppendGripInfo(nil, wire.GripInfo{ID: id, Model: 3}), &status), noError...), nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pty := playDongle(t, tc.reply)
			p, err := serial.Open(pty.Path)
			if err != nil {
				t.Fatal(err)
			}
			g, err := driver.OpenGrip(p, driver.GripOptions{Path: pty.Path, InfoAttempts: 2, InfoTimeout: testReplyTimeout, StaleAfter: 10 * time.Second})
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) || !strings.Contains(fmt.Sprint(err), "id 0") {
					t.Fatalf("OpenGrip: %v, want an error that says id 0 and wraps %v", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("OpenGrip: %v", err)
			}
			defer g.Close()
			if got, want := g.Info().ID, strconv.Itoa(id); got != want {
				t.Fatalf("opened grip %s, want %s", got, want)
			}
			var st hw.State
			hwtest.Eventually(t, 10*time.Second, "the grip's status", func() bool {
				if err := g.Exchange(nil, &st); err != nil {
					t.Fatalf("Exchange: %v", err)
				}
				return st.Battery == 0.5
			})
			if st.Status&hw.StatusReady == 0 || st.GripError != 0 {
				t.Fatalf("status %v, error %d: want ready, no error", st.Status, st.GripError)
			}
		})
	}
}
