package mcap_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/hapticd/hapticd/protocol/mcap"
	"github.com/hapticd/hapticd/protocol/mcap/mcaptest"
)

// writeSample writes two channels over several chunks and returns the
// file and the messages written.
func writeSample(t testing.TB, chunkSize int) ([]byte, []mcap.Message) {
	t.Helper()
	var buf bytes.Buffer
	w, err := mcap.NewWriter(&buf, mcap.Header{Profile: "", Library: "hapticd test"}, chunkSize)
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(w.AddSchema(mcap.Schema{ID: 1, Name: "state", Encoding: "jsonschema", Data: []byte(`{"type":"object"}`)}))
	must(w.AddChannel(mcap.Channel{ID: 1, SchemaID: 1, Topic: "/devices/arm-1/state", MessageEncoding: "json", Metadata: map[string]string{"device": "arm-1"}}))
	var sent []mcap.Message
	for i := 0; i < 500; i++ {
		if i == 100 { // a channel added mid-recording, while a chunk is open
			must(w.AddChannel(mcap.Channel{ID: 2, SchemaID: 1, Topic: "/sessions/1/frames", MessageEncoding: "json"}))
		}
		ch := uint16(1)
		if i >= 100 && i%3 == 0 {
			ch = 2
		}
		m := mcap.Message{ChannelID: ch, Sequence: uint32(i), LogTime: uint64(1000 + i*10), PublishTime: uint64(1000 + i*10), Data: []byte(fmt.Sprintf(`{"i":%d}`, i))}
		must(w.WriteMessage(m))
		sent = append(sent, m)
	}
	must(w.Close())
	return buf.Bytes(), sent
}

func TestRoundTrip(t *testing.T) {
	b, sent := writeSample(t, 1024)
	f, err := mcap.Read(b)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	if !f.Complete || f.Statistics == nil || f.Chunks < 3 || len(f.ChunkIndexes) != f.Chunks {
		t.Fatalf("complete %v, statistics %v, %d chunks, %d chunk indexes: want a complete, chunked, indexed file", f.Complete, f.Statistics, f.Chunks, len(f.ChunkIndexes))
	}
	if len(f.Messages) != len(sent) {
		t.Fatalf("read %d messages, wrote %d", len(f.Messages), len(sent))
	}
	for i, m := range f.Messages {
		if m.ChannelID != sent[i].ChannelID || m.LogTime != sent[i].LogTime || !bytes.Equal(m.Data, sent[i].Data) {
			t.Fatalf("message %d: read %+v, wrote %+v", i, m, sent[i])
		}
	}
	if f.Channels[1].Metadata["device"] != "arm-1" || f.Schemas[1].Encoding != "jsonschema" {
		t.Fatalf("channel %+v, schema %+v", f.Channels[1], f.Schemas[1])
	}
}

// A file cut anywhere keeps every chunk that was wholly written before the cut.
func TestTruncatedKeepsCompleteChunks(t *testing.T) {
	b, _ := writeSample(t, 1024)
	full, err := mcap.Read(b)
	if err != nil {
		t.Fatal(err)
	}
	for cut := 8; cut < len(b)-1; cut += 97 {
		f, err := mcap.Read(b[:cut])
		if !errors.Is(err, mcap.ErrTruncated) {
			t.Fatalf("cut at %d: err %v, want ErrTruncated", cut, err)
		}
		want := 0
		for _, ci := range full.ChunkIndexes {
			if ci.ChunkStartOffset+ci.ChunkLength <= uint64(cut) {
				want++
			}
		}
		if f.Chunks != want {
			t.Fatalf("cut at %d: %d chunks read, %d were complete", cut, f.Chunks, want)
		}
	}
}

// A damaged chunk (a flipped byte inside it) ends the read there as a cut
// would: every chunk before it is read, with its messages, and the error
// says the file is damaged. One damaged chunk made the whole file
// unreadable: export and replay gave no row at all (tourrec2).
func TestDamagedChunkKeepsTheChunksBefore(t *testing.T) {
	b, _ := writeSample(t, 1024)
	full, err := mcap.Read(b)
	if err != nil {
		t.Fatal(err)
	}
	for i, ci := range full.ChunkIndexes {
		damaged := bytes.Clone(b)
		damaged[ci.ChunkStartOffset+ci.ChunkLength-3] ^= 0xff // in the chunk's last record
		f, err := mcap.Read(damaged)
		if !errors.Is(err, mcap.ErrDamaged) {
			t.Fatalf("chunk %d damaged: err %v, want ErrDamaged", i, err)
		}
		before, _ := mcap.Read(b[:ci.ChunkStartOffset])
		if f.Chunks != i || len(f.Messages) != len(before.Messages) {
			t.Fatalf("chunk %d damaged: %d chunks and %d messages read, want the %d chunks and %d messages before it", i, f.Chunks, len(f.Messages), i, len(before.Messages))
		}
	}
}

func TestReferenceReaderAgrees(t *testing.T) {
	b, _ := writeSample(t, 1024)
	path := filepath.Join(t.TempDir(), "sample.mcap")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := mcap.Read(b)
	if err != nil {
		t.Fatal(err)
	}
	js := mcaptest.Read(t, path)
	counts := map[uint16]int{}
	for _, m := range f.Messages {
		counts[m.ChannelID]++
	}
	if len(js.Indexed.Channels) != len(f.Channels) {
		t.Fatalf("@mcap/core found %d channels, we wrote %d", len(js.Indexed.Channels), len(f.Channels))
	}
	for id, c := range f.Channels {
		k := strconv.Itoa(int(id))
		jc, ok := js.Indexed.Channels[k]
		if !ok || jc.Topic != c.Topic || jc.Count != counts[id] || js.Streamed.Channels[k] != counts[id] {
			t.Fatalf("channel %d: @mcap/core indexed %+v, streamed %d; we wrote %s with %d messages", id, jc, js.Streamed.Channels[k], c.Topic, counts[id])
		}
	}
	if !js.Streamed.Done {
		t.Fatal("@mcap/core's stream reader did not reach the end")
	}
}

// A chunk in a compression this reader does not read (zstd, lz4: another
// tool's file) is said so, not taken for damage, whose "chunks before it"
// would be read as all the file holds.
func TestCompressedChunkIsUnsupportedNotDamaged(t *testing.T) {
	record := func(op byte, body []byte) []byte {
		b := []byte{op}
		b = binary.LittleEndian.AppendUint64(b, uint64(len(body)))
		return append(b, body...)
	}
	str := func(s string) []byte { return append(binary.LittleEndian.AppendUint32(nil, uint32(len(s))), s...) }
	var chunk []byte
	chunk = binary.LittleEndian.AppendUint64(chunk, 0) // message start time
	chunk = binary.LittleEndian.AppendUint64(chunk, 0) // message end time
	chunk = binary.LittleEndian.AppendUint64(chunk, 4) // uncompressed size
	chunk = binary.LittleEndian.AppendUint32(chunk, 0) // uncompressed CRC: none
	chunk = append(chunk, str("zstd")...)
	chunk = binary.LittleEndian.AppendUint64(chunk, 4)
	chunk = append(chunk, 1, 2, 3, 4)
	file := append(bytes.Clone(mcap.Magic), record(mcap.OpHeader, append(str(""), str("other")...))...)
	file = append(file, record(mcap.OpChunk, chunk)...)
	_, err := mcap.Read(file)
	if err == nil || errors.Is(err, mcap.ErrDamaged) || !strings.Contains(err.Error(), "zstd") {
		t.Fatalf("a zstd chunk: %v; want an error naming the compression, not ErrDamaged", err)
	}
}
