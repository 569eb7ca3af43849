// Package mcap writes and reads MCAP files (https://mcap.dev/spec, major
// version 0), the robotics field's recording container, so that hapticd's
// recordings open in Foxglove, the mcap CLI and @mcap/core. It is pure
// format code: records, chunks, indexes and the summary; no I/O of its own
// beyond the io.Writer and byte slices it is given.
//
// The writer puts Schema and Channel records straight into the data section
// (so a streaming reader of a truncated file still knows every channel) and
// messages into uncompressed chunks, each followed by its Message Index
// records; Close writes the summary (schemas, channels, statistics, chunk
// indexes), the summary offsets and the footer.
//
// # Why hand-written
//
// The field's Go library, github.com/foxglove/mcap/go/mcap, is refused by
// the module proxy this project builds from ("403 Forbidden: This module
// version is not available", checked 2026-11-25), so the codec is written
// here against the spec. Two checks keep it honest: the tests read every
// file it writes with the reference TypeScript reader, @mcap/core (package
// mcaptest), and FuzzRead feeds Read cut and damaged files, which must
// answer with an error and never a panic (the summary's offsets come from
// the file and are bounds-checked without adding them up).
package mcap

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"sort"
)

// Magic opens and closes every MCAP file: 0x89 "MCAP", major version '0', CR LF.
var Magic = []byte{0x89, 'M', 'C', 'A', 'P', '0', '\r', '\n'}

// Record opcodes (spec, "Records").
const (
	OpHeader          byte = 0x01
	OpFooter          byte = 0x02
	OpSchema          byte = 0x03
	OpChannel         byte = 0x04
	OpMessage         byte = 0x05
	OpChunk           byte = 0x06
	OpMessageIndex    byte = 0x07
	OpChunkIndex      byte = 0x08
	OpAttachment      byte = 0x09
	OpAttachmentIndex byte = 0x0A
	OpStatistics      byte = 0x0B
	OpMetadata        byte = 0x0C
	OpMetadataIndex   byte = 0x0D
	OpSummaryOffset   byte = 0x0E
	OpDataEnd         byte = 0x0F
)

// Header is the first record of a file.
type Header struct {
	Profile string
	Library string
}

// Schema describes the encoding of a channel's messages.
type Schema struct {
	ID       uint16
	Name     string
	Encoding string // e.g. "jsonschema"
	Data     []byte
}

// Channel is one stream of messages.
type Channel struct {
	ID              uint16
	SchemaID        uint16
	Topic           string
	MessageEncoding string // e.g. "json"
	Metadata        map[string]string
}

// Message is one timestamped message; times are nanoseconds.
type Message struct {
	ChannelID   uint16
	Sequence    uint32
	LogTime     uint64
	PublishTime uint64
	Data        []byte
}

// Statistics is the summary's count of what the file holds.
type Statistics struct {
	MessageCount         uint64
	SchemaCount          uint16
	ChannelCount         uint32
	AttachmentCount      uint32
	MetadataCount        uint32
	ChunkCount           uint32
	MessageStartTime     uint64
	MessageEndTime       uint64
	ChannelMessageCounts map[uint16]uint64
}

// ChunkIndex locates one chunk and its message indexes.
type ChunkIndex struct {
	MessageStartTime    uint64
	MessageEndTime      uint64
	ChunkStartOffset    uint64
	ChunkLength         uint64
	MessageIndexOffsets map[uint16]uint64
	MessageIndexLength  uint64
	Compression         string
	CompressedSize      uint64
	UncompressedSize    uint64
}

// ErrTruncated says a file ended inside a record: what came before it was
// read.
var ErrTruncated = errors.New("mcap: file truncated")

// ErrDamaged says a chunk failed its checks (its CRC, its records' sizes):
// the chunks before it were read, and nothing after it is (where the next
// record starts is not to be trusted).
var ErrDamaged = errors.New("mcap: chunk damaged")

// enc appends MCAP's primitive types: little-endian integers, strings and
// byte arrays with a uint32 length prefix.
type enc []byte

