package store

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

// EscapeName turns any string (a profile name such as
// "co.example.app:main", or one holding "/") into one safe path segment,
// reversibly (UnescapeName undoes it):
//
//   - lower-case ASCII letters, digits, '-', '_' and '.' stay as they are,
//     except a leading '.', which would hide the file and could spell
//     "." or "..";
//   - every other byte becomes %XX (upper-case hex), upper-case letters
//     included, so that two names differing only in case stay two files on
//     case-insensitive file systems (macOS, Windows);
//   - the empty string becomes "%", which no other input produces.
//
// Very long names (over about 200 bytes once escaped) are refused by Save,
// since file names are limited to 255 bytes.
func EscapeName(s string) string {
	if s == "" {
		return "%"
	}
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if keepByte(c) && (i > 0 || c != '.') {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&0xF])
	}
	return b.String()
}

// UnescapeName undoes EscapeName.
func UnescapeName(s string) (string, error) {
	if s == "%" {
		return "", nil
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '%' {
			b.WriteByte(c)
			continue
		}
		if i+2 >= len(s) {
			return "", fmt.Errorf("store: unescape %q: %% at byte %d needs two hex digits; the name was not made by EscapeName", s, i)
		}
		hi, ok1 := unhex(s[i+1])
		lo, ok2 := unhex(s[i+2])
		if !ok1 || !ok2 {
			return "", fmt.Errorf("store: unescape %q: %q at byte %d is not %%XX with upper-case hex; the name was not made by EscapeName", s, s[i:i+3], i)
		}
		b.WriteByte(hi<<4 | lo)
		i += 2
	}
	return b.String(), nil
}

func keepByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.'
}

func unhex(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// HashName turns any string into a path segment of fixed length: 32
// lower-case hex digits of its SHA-256 (128 bits; a collision needs about
// 2^64 names). Unlike EscapeName it is not reversible, so a caller that
// needs the string back keeps it inside the document; unlike EscapeName
// it fits a file name whatever the string's length (34 × "é" escapes to
// 205 bytes, over the 200-byte segment limit).
func HashName(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:16])
}

// hashNameLen is the length of HashName's output.
const hashNameLen = 32

// IsHashName reports whether s is shaped as HashName's output: exactly 32
// lower-case hex digits. A folder named otherwise in a folder of hashed
// names (an operator's "backup-before-upgrade", an editor's scratch
// folder) was not made by the service.
func IsHashName(s string) bool {
	if len(s) != hashNameLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
