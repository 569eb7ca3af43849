// Package wire is the byte codec of the arm and grip serial protocols of
// spec/HARDWARE.md: one frame table, append-style encoders, decoders that
// fill caller-owned values, and a resynchronising Scanner. It does no I/O.
//
// # One table
//
// Every frame either side may send is one entry of the frame table (see
// Frames): its header byte, direction, length and decoder. The layouts are
// provisional (they come from one early public implementation); when a real
// capture shows a different layout, correct the entry and its encoder here
// and nothing else changes. A device speaks one Layout: the grip status
// has a wireless and a wired layout under one header, so a reader of a
// wired grip asks for LayoutWired (NewScannerIn, DecodeIn).
//
// # Framing
//
// The arm protocol has no start marker, length or checksum: one header byte,
// then little-endian float32 fields, with the length fixed by the header. A
// Scanner therefore finds frames by dropping bytes until it sees a known
// header with enough bytes behind it whose payload is plausible (finite
// floats within physical bounds, and not vanishingly small; a grip's
// orientation a quaternion near unit length). It counts what
// it drops, so a driver can report line noise. Encoders send a value below
// that smallest magnitude (1e-9) as zero, and a number of an arm frame
// beyond its frame's bounds as the bound (a NaN as zero), so every arm
// frame they make decodes. A grip status goes out with its battery within
// 0..1 and an orientation with a part out of bounds as zeros (no
// rotation): it decodes unless it carries no rotation and no error.
//
// # Concurrency and allocation
//
// Encoders append to the caller's slice and decoders fill the caller's
// Message, so with a buffer of enough capacity nothing allocates. A Scanner
// is used by one goroutine at a time.
package wire
