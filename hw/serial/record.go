package serial

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
)

// Direction says who sent recorded bytes.
type Direction uint8

const (
	HostToDevice Direction = iota + 1 // written by the host
	DeviceToHost                      // read by the host
)

func (d Direction) String() string {
	switch d {
	case HostToDevice:
		return "host"
	case DeviceToHost:
		return "device"
	}
	return "unknown"
}

// Record is one read or write seen on a port. A device record with no
// bytes is a read that got none: its timeout passed (or, rarely, the port
// woke it early) with the device silent.
type Record struct {
	At    time.Duration // since the recording started
	Dir   Direction
	Bytes []byte
}

// Recorder is a Port that passes every call to the port it wraps and notes
// the bytes that went through it.
type Recorder struct {
	port  Port
	start time.Time

	mu      sync.Mutex
	records []Record
}

// Tap starts recording the I/O of p.
func Tap(p Port) *Recorder { return &Recorder{port: p, start: time.Now()} }

func (r *Recorder) note(dir Direction, b []byte) {
	rec := Record{At: time.Since(r.start), Dir: dir, Bytes: append([]byte(nil), b...)}
	r.mu.Lock()
	r.records = append(r.records, rec)
	r.mu.Unlock()
}

// Read reads from the wrapped port and records what it got; a read that
// got nothing and no error (it timed out) too: a reply that missed its
// deadline is then missed in the replay as well.
func (r *Recorder) Read(p []byte) (int, error) {
	n, err := r.port.Read(p)
	if n > 0 || err == nil {
		r.note(DeviceToHost, p[:n])
	}
	return n, err
}

// Write writes to the wrapped port and records what it took.
func (r *Recorder) Write(p []byte) (int, error) {
	n, err := r.port.Write(p)
	if n > 0 {
		r.note(HostToDevice, p[:n])
	}
	return n, err
}

// SetReadTimeout passes through.
func (r *Recorder) SetReadTimeout(d time.Duration) error { return r.port.SetReadTimeout(d) }

// ResetInputBuffer passes through. Bytes dropped by it are not seen, so they
// are not recorded either.
func (r *Recorder) ResetInputBuffer() error { return r.port.ResetInputBuffer() }

// Close closes the wrapped port; the records stay available.
func (r *Recorder) Close() error { return r.port.Close() }

// Records returns a copy of what was recorded so far, consecutive records
// of one direction merged (reads and writes split arbitrarily on a real
// port, so the split carries no meaning), but for reads that got nothing,
// which stay where they were.
func (r *Recorder) Records() []Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	return merge(r.records)
}

func merge(in []Record) []Record {
	var out []Record
	for _, rec := range in {
		if n := len(out); n > 0 && out[n-1].Dir == rec.Dir && !rec.timedOut() && !out[n-1].timedOut() {
			out[n-1].Bytes = append(out[n-1].Bytes, rec.Bytes...)
			continue
		}
		out = append(out, Record{At: rec.At, Dir: rec.Dir, Bytes: append([]byte(nil), rec.Bytes...)})
	}
	return out
}

// timedOut says whether rec is a read that got nothing.
func (rec Record) timedOut() bool { return rec.Dir == DeviceToHost && len(rec.Bytes) == 0 }

// Replayer is a Port that plays a recorded device: Read serves the device's
// bytes once the host has written everything recorded before them, and Write
// checks the host's bytes against the recording. A recorded read that got
// nothing waits the read timeout and gets nothing again, so a reply that
// came after its deadline when recorded comes after it in the replay too
// (a recording from before such reads were kept serves each reply at once).
// Close fails when the recording was not played to its end or a write did
// not match.
type Replayer struct {
	mu       sync.Mutex
	records  []Record
	i, off   int // next record, and bytes of it already played
	timeout  time.Duration
	mismatch error
	closed   bool
	done     chan struct{} // closed by Close, ending a waiting timed-out read
}

// Replay returns a Replayer for records (which it copies).
func Replay(records []Record) *Replayer {
	return &Replayer{records: merge(records), done: make(chan struct{})}
}

// ErrClosed is returned by calls on a closed Replayer.
var ErrClosed = errors.New("hw/serial: port is closed; open it again")

// Read returns the next recorded device bytes. Where the recorded read got
// nothing, it waits the read timeout and returns 0, nil. When the host owes
// a write first (or the recording is over), it returns 0, nil at once as a
// silent device would after its read timeout.
func (r *Replayer) Read(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return 0, ErrClosed
	}
	if r.i < len(r.records) && r.records[r.i].timedOut() {
		r.i++
		if wait := r.timeout; wait > 0 {
			// Unlocked: Close may end the wait's port from another
			// goroutine, as on a real port.
			r.mu.Unlock()
			timer := time.NewTimer(wait)
			select {
			case <-timer.C:
			case <-r.done:
				timer.Stop()
			}
			r.mu.Lock()
			if r.closed {
				return 0, ErrClosed
			}
		}
		return 0, nil
	}
	if r.i >= len(r.records) || r.records[r.i].Dir != DeviceToHost {
		return 0, nil
	}
	rec := r.records[r.i].Bytes
	n := copy(p, rec[r.off:])
	r.advance(n)
	return n, nil
}