func (e enc) u8(v byte) enc    { return append(e, v) }
func (e enc) u16(v uint16) enc { return binary.LittleEndian.AppendUint16(e, v) }
func (e enc) u32(v uint32) enc { return binary.LittleEndian.AppendUint32(e, v) }
func (e enc) u64(v uint64) enc { return binary.LittleEndian.AppendUint64(e, v) }
func (e enc) str(s string) enc { return append(e.u32(uint32(len(s))), s...) }
func (e enc) bytes(b []byte) enc {
	return append(e.u32(uint32(len(b))), b...)
}

// stringMap encodes a Map<string, string>: its byte length, then entries in
// key order (so a file's bytes do not depend on map iteration).
func (e enc) stringMap(m map[string]string) enc {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var body enc
	for _, k := range keys {
		body = body.str(k).str(m[k])
	}
	return append(e.u32(uint32(len(body))), body...)
}

// u16u64Map encodes a Map<uint16, uint64> in key order.
func (e enc) u16u64Map(m map[uint16]uint64) enc {
	keys := make([]int, 0, len(m))
	for k := range m {
		keys = append(keys, int(k))
	}
	sort.Ints(keys)
	e = e.u32(uint32(len(keys) * 10))
	for _, k := range keys {
		e = e.u16(uint16(k)).u64(m[uint16(k)])
	}
	return e
}

// record appends an opcode, the content's length and the content built by fill.
func (e enc) record(op byte, fill func(enc) enc) enc {
	e = e.u8(op)
	at := len(e)
	e = e.u64(0)
	e = fill(e)
	binary.LittleEndian.PutUint64(e[at:], uint64(len(e)-at-8))
	return e
}

func (e enc) schema(s Schema) enc {
	return e.record(OpSchema, func(e enc) enc {
		return e.u16(s.ID).str(s.Name).str(s.Encoding).bytes(s.Data)
	})
}

func (e enc) channel(c Channel) enc {
	return e.record(OpChannel, func(e enc) enc {
		return e.u16(c.ID).u16(c.SchemaID).str(c.Topic).str(c.MessageEncoding).stringMap(c.Metadata)
	})
}

func (e enc) message(m Message) enc {
	return e.record(OpMessage, func(e enc) enc {
		return append(e.u16(m.ChannelID).u32(m.Sequence).u64(m.LogTime).u64(m.PublishTime), m.Data...)
	})
}

// dec reads MCAP's primitive types, remembering the first short read.
type dec struct {
	b   []byte
	err error
}

func (d *dec) take(n uint64) []byte {
	if d.err != nil {
		return nil
	}
	if uint64(len(d.b)) < n {
		d.err = fmt.Errorf("mcap: record field needs %d bytes, %d left", n, len(d.b))
		d.b = nil
		return nil
	}
	v := d.b[:n]
	d.b = d.b[n:]
	return v
}

func (d *dec) u8() byte {
	if b := d.take(1); b != nil {
		return b[0]
	}
	return 0
}

func (d *dec) u16() uint16 {
	if b := d.take(2); b != nil {
		return binary.LittleEndian.Uint16(b)
	}
	return 0
}

func (d *dec) u32() uint32 {
	if b := d.take(4); b != nil {
		return binary.LittleEndian.Uint32(b)
	}
	return 0
}

func (d *dec) u64() uint64 {
	if b := d.take(8); b != nil {
		return binary.LittleEndian.Uint64(b)
	}
	return 0
}

func (d *dec) bytes() []byte { return d.take(uint64(d.u32())) }
func (d *dec) str() string   { return string(d.bytes()) }

func (d *dec) stringMap() map[string]string {
	body := dec{b: d.bytes(), err: d.err}
	m := map[string]string{}
	for body.err == nil && len(body.b) > 0 {
		k := body.str()
		m[k] = body.str()
	}
	if d.err == nil {
		d.err = body.err
	}
	return m
}

func (d *dec) u16u64Map() map[uint16]uint64 {
	body := dec{b: d.bytes(), err: d.err}
	m := map[uint16]uint64{}
	for body.err == nil && len(body.b) > 0 {
		k := body.u16()
		m[k] = body.u64()
	}
	if d.err == nil {
		d.err = body.err
	}
	return m
}

func crc(b []byte) uint32 { return crc32.ChecksumIEEE(b) }
