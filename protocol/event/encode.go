package event

import (
	"strconv"
	"unicode/utf8"
)

// timeLayout is RFC 3339 with milliseconds; times are converted to UTC
// first, so the zone is always "Z".
const timeLayout = "2006-01-02T15:04:05.000Z07:00"

// AppendJSON appends the JSON object of e to dst and returns the extended
// buffer. It does not allocate when dst has room, so the events socket can
// reuse one buffer per connection. A nil or empty Data is written as {}.
func AppendJSON(dst []byte, e *Event) []byte {
	dst = append(dst, `{"seq":`...)
	dst = strconv.AppendUint(dst, e.Seq, 10)
	dst = append(dst, `,"time":"`...)
	dst = e.Time.UTC().AppendFormat(dst, timeLayout)
	dst = append(dst, `","name":`...)
	dst = appendString(dst, e.Name)
	dst = append(dst, `,"category":`...)
	dst = appendString(dst, e.Category)
	dst = append(dst, `,"level":`...)
	dst = appendString(dst, e.Level)
	dst = append(dst, `,"data":`...)
	if len(e.Data) == 0 {
		dst = append(dst, "{}"...)
	} else {
		dst = append(dst, e.Data...)
	}
	dst = append(dst, `,"message":`...)
	dst = appendString(dst, e.Message)
	return append(dst, '}')
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string. Invalid UTF-8 becomes U+FFFD, as
// encoding/json does, so the output is always valid JSON.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '"', '\\':
				dst = append(dst, '\\', b)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xf])
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
		// U+2028 and U+2029 are valid JSON but end lines in JavaScript;
		// escape them as encoding/json does.
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
