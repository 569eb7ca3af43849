package mcap

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
)

// errUnsupported marks a chunk this reader cannot read, though it may be
// sound (a compression of another writer): not ErrDamaged, whose chunks
// before it would be read as all there is.
var errUnsupported = errors.New("not supported")

// File is everything Read found in a file.
type File struct {
	Header   Header
	Schemas  map[uint16]Schema
	Channels map[uint16]Channel
	// Messages in file order (chunk by chunk; within a chunk as written).
	Messages []Message
	// Chunks counts the chunks read.
	Chunks int
	// Statistics and ChunkIndexes come from the summary; nil when the file
	// has none (it was cut short).
	Statistics   *Statistics
	ChunkIndexes []ChunkIndex
	// Complete says the file ended with a footer and the closing magic.
	Complete bool
}

// Read reads a whole file from memory. A file cut short (a recorder
// killed mid-write) is read up to the last complete record and returned
// with ErrTruncated, so every chunk written before the cut is usable.
// Chunk CRCs and the summary's offsets and counts are checked; a chunk that
// fails its checks ends the read with ErrDamaged, the chunks before it
// read, as a cut would leave them.
func Read(b []byte) (*File, error) {
	f := &File{Schemas: map[uint16]Schema{}, Channels: map[uint16]Channel{}}
	if len(b) < len(Magic) || !bytes.Equal(b[:len(Magic)], Magic) {
		return f, fmt.Errorf("mcap: not an MCAP file (bad magic)")
	}
	off := uint64(len(Magic))
	inSummary := false
	for {
		if off == uint64(len(b)) {
			return f, ErrTruncated
		}
		if uint64(len(b))-off < 9 {
			return f, ErrTruncated
		}
		op := b[off]
		n := binary.LittleEndian.Uint64(b[off+1:])
		if n > uint64(len(b))-off-9 {
			return f, ErrTruncated
		}
		body := b[off+9 : off+9+n]
		recStart := off
		off += 9 + n
		switch op {
		case OpHeader:
			d := dec{b: body}
			f.Header = Header{Profile: d.str(), Library: d.str()}
			if d.err != nil {
				return f, fmt.Errorf("mcap: header at %d: %w", recStart, d.err)
			}
		case OpSchema, OpChannel, OpMessage:
			if err := f.inner(op, body); err != nil {
				return f, fmt.Errorf("mcap: record at %d: %w", recStart, err)
			}
		case OpChunk:
			if err := f.chunk(body); errors.Is(err, errUnsupported) {
				return f, fmt.Errorf("mcap: chunk at %d: %w", recStart, err)
			} else if err != nil {
				return f, fmt.Errorf("%w at byte %d: %w", ErrDamaged, recStart, err)
			}
		case OpDataEnd:
			inSummary = true
		case OpStatistics:
			s, err := readStatistics(body)
			if err != nil {
				return f, err
			}
			f.Statistics = &s
		case OpChunkIndex:
			ci, err := readChunkIndex(body)
			if err != nil {
				return f, err
			}
			f.ChunkIndexes = append(f.ChunkIndexes, ci)
		case OpFooter:
			if !bytes.Equal(b[off:], Magic) {
				return f, ErrTruncated
			}
			f.Complete = true
			return f, f.check(b, inSummary)
		}
		// Message indexes, summary offsets, attachments, metadata and
		// unknown opcodes are skipped, as the spec asks of readers.
	}
}

// inner decodes a record that may appear in the data section or a chunk.
func (f *File) inner(op byte, body []byte) error {
	d := dec{b: body}
	switch op {
	case OpSchema:
		s := Schema{ID: d.u16(), Name: d.str(), Encoding: d.str(), Data: d.bytes()}
		f.Schemas[s.ID] = s
	case OpChannel:
		c := Channel{ID: d.u16(), SchemaID: d.u16(), Topic: d.str(), MessageEncoding: d.str(), Metadata: d.stringMap()}
		f.Channels[c.ID] = c
	case OpMessage:
		m := Message{ChannelID: d.u16(), Sequence: d.u32(), LogTime: d.u64(), PublishTime: d.u64()}
		if d.err == nil {
			m.Data = d.b
			if _, ok := f.Channels[m.ChannelID]; !ok {
				return fmt.Errorf("message on channel %d before its channel record", m.ChannelID)
			}
			f.Messages = append(f.Messages, m)
		}
	}
	return d.err
}

