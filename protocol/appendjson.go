package protocol

import (
	"math"
	"strconv"
	"unicode/utf8"
)

// The append helpers below are the one JSON writer of this package: entries,
// aggregates, frames (3.x and 3.0) all go through them. They never allocate
// once dst has capacity.

// AppendFloat appends a finite JSON number. JSON has no NaN or infinity; a
// non-finite value (a sensor glitch) is written as 0 so that the frame stays
// parseable for every client.
func AppendFloat(dst []byte, f float64) []byte { return appendNumber(dst, f, exact) }

// Number precisions. Configuration echoes exactly what was set (exact);
// measured state goes out at the precision devices measure it with
// (measured: float32, which is what the hardware protocol carries). The
// shortest float32 form is about half as long as the float64 one (a 100-arm
// frame shrinks by a third) and faster to write.
const (
	exact    = 64
	measured = 32
)

func appendNumber(dst []byte, f float64, bits int) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(dst, '0')
	}
	if bits == measured && math.Abs(f) > math.MaxFloat32 {
		bits = exact // out of float32 range: keep it finite and right
	}
	// A whole number under a million is what the shortest 'g' form writes
	// as an integer, and frames are full of them (zeros, a unit
	// quaternion's 1). strconv takes 20 to 30 ns for each; AppendInt a few.
	// -0 is left to strconv, which writes it as "-0".
	if i := int64(f); float64(i) == f && i > -1e6 && i < 1e6 && (i != 0 || !math.Signbit(f)) {
		return strconv.AppendInt(dst, i, 10)
	}
	return strconv.AppendFloat(dst, f, 'g', -1, bits)
}

const hexDigits = "0123456789abcdef"

// plainASCII marks the bytes AppendString copies as they are: printable
// ASCII other than '"', '\\', '<', '>' and '&'. One table load per byte
// replaced a chain of six comparisons, in a loop every frame runs over its
// collection keys and device ids. Never written.
var plainASCII = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// AppendString appends s as a JSON string. Invalid UTF-8 becomes U+FFFD;
// <, > and & are escaped so that frames can be embedded in HTML safely.
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if plainASCII[c] {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

func appendBool(dst []byte, b bool) []byte {
	if b {
		return append(dst, "true"...)
	}
	return append(dst, "false"...)
}

func appendVec3(dst []byte, bits int, v Vec3) []byte {
	dst = append(dst, `{"x":`...)
	dst = appendNumber(dst, v.X, bits)
	dst = append(dst, `,"y":`...)
	dst = appendNumber(dst, v.Y, bits)
	dst = append(dst, `,"z":`...)
	dst = appendNumber(dst, v.Z, bits)
	return append(dst, '}')
}

func appendQuat(dst []byte, bits int, q Quat) []byte {
	dst = append(dst, `{"w":`...)
	dst = appendNumber(dst, q.W, bits)
	dst = append(dst, `,"x":`...)
	dst = appendNumber(dst, q.X, bits)
	dst = append(dst, `,"y":`...)
	dst = appendNumber(dst, q.Y, bits)
	dst = append(dst, `,"z":`...)
	dst = appendNumber(dst, q.Z, bits)
	return append(dst, '}')
}

func appendAngles3(dst []byte, bits int, a Angles3) []byte {
	dst = append(dst, `{"a0":`...)
	dst = appendNumber(dst, a.A0, bits)
	dst = append(dst, `,"a1":`...)
	dst = appendNumber(dst, a.A1, bits)
	dst = append(dst, `,"a2":`...)
	dst = appendNumber(dst, a.A2, bits)
	return append(dst, '}')
}

func appendTransform(dst []byte, t Transform) []byte {
	dst = append(dst, `{"position":`...)
	dst = appendVec3(dst, exact, t.Position)
	dst = append(dst, `,"rotation":`...)
	dst = appendQuat(dst, exact, t.Rotation)
	dst = append(dst, `,"scale":`...)
	dst = appendVec3(dst, exact, t.Scale)
	return append(dst, '}')
}

// appendKey appends "name": (name must need no escaping).
func appendKey(dst []byte, name string) []byte {
	dst = append(dst, '"')
	dst = append(dst, name...)
	return append(dst, '"', ':')
}
