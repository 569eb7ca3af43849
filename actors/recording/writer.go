package recording

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/hapticd/hapticd/actors/store"
	"github.com/hapticd/hapticd/protocol/mcap"
)

// writer owns one recording's file: it turns queued items into messages on
// channels made on first use, writes a chunk at least every flushEvery and
// records the drop counters with each chunk. One goroutine runs it.
type writer struct {
	rs        *Recorder
	r         *recording
	f         *os.File
	w         *mcap.Writer
	schemaIDs map[string]uint16 // kind → schema
	channels  map[string]uint16 // topic → channel
	seq       map[uint16]uint32 // channel → last sequence number
	// failed stops writing after the first error: the recording ends
	// there (Recorder.writeFailed) and what reaches the writer after it
	// counts as dropped. unsure counts the messages in the open chunk,
	// unsureStats the recorder's own counter records among them: a failure
	// loses that chunk, so they move from written to dropped (the counter
	// records excepted, which are no message of the service's).
	failed      bool
	unsure      uint64
	unsureStats uint64
}

func newWriter(rs *Recorder, r *recording, f *os.File, w *mcap.Writer) *writer {
	return &writer{rs: rs, r: r, f: f, w: w, schemaIDs: map[string]uint16{}, channels: map[string]uint16{}, seq: map[uint16]uint32{}}
}

// run writes until the producers (pump and event reader) have ended and
// the queue is empty, then closes the file, lists r stopped and closes
// r.done.
func (wr *writer) run(producers *sync.WaitGroup) {
	defer func() {
		wr.rs.retire(wr.r)
		close(wr.r.done)
	}()
	// Once the producers end nothing more is queued: what is there is
	// written, then the file closed.
	stopped := make(chan struct{})
	go func() { producers.Wait(); close(stopped) }()
	t := time.NewTicker(flushEvery)
	defer t.Stop()
	for {
		select {
		case it := <-wr.r.queue:
			wr.emit(it)
		case <-t.C:
			wr.flush()
		case <-stopped:
			wr.finish()
			return
		}
	}
}

// addSchemas writes the schemas, before run: Start fails on its error.
func (wr *writer) addSchemas() error {
	for i, s := range minimalSchemas {
		id := uint16(i + 1)
		wr.schemaIDs[s.kind] = id
		if err := wr.w.AddSchema(mcap.Schema{ID: id, Name: s.name, Encoding: "jsonschema", Data: wr.rs.schemas[s.kind]}); err != nil {
			return err
		}
	}
	return nil
}

// emit writes one item, on its channel.
func (wr *writer) emit(it item) {
	if it.buf != nil {
		defer wr.rs.stateBufs.Put(it.buf) // WriteMessage copies the data
	}
	if wr.failed {
		wr.lost(it)
		return
	}
	ch, ok := wr.channel(it)
	if !ok {
		wr.lost(it)
		return
	}
	wr.seq[ch]++
	if err := wr.w.WriteMessage(mcap.Message{ChannelID: ch, Sequence: wr.seq[ch], LogTime: uint64(it.ns), PublishTime: uint64(it.ns), Data: it.data}); err != nil {
		if errors.Is(err, mcap.ErrChunkWritten) {
			// The message filled a chunk that reached the file whole.
			wr.r.written.Add(1)
		} else {
			wr.lost(it)
		}
		wr.fail(err)
		return
	}
	wr.r.written.Add(1)
	if wr.w.Buffered() == 0 {
		wr.unsure, wr.unsureStats = 0, 0 // this message filled a chunk, now written
		return
	}
	wr.unsure++
	if it.kind == KindStats {
		wr.unsureStats++
	}
}

// lost counts an item that will not be in the file (the recorder's own
// counters excepted: they are no message of the service's).
func (wr *writer) lost(it item) {
	if it.kind != KindStats {
		wr.r.dropped.Add(1)
	}
}