// chunk reads one chunk's records into f, all or none of its messages.
func (f *File) chunk(body []byte) (err error) {
	had := len(f.Messages)
	defer func() {
		if err != nil {
			f.Messages = f.Messages[:had]
		}
	}()
	d := dec{b: body}
	_, _ = d.u64(), d.u64()
	size, sum, compression := d.u64(), d.u32(), d.str()
	recs := d.take(d.u64())
	if d.err != nil {
		return d.err
	}
	if compression != "" {
		return fmt.Errorf("%w: compression %q (hapticd writes none)", errUnsupported, compression)
	}
	if uint64(len(recs)) != size {
		return fmt.Errorf("records are %d bytes, header says %d", len(recs), size)
	}
	if sum != 0 && crc(recs) != sum {
		return fmt.Errorf("records CRC %08x, header says %08x", crc(recs), sum)
	}
	for len(recs) > 0 {
		if len(recs) < 9 {
			return fmt.Errorf("record cut short inside the chunk")
		}
		op, n := recs[0], binary.LittleEndian.Uint64(recs[1:])
		if n > uint64(len(recs))-9 {
			return fmt.Errorf("record cut short inside the chunk")
		}
		if err := f.inner(op, recs[9:9+n]); err != nil {
			return err
		}
		recs = recs[9+n:]
	}
	f.Chunks++
	return nil
}

// check compares the summary with what the data section held.
func (f *File) check(b []byte, sawDataEnd bool) error {
	if !sawDataEnd {
		return fmt.Errorf("mcap: no data end record")
	}
	if f.Statistics != nil {
		s := f.Statistics
		if s.MessageCount != uint64(len(f.Messages)) {
			return fmt.Errorf("mcap: statistics count %d messages, the data holds %d", s.MessageCount, len(f.Messages))
		}
		if int(s.ChunkCount) != f.Chunks {
			return fmt.Errorf("mcap: statistics count %d chunks, the data holds %d", s.ChunkCount, f.Chunks)
		}
	}
	for _, ci := range f.ChunkIndexes {
		if !spans(b, ci.ChunkStartOffset, max(ci.ChunkLength, 1)) || b[ci.ChunkStartOffset] != OpChunk {
			return fmt.Errorf("mcap: chunk index points at %d, which is no chunk", ci.ChunkStartOffset)
		}
		for ch, at := range ci.MessageIndexOffsets {
			if !spans(b, at, 9+2) || b[at] != OpMessageIndex || binary.LittleEndian.Uint16(b[at+9:]) != ch {
				return fmt.Errorf("mcap: chunk index's message index for channel %d at %d is not one", ch, at)
			}
		}
	}
	return nil
}

// spans says whether n bytes from off lie inside b. The summary's offsets
// come from the file, so off+n may wrap around: it is never computed.
func spans(b []byte, off, n uint64) bool {
	return off <= uint64(len(b)) && n <= uint64(len(b))-off
}

func readStatistics(body []byte) (Statistics, error) {
	d := dec{b: body}
	s := Statistics{MessageCount: d.u64(), SchemaCount: d.u16(), ChannelCount: d.u32(), AttachmentCount: d.u32(),
		MetadataCount: d.u32(), ChunkCount: d.u32(), MessageStartTime: d.u64(), MessageEndTime: d.u64()}
	s.ChannelMessageCounts = d.u16u64Map()
	if d.err != nil {
		return s, fmt.Errorf("mcap: statistics: %w", d.err)
	}
	return s, nil
}

func readChunkIndex(body []byte) (ChunkIndex, error) {
	d := dec{b: body}
	ci := ChunkIndex{MessageStartTime: d.u64(), MessageEndTime: d.u64(), ChunkStartOffset: d.u64(), ChunkLength: d.u64()}
	ci.MessageIndexOffsets = d.u16u64Map()
	ci.MessageIndexLength = d.u64()
	ci.Compression = d.str()
	ci.CompressedSize, ci.UncompressedSize = d.u64(), d.u64()
	if d.err != nil {
		return ci, fmt.Errorf("mcap: chunk index: %w", d.err)
	}
	return ci, nil
}
