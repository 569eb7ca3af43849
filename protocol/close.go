package protocol

// CloseReason says why a simulation session ended. It is on the wire: in
// the session-ended event's data, in GET /sessions/closed, and (as its
// close text) in the WebSocket close frame. Every session end has exactly
// one; the first cause recorded wins (a write timeout that wakes the reader
// is a write timeout, not a read error).
type CloseReason string

// The reasons a session ends.
const (
	// CloseClientClosed: the client sent a close frame.
	CloseClientClosed CloseReason = "client_closed"
	// CloseReadError: the connection broke while reading (reset, EOF
	// without a close frame, a read that failed).
	CloseReadError CloseReason = "read_error"
	// CloseWriteTimeout: the client did not read its frames within the
	// write deadline, or the write failed.
	CloseWriteTimeout CloseReason = "write_timeout"
	// CloseMessageTooBig: a message over MaxMessageBytes.
	CloseMessageTooBig CloseReason = "message_too_big"
	// CloseShutdown: the service is stopping.
	CloseShutdown CloseReason = "shutdown"
	// CloseInternalError: the service failed (a panic in the session's
	// handling, a session that could not open).
	CloseInternalError CloseReason = "internal_error"
	// CloseProtocolViolation: the client broke the WebSocket protocol
	// (bad frame, bad opcode, unmasked frame).
	CloseProtocolViolation CloseReason = "protocol_violation"
)

// MaxMessageBytes is the largest client message on a simulation socket; a
// larger one ends the session with close 1009 (message_too_big).
const MaxMessageBytes = 1 << 20

// closeRow is one row of the close table.
type closeRow struct {
	reason CloseReason
	code   int // WebSocket close code (RFC 6455 section 7.4.1)
	text   string
}

// closeTable is the one table of close reasons: the code each sends and the
// text of its close frame (at most 123 bytes, the close frame's limit).
var closeTable = [...]closeRow{
	{CloseClientClosed, 1000, "client closed the session"},
	{CloseReadError, 1001, "read failed; reconnect"},
	{CloseWriteTimeout, 1008, "frames were not read within the write deadline; read every frame"},
	{CloseMessageTooBig, 1009, "message over 1 MiB; split it"},
	{CloseShutdown, 1001, "hapticd is shutting down"},
	{CloseInternalError, 1011, "internal error; reconnect"},
	{CloseProtocolViolation, 1002, "websocket protocol violation"},
}

// CloseReasons lists every reason, in table order.
func CloseReasons() []CloseReason {
	out := make([]CloseReason, len(closeTable))
	for i, r := range closeTable {
		out[i] = r.reason
	}
	return out
}

func (r CloseReason) row() closeRow {
	for _, c := range closeTable {
		if c.reason == r {
			return c
		}
	}
	return closeRow{r, 1011, string(r)}
}

// CloseCode is the WebSocket close code the reason is sent with; an unknown
// reason is 1011.
func (r CloseReason) CloseCode() int { return r.row().code }

// CloseText is the text of the reason's close frame.
func (r CloseReason) CloseText() string { return r.row().text }