// channel returns the item's channel, adding it on first use.
func (wr *writer) channel(it item) (uint16, bool) {
	key := validUTF8(it.key)
	name := topic(it.kind, key)
	if ch, ok := wr.channels[name]; ok {
		return ch, true
	}
	ch := uint16(len(wr.channels) + 1)
	wr.channels[name] = ch
	md := map[string]string{"kind": it.kind}
	if key != "" {
		md["key"] = key
	}
	if it.seat > 0 {
		md["order"] = strconv.Itoa(it.seat - 1)
	}
	if it.kind == KindFrame {
		md[InventoryMarked] = "true"
		if _, lost := wr.r.lostInventories.Load(it.key); lost {
			md[InventoryLost] = "true"
		}
	}
	if err := wr.w.AddChannel(mcap.Channel{ID: ch, SchemaID: wr.schemaIDs[it.kind], Topic: name, MessageEncoding: messageEncoding, Metadata: md}); err != nil {
		wr.fail(err)
		return 0, false
	}
	return ch, true
}

// stats records the recorder's counters.
func (wr *writer) stats() {
	r := wr.r
	data, _ := json.Marshal(struct {
		Dropped       uint64 `json:"dropped"`
		DroppedStates uint64 `json:"dropped_states"`
		Messages      uint64 `json:"messages"`
	}{r.droppedAll(), r.droppedStates.Load(), r.written.Load()})
	wr.emit(item{kind: KindStats, ns: r.clock.Now(), data: data})
}

// flush writes the open chunk, counters last.
func (wr *writer) flush() {
	if wr.failed {
		return
	}
	wr.stats()
	if err := wr.w.Flush(); err != nil {
		wr.fail(err)
		return
	}
	wr.unsure, wr.unsureStats = 0, 0
}

// finish writes what is left on the queue, the counters and the summary,
// and closes the file.
func (wr *writer) finish() {
	for drained := false; !drained; {
		select {
		case it := <-wr.r.queue:
			wr.emit(it)
		default:
			drained = true
		}
	}
	if !wr.failed {
		// The last chunk first, as flush writes it: once it is in the
		// file its messages are written, whatever becomes of the data
		// end, the summary and the footer Close writes after it (several
		// KB: every schema again), and a disk that fills there must not
		// count them dropped.
		wr.flush()
		if !wr.failed {
			if err := wr.w.Close(); err != nil {
				wr.fail(err)
			}
		}
	}
	// The stop answers once this returns: the file, and its name in the
	// directory, must then survive a power cut too, not only the process.
	// A file that failed keeps what reached it before; its error stands.
	if err := wr.f.Sync(); err != nil && !wr.failed {
		wr.r.setErr(fmt.Errorf("recording: sync %s: %w", wr.r.path, err))
	} else if err := store.SyncDir(filepath.Dir(wr.r.path)); err != nil && !wr.failed {
		wr.r.setErr(fmt.Errorf("recording: sync the directory of %s: %w", wr.r.path, err))
	}
	if err := wr.f.Close(); err != nil {
		wr.r.setErr(fmt.Errorf("recording: close %s: %w", wr.r.path, err))
	}
}

// fail keeps the first write error and ends the recording there: the
// messages since the last flush move from written to dropped, nothing more
// is recorded, and the recorder says so (Recorder.writeFailed).
func (wr *writer) fail(err error) {
	if wr.failed {
		return
	}
	wr.failed = true
	if errors.Is(err, mcap.ErrChunkWritten) {
		// The messages counted unsure are in that chunk, in the file.
		wr.unsure, wr.unsureStats = 0, 0
	}
	err = fmt.Errorf("recording: write %s: %w", wr.r.path, err)
	wr.r.setErr(err)
	wr.r.written.Add(^(wr.unsure - 1)) // less unsure; never more than it counted
	wr.r.dropped.Add(wr.unsure - wr.unsureStats)
	wr.unsure, wr.unsureStats = 0, 0
	wr.rs.writeFailed(wr.r, err)
}
