package mcap

import (
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"sort"
)

// DefaultChunkSize is the uncompressed size at which a chunk is written.
const DefaultChunkSize = 256 << 10

// Writer writes one MCAP file. It is not safe for concurrent use: one
// goroutine (the recorder's) owns it.
type Writer struct {
	w         io.Writer
	offset    uint64
	dataCRC   hash.Hash32
	chunkSize int

	chunk      enc // the open chunk's records
	chunkStart uint64
	chunkEnd   uint64
	chunkIdx   map[uint16][]uint64 // channel → (log time, offset) pairs, flattened

	schemas  []Schema
	channels []Channel
	known    map[uint16]bool // channel IDs added
	indexes  []ChunkIndex
	stats    Statistics
	closed   bool
}

// NewWriter writes the magic and the header. chunkSize <= 0 means
// DefaultChunkSize.
func NewWriter(w io.Writer, h Header, chunkSize int) (*Writer, error) {
	if chunkSize <= 0 {
		chunkSize = DefaultChunkSize
	}
	wr := &Writer{
		w: w, dataCRC: crc32.NewIEEE(), chunkSize: chunkSize,
		chunkIdx: map[uint16][]uint64{}, known: map[uint16]bool{},
		stats: Statistics{ChannelMessageCounts: map[uint16]uint64{}},
	}
	var e enc
	e = append(e, Magic...)
	e = e.record(OpHeader, func(e enc) enc { return e.str(h.Profile).str(h.Library) })
	return wr, wr.write(e)
}

func (w *Writer) write(b []byte) error {
	n, err := w.w.Write(b)
	w.offset += uint64(n)
	_, _ = w.dataCRC.Write(b[:n])
	if err != nil {
		return fmt.Errorf("mcap: write: %w", err)
	}
	return nil
}

// AddSchema writes a schema record into the data section.
func (w *Writer) AddSchema(s Schema) error {
	if s.ID == 0 {
		return errors.New("mcap: schema id 0 is reserved")
	}
	w.schemas = append(w.schemas, s)
	w.stats.SchemaCount++
	return w.write(enc(nil).schema(s))
}

// AddChannel writes a channel record into the data section, ahead of the
// chunk that holds its first messages.
func (w *Writer) AddChannel(c Channel) error {
	if w.known[c.ID] {
		return fmt.Errorf("mcap: channel %d added twice", c.ID)
	}
	w.known[c.ID] = true
	w.channels = append(w.channels, c)
	w.stats.ChannelCount++
	return w.write(enc(nil).channel(c))
}

// WriteMessage adds a message to the open chunk, writing the chunk out
// once it reaches the chunk size.
func (w *Writer) WriteMessage(m Message) error {
	if !w.known[m.ChannelID] {
		return fmt.Errorf("mcap: message on unknown channel %d", m.ChannelID)
	}
	if len(w.chunk) == 0 || m.LogTime < w.chunkStart {
		w.chunkStart = m.LogTime
	}
	if m.LogTime > w.chunkEnd {
		w.chunkEnd = m.LogTime
	}
	w.chunkIdx[m.ChannelID] = append(w.chunkIdx[m.ChannelID], m.LogTime, uint64(len(w.chunk)))
	w.chunk = w.chunk.message(m)
	if w.stats.MessageCount == 0 || m.LogTime < w.stats.MessageStartTime {
		w.stats.MessageStartTime = m.LogTime
	}
	if m.LogTime > w.stats.MessageEndTime {
		w.stats.MessageEndTime = m.LogTime
	}
	w.stats.MessageCount++
	w.stats.ChannelMessageCounts[m.ChannelID]++
	if len(w.chunk) >= w.chunkSize {
		return w.Flush()
	}
	return nil
}

// Buffered is how many bytes of messages the open chunk holds, not yet
// written: zero right after a chunk was written (by Flush, or by the
// WriteMessage that filled it).
func (w *Writer) Buffered() int { return len(w.chunk) }

