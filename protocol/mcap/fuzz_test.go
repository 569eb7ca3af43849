package mcap_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/hapticd/hapticd/protocol/mcap"
)

// FuzzRead feeds the reader whole files, cut files and damaged files: a
// recording comes from disk, where a killed service or a bad sector leaves
// anything, so Read must answer every input with a file or an error and
// never panic. What it accepts as complete must hold together: every
// message on a known channel, and as many as the statistics count.
func FuzzRead(f *testing.F) {
	for _, chunk := range []int{0, 64, 256} {
		b := smallSample(f, chunk)
		f.Add(b)
		f.Add(b[:len(b)/2])
		f.Add(b[:len(b)-len(mcap.Magic)-1])
	}
	f.Add([]byte{})
	f.Add(append([]byte(nil), mcap.Magic...))
	f.Fuzz(checkRead)
}

// checkRead is FuzzRead's check of one input.
func checkRead(t *testing.T, b []byte) {
	{
		file, err := mcap.Read(b)
		if file == nil {
			t.Fatalf("Read returned no file (err %v): callers use what was read before an error", err)
		}
		for i, m := range file.Messages {
			if _, ok := file.Channels[m.ChannelID]; !ok {
				t.Fatalf("message %d on channel %d, which no channel record declared", i, m.ChannelID)
			}
		}
		if err != nil {
			if file.Complete && errors.Is(err, mcap.ErrTruncated) {
				t.Fatalf("a truncated file read as complete")
			}
			return
		}
		if !file.Complete {
			t.Fatal("no error, yet the file is not complete")
		}
		if s := file.Statistics; s != nil && s.MessageCount != uint64(len(file.Messages)) {
			t.Fatalf("accepted a file whose statistics count %d messages, holding %d", s.MessageCount, len(file.Messages))
		}
		// What was accepted writes out again and reads back the same.
		var out bytes.Buffer
		w, err := mcap.NewWriter(&out, file.Header, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range file.Schemas {
			if s.ID == 0 {
				continue // 0 means "no schema" and is never written
			}
			if err := w.AddSchema(s); err != nil {
				t.Fatal(err)
			}
		}
		for _, c := range file.Channels {
			if err := w.AddChannel(c); err != nil {
				t.Fatal(err)
			}
		}
		for _, m := range file.Messages {
			if err := w.WriteMessage(m); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		again, err := mcap.Read(out.Bytes())
		if err != nil {
			t.Fatalf("re-read what was accepted: %v", err)
		}
		if len(again.Messages) != len(file.Messages) {
			t.Fatalf("re-read %d messages, wrote %d", len(again.Messages), len(file.Messages))
		}
		for i := range again.Messages {
			a, m := again.Messages[i], file.Messages[i]
			if a.ChannelID != m.ChannelID || a.Sequence != m.Sequence || a.LogTime != m.LogTime || !bytes.Equal(a.Data, m.Data) {
				t.Fatalf("message %d re-read as %+v, written %+v", i, a, m)
			}
		}
	}
}

// smallSample is a file of two channels and a dozen messages: small seeds
// keep the fuzzer's mutations where the records are.
func smallSample(t testing.TB, chunkSize int) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := mcap.NewWriter(&buf, mcap.Header{Library: "fuzz"}, chunkSize)
	if err != nil {
		t.Fatal(err)
	}
	steps := []error{
		w.AddSchema(mcap.Schema{ID: 1, Name: "s", Encoding: "jsonschema", Data: []byte(`{}`)}),
		w.AddChannel(mcap.Channel{ID: 1, SchemaID: 1, Topic: "/a", MessageEncoding: "json", Metadata: map[string]string{"kind": "state"}}),
		w.AddChannel(mcap.Channel{ID: 2, Topic: "/b", MessageEncoding: "json"}),
	}
	for i := range 12 {
		steps = append(steps, w.WriteMessage(mcap.Message{ChannelID: uint16(1 + i%2), Sequence: uint32(i), LogTime: uint64(100 + i), Data: []byte(`{"i":1}`)}))
	}
	steps = append(steps, w.Close())
	if err := errors.Join(steps...); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// A summary whose chunk index points past the end of the file, or so far
// that offset plus length wraps around to a small number, is refused with
// an error: FuzzRead's first find, which used to index out of range.
func TestReadRefusesWrappingChunkIndex(t *testing.T) {
	tests := []struct {
		name          string
		start, length uint64 // the chunk index's chunk start offset and length
	}{
		{"offset past the end", 1 << 40, 10},
		{"offset plus length wraps", 1<<64 - 8, 16},
		{"length wraps", 8, 1<<64 - 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := smallSample(t, 0)
			body := chunkIndexBody(t, b)
			binary.LittleEndian.PutUint64(b[body+16:], tt.start)
			binary.LittleEndian.PutUint64(b[body+24:], tt.length)
			if _, err := mcap.Read(b); err == nil {
				t.Fatal("read a file whose chunk index points outside it")
			}
		})
	}
}

// chunkIndexBody returns where the first chunk index record's body starts.
func chunkIndexBody(t *testing.T, b []byte) int {
	t.Helper()
	off := len(mcap.Magic)
	for off+9 <= len(b) {
		op, n := b[off], int(binary.LittleEndian.Uint64(b[off+1:]))
		if op == mcap.OpChunkIndex {
			return off + 9
		}
		off += 9 + n
	}
	t.Fatal("no chunk index record")
	return 0
}
