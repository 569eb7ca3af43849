package event

import (
	"strconv"

	"github.com/hapticd/hapticd/protocol"
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
	dst = protocol.AppendString(dst, e.Name)
	dst = append(dst, `,"category":`...)
	dst = protocol.AppendString(dst, e.Category)
	dst = append(dst, `,"level":`...)
	dst = protocol.AppendString(dst, e.Level)
	dst = append(dst, `,"data":`...)
	if len(e.Data) == 0 {
		dst = append(dst, "{}"...)
	} else {
		dst = append(dst, e.Data...)
	}
	dst = append(dst, `,"message":`...)
	dst = protocol.AppendString(dst, e.Message)
	return append(dst, '}')
}
