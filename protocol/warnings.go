package protocol

import "strconv"

// MaxWarnings is the most warnings one frame lists, and MaxErrors the most
// errors. Past them, entries are counted, not formatted, and the list ends
// with one warnings_dropped (errors_dropped) entry saying how many more
// there were: a message of 60,000 unknown fields, or of 20,000 bad device
// entries, is answered with a small frame and costs no more memory than one
// with 32.
const (
	MaxWarnings = 32
	MaxErrors   = 32
)

// TrimWarnings caps a frame's warning list at MaxWarnings entries and, when
// any were dropped (dropped counted earlier, as ClientMessage does, plus the
// list's own excess), appends the entry that counts them.
func TrimWarnings(list []Error, dropped int) []Error {
	return trimList(list, dropped, MaxWarnings, CodeWarningsDropped, "warnings")
}

// TrimErrors is TrimWarnings for a frame's errors (MaxErrors).
func TrimErrors(list []Error, dropped int) []Error {
	return trimList(list, dropped, MaxErrors, CodeErrorsDropped, "errors")
}

func trimList(list []Error, dropped, limit int, code Code, noun string) []Error {
	if over := len(list) - limit; over > 0 {
		dropped += over
		list = list[:limit]
	}
	if dropped == 0 {
		return list
	}
	return append(list, Error{Code: code,
		Message: strconv.Itoa(dropped) + " more " + noun + " were not listed (a frame or an answer lists at most " + strconv.Itoa(limit) + "); fix these and send again to see the rest"})
}