// Write checks p against the recorded host bytes.
func (r *Replayer) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return 0, ErrClosed
	}
	if r.mismatch != nil {
		return 0, r.mismatch
	}
	r.skipTimedOut()
	for done := 0; done < len(p); {
		if r.i >= len(r.records) || r.records[r.i].Dir != HostToDevice {
			r.mismatch = fmt.Errorf("hw/serial: replay: host wrote %x that the recording does not have at record %d; the driver sends more than the recorded device saw", p[done:], r.i)
			return done, r.mismatch
		}
		rec := r.records[r.i].Bytes[r.off:]
		n := min(len(rec), len(p)-done)
		if !bytes.Equal(rec[:n], p[done:done+n]) {
			r.mismatch = fmt.Errorf("hw/serial: replay: host wrote %x, the recording has %x at record %d; the driver's output changed", p[done:done+n], rec[:n], r.i)
			return done, r.mismatch
		}
		r.advance(n)
		done += n
	}
	return len(p), nil
}

// skipTimedOut passes over recorded reads that got nothing and that the
// host did not make (it wrote before them): they hold no bytes to check,
// and how often a driver reads before its deadline is the machine's
// timing, not its output.
func (r *Replayer) skipTimedOut() {
	for r.off == 0 && r.i < len(r.records) && r.records[r.i].timedOut() {
		r.i++
	}
}

func (r *Replayer) advance(n int) {
	r.off += n
	if r.off == len(r.records[r.i].Bytes) {
		r.i++
		r.off = 0
	}
}

// SetReadTimeout sets how long a recorded read that got nothing waits.
func (r *Replayer) SetReadTimeout(d time.Duration) error {
	r.mu.Lock()
	r.timeout = d
	r.mu.Unlock()
	return nil
}

// ResetInputBuffer is a no-op: the recording holds only bytes the host read,
// so none were pending when the real port was flushed.
func (r *Replayer) ResetInputBuffer() error { return nil }

// Close fails if a write did not match or recorded I/O is left over.
func (r *Replayer) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return ErrClosed
	}
	r.closed = true
	close(r.done)
	if r.mismatch != nil {
		return r.mismatch
	}
	r.skipTimedOut()
	if r.i < len(r.records) {
		left := 0
		for _, rec := range r.records[r.i:] {
			left += len(rec.Bytes)
		}
		return fmt.Errorf("hw/serial: replay: %d recorded bytes left over from record %d (%s); the driver stopped early or skipped I/O", left-r.off, r.i, r.records[r.i].Dir)
	}
	return nil
}

type jsonRecord struct {
	AtNs int64  `json:"at_ns"`
	Dir  string `json:"dir"`
	Hex  string `json:"hex"`
}

// WriteRecording writes records as JSON lines: {"at_ns","dir","hex"}.
func WriteRecording(w io.Writer, records []Record) error {
	enc := json.NewEncoder(w)
	for _, rec := range records {
		if err := enc.Encode(jsonRecord{AtNs: rec.At.Nanoseconds(), Dir: rec.Dir.String(), Hex: hex.EncodeToString(rec.Bytes)}); err != nil {
			return fmt.Errorf("hw/serial: write recording: %w", err)
		}
	}
	return nil
}

// ReadRecording reads records written by WriteRecording.
func ReadRecording(r io.Reader) ([]Record, error) {
	var out []Record
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	for line := 1; sc.Scan(); line++ {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var jr jsonRecord
		if err := json.Unmarshal(sc.Bytes(), &jr); err != nil {
			return nil, fmt.Errorf("hw/serial: read recording line %d: %w", line, err)
		}
		rec := Record{At: time.Duration(jr.AtNs)}
		switch jr.Dir {
		case "host":
			rec.Dir = HostToDevice
		case "device":
			rec.Dir = DeviceToHost
		default:
			return nil, fmt.Errorf("hw/serial: read recording line %d: direction %q, want \"host\" or \"device\"", line, jr.Dir)
		}
		b, err := hex.DecodeString(jr.Hex)
		if err != nil {
			return nil, fmt.Errorf("hw/serial: read recording line %d: %w", line, err)
		}
		rec.Bytes = b
		out = append(out, rec)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("hw/serial: read recording: %w", err)
	}
	return out, nil
}

var (
	_ Port = (*Recorder)(nil)
	_ Port = (*Replayer)(nil)
)
