package protocol

import "strconv"

// MaxWarnings is the most warnings one frame lists. Past it, warnings are
// counted, not formatted, and the list ends with one warnings_dropped entry
// saying how many more there were: a message of 60,000 unknown fields is
// answered with a small frame, and costs no more memory than a message
// with 32.
const MaxWarnings = 32

// TrimWarnings caps a frame's warning list at MaxWarnings entries and, when
// any were dropped (dropped counted earlier, as ClientMessage does, plus the
// list's own excess), appends the entry that counts them.
func TrimWarnings(list []Error, dropped int) []Error {
	if over := len(list) - MaxWarnings; over > 0 {
		dropped += over
		list = list[:MaxWarnings]
	}
	if dropped == 0 {
		return list
	}
	return append(list, Error{Code: CodeWarningsDropped,
		Message: strconv.Itoa(dropped) + " more warnings were not listed (a frame lists at most " + strconv.Itoa(MaxWarnings) + "); fix these and send again to see the rest"})
}