// Flush writes the open chunk, if any, and its message indexes. A file cut
// short after a Flush holds every message written before it.
func (w *Writer) Flush() error {
	if len(w.chunk) == 0 {
		return nil
	}
	ci := ChunkIndex{
		MessageStartTime: w.chunkStart, MessageEndTime: w.chunkEnd,
		ChunkStartOffset: w.offset, MessageIndexOffsets: map[uint16]uint64{},
		CompressedSize: uint64(len(w.chunk)), UncompressedSize: uint64(len(w.chunk)),
	}
	out := enc(nil).record(OpChunk, func(e enc) enc {
		e = e.u64(w.chunkStart).u64(w.chunkEnd).u64(uint64(len(w.chunk))).u32(crc(w.chunk)).str("")
		return append(e.u64(uint64(len(w.chunk))), w.chunk...)
	})
	ci.ChunkLength = uint64(len(out))
	ids := make([]int, 0, len(w.chunkIdx))
	for id := range w.chunkIdx {
		ids = append(ids, int(id))
	}
	sort.Ints(ids)
	for _, id := range ids {
		pairs := w.chunkIdx[uint16(id)]
		ci.MessageIndexOffsets[uint16(id)] = w.offset + uint64(len(out))
		out = out.record(OpMessageIndex, func(e enc) enc {
			e = e.u16(uint16(id)).u32(uint32(len(pairs) * 8))
			for _, v := range pairs {
				e = e.u64(v)
			}
			return e
		})
	}
	ci.MessageIndexLength = uint64(len(out)) - ci.ChunkLength
	w.chunk = w.chunk[:0]
	clear(w.chunkIdx)
	w.indexes = append(w.indexes, ci)
	w.stats.ChunkCount++
	start := w.offset
	if err := w.write(out); err != nil {
		if w.offset-start >= ci.ChunkLength {
			return fmt.Errorf("%w: %w", ErrChunkWritten, err)
		}
		return err
	}
	return nil
}

// ErrChunkWritten is in the error of a Flush (or of the WriteMessage or
// Close that flushed) whose chunk reached the file whole before the write
// failed: a reader of the file up to its cut reads that chunk's messages.
var ErrChunkWritten = errors.New("mcap: the chunk was written whole, what follows it was not")

// Statistics returns what has been written so far.
func (w *Writer) Statistics() Statistics { return w.stats }

// Close writes the last chunk, the data end, the summary, the summary
// offsets, the footer and the closing magic. It does not close the
// underlying writer.
func (w *Writer) Close() error {
	if w.closed {
		return nil
	}
	w.closed = true
	if err := w.Flush(); err != nil {
		return err
	}
	if err := w.write(enc(nil).record(OpDataEnd, func(e enc) enc { return e.u32(w.dataCRC.Sum32()) })); err != nil {
		return err
	}
	summaryStart := w.offset
	var sum enc
	type group struct {
		op         byte
		start, end int
	}
	var groups []group
	add := func(op byte, fill func(enc) enc) {
		start := len(sum)
		sum = fill(sum)
		if len(sum) > start {
			groups = append(groups, group{op, start, len(sum)})
		}
	}
	add(OpSchema, func(e enc) enc {
		for _, s := range w.schemas {
			e = e.schema(s)
		}
		return e
	})
	add(OpChannel, func(e enc) enc {
		for _, c := range w.channels {
			e = e.channel(c)
		}
		return e
	})
	add(OpStatistics, func(e enc) enc {
		s := w.stats
		return e.record(OpStatistics, func(e enc) enc {
			e = e.u64(s.MessageCount).u16(s.SchemaCount).u32(s.ChannelCount).u32(s.AttachmentCount).
				u32(s.MetadataCount).u32(s.ChunkCount).u64(s.MessageStartTime).u64(s.MessageEndTime)
			return e.u16u64Map(s.ChannelMessageCounts)
		})
	})
	add(OpChunkIndex, func(e enc) enc {
		for _, ci := range w.indexes {
			e = e.record(OpChunkIndex, func(e enc) enc {
				e = e.u64(ci.MessageStartTime).u64(ci.MessageEndTime).u64(ci.ChunkStartOffset).u64(ci.ChunkLength).
					u16u64Map(ci.MessageIndexOffsets).u64(ci.MessageIndexLength).str(ci.Compression)
				return e.u64(ci.CompressedSize).u64(ci.UncompressedSize)
			})
		}
		return e
	})
	offsetStart := summaryStart + uint64(len(sum))
	for _, g := range groups {
		sum = sum.record(OpSummaryOffset, func(e enc) enc {
			return e.u8(g.op).u64(summaryStart + uint64(g.start)).u64(uint64(g.end - g.start))
		})
	}
	if len(sum) == 0 {
		summaryStart, offsetStart = 0, 0
	}
	// The summary CRC covers the summary and summary offsets and the
	// footer up to its own CRC field.
	sum = sum.u8(OpFooter).u64(8 + 8 + 4).u64(summaryStart).u64(offsetStart)
	sum = sum.u32(crc(sum))
	sum = append(sum, Magic...)
	return w.write(sum)
}
