package serial_test

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hapticd/hapticd/hw/serial"
	"os"
	"runtime"
)

func TestReplayerChecksTheHost(t *testing.T) {
	records := []serial.Record{
		{Dir: serial.HostToDevice, Bytes: []byte{0x0A}},
		{Dir: serial.DeviceToHost, Bytes: []byte{1, 2, 3}},
		{Dir: serial.HostToDevice, Bytes: []byte{0x2A, 9}},
		{Dir: serial.DeviceToHost, Bytes: []byte{4}},
	}
	tests := []struct {
		name      string
		play      func(p *serial.Replayer) error
		wantClose string // "" = Close succeeds
	}{
		{"whole recording", func(p *serial.Replayer) error {
			p.Write([]byte{0x0A})
			var b [8]byte
			n, _ := p.Read(b[:])
			if n != 3 {
				t.Errorf("read %d bytes, want 3", n)
			}
			// Split writes are fine: only the byte order matters.
			p.Write([]byte{0x2A})
			p.Write([]byte{9})
			p.Read(b[:])
			return nil
		}, ""},
		{"device silent until written to", func(p *serial.Replayer) error {
			var b [8]byte
			if n, err := p.Read(b[:]); n != 0 || err != nil {
				t.Errorf("Read before the host wrote = %d, %v; want a timeout (0, nil)", n, err)
			}
			return nil
		}, "left over"},
		{"stopped early", func(p *serial.Replayer) error {
			p.Write([]byte{0x0A})
			return nil
		}, "left over"},
		{"wrong bytes", func(p *serial.Replayer) error {
			if _, err := p.Write([]byte{0x0B}); err == nil {
				t.Error("Write of unrecorded bytes succeeded")
			}
			return nil
		}, "the recording has"},
		{"extra bytes", func(p *serial.Replayer) error {
			p.Write([]byte{0x0A})
			_, err := p.Write([]byte{0x0A})
			if err == nil {
				t.Error("Write while the device owes bytes succeeded")
			}
			return nil
		}, "does not have"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := serial.Replay(records)
			tc.play(p)
			err := p.Close()
			if tc.wantClose == "" && err != nil || tc.wantClose != "" && (err == nil || !strings.Contains(err.Error(), tc.wantClose)) {
				t.Errorf("Close = %v, want %q", err, tc.wantClose)
			}
		})
	}
}

func TestRecordingFileRoundTrip(t *testing.T) {
	in := []serial.Record{
		{At: 0, Dir: serial.HostToDevice, Bytes: []byte{0x0A}},
		{At: 34 * time.Microsecond, Dir: serial.DeviceToHost, Bytes: []byte{0x0A, 0x9D, 0x04, 0xFF}},
	}
	var buf bytes.Buffer
	if err := serial.WriteRecording(&buf, in); err != nil {
		t.Fatal(err)
	}
	out, err := serial.ReadRecording(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Errorf("round trip\n got %+v\nwant %+v", out, in)
	}
	if _, err := serial.ReadRecording(strings.NewReader(`{"at_ns":0,"dir":"sideways","hex":"00"}`)); err == nil {
		t.Error("a bad direction was accepted")
	}
}

func TestOpenMissingPortSaysWhy(t *testing.T) {
	_, err := serial.Open("/dev/does-not-exist-hapticd")
	if !errors.Is(err, serial.ErrNotFound) || !strings.Contains(err.Error(), "hw/serial: open /dev/does-not-exist-hapticd") {
		t.Fatalf("Open = %v", err)
	}
}

// A path that is no terminal (--hw-port /dev/null) says so, not that the
// device should be replugged.
func TestOpenWhatIsNoSerialPortSaysWhy(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no /dev/null")
	}
	_, err := serial.Open(os.DevNull)
	if !errors.Is(err, serial.ErrNotSerial) {
		t.Fatalf("Open(%s) = %v, want ErrNotSerial", os.DevNull, err)
	}
}

// A read that got nothing is recorded (an empty device record, kept apart
// from its neighbours and through the file), and replayed as a read that
// waits its timeout and gets nothing before the bytes that came after it.
// One the replayed host does not make (it writes first) is passed over,
// and so are those left at the end.
func TestTimedOutReadsAreRecordedAndReplayed(t *testing.T) {
	device := serial.Replay([]serial.Record{
		{Dir: serial.HostToDevice, Bytes: []byte{0x0A}},
		{Dir: serial.DeviceToHost, Bytes: []byte{1, 2}},
	})
	tap := serial.Tap(device)
	var b [8]byte
	tap.Read(b[:]) // nothing yet: the host owes its write
	tap.Write([]byte{0x0A})
	tap.Read(b[:1])
	tap.Read(b[:1])
	tap.Read(b[:]) // nothing more
	var file bytes.Buffer
	if err := serial.WriteRecording(&file, tap.Records()); err != nil {
		t.Fatal(err)
	}
	records, err := serial.ReadRecording(&file)
	if err != nil {
		t.Fatal(err)
	}
	var shape []string
	for _, r := range records {
		shape = append(shape, fmt.Sprintf("%s %x", r.Dir, r.Bytes))
	}
	if want := []string{"device ", "host 0a", "device 0102", "device "}; !reflect.DeepEqual(shape, want) {
		t.Fatalf("recorded %q, want %q", shape, want)
	}

	const timeout = 30 * time.Millisecond
	tests := []struct {
		name string
		play func(p *serial.Replayer)
	}{
		{"as recorded", func(p *serial.Replayer) {
			began := time.Now()
			if n, err := p.Read(b[:]); n != 0 || err != nil {
				t.Errorf("first Read = %d, %v; want the recorded timeout (0, nil)", n, err)
			}
			if waited := time.Since(began); waited < timeout {
				t.Errorf("the recorded timeout returned after %v, want at least the read timeout %v", waited, timeout)
			}
			p.Write([]byte{0x0A})
			if n, _ := p.Read(b[:]); n != 2 {
				t.Errorf("Read after the write = %d bytes, want the 2 recorded", n)
			}
			p.Read(b[:])
		}},
		{"host writes first and stops early", func(p *serial.Replayer) {
			if _, err := p.Write([]byte{0x0A}); err != nil {
				t.Errorf("Write past a recorded timeout the host did not wait: %v", err)
			}
			p.Read(b[:])
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := serial.Replay(records)
			p.SetReadTimeout(timeout)
			tc.play(p)
			if err := p.Close(); err != nil {
				t.Errorf("Close = %v, want nil", err)
			}
		})
	}
}

// A read replaying a recorded timeout must end when another goroutine
// closes the port, as on a real port, not after the whole timeout.
func TestCloseEndsAWaitingReplayedRead(t *testing.T) {
	device := serial.Replay([]serial.Record{{Dir: serial.DeviceToHost}})
	if err := device.SetReadTimeout(time.Hour); err != nil {
		t.Fatal(err)
	}
	read := make(chan error, 1)
	go func() {
		var b [8]byte
		_, err := device.Read(b[:])
		read <- err
	}()
	// Give the read time to start waiting; if Close comes first the read
	// returns ErrClosed at once, which the assertions accept too.
	time.Sleep(50 * time.Millisecond)
	device.Close()
	select {
	case err := <-read:
		if !errors.Is(err, serial.ErrClosed) {
			t.Fatalf("Read on a closed replayer = %v, want ErrClosed", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Read still waiting a minute after Close (its timeout is an hour)")
	}
}
