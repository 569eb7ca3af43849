package wsclose

import (
	"errors"
	"fmt"
	"io"
	"net"
	"testing"

	"github.com/gorilla/websocket"

	"github.com/hapticd/hapticd/protocol"
)

func TestReadReason(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want protocol.CloseReason
	}{
		{"close frame", &websocket.CloseError{Code: websocket.CloseNormalClosure}, protocol.CloseClientClosed},
		{"going away", &websocket.CloseError{Code: websocket.CloseGoingAway}, protocol.CloseClientClosed},
		{"EOF without a close frame", &websocket.CloseError{Code: websocket.CloseAbnormalClosure}, protocol.CloseReadError},
		{"EOF", io.EOF, protocol.CloseReadError},
		{"unexpected EOF, wrapped", fmt.Errorf("read: %w", io.ErrUnexpectedEOF), protocol.CloseReadError},
		{"reset", &net.OpError{Op: "read", Err: errors.New("connection reset by peer")}, protocol.CloseReadError},
		{"closed here", net.ErrClosed, protocol.CloseReadError},
		{"over the read limit", websocket.ErrReadLimit, protocol.CloseMessageTooBig},
		{"a bad frame", errors.New("websocket: bad opcode 3"), protocol.CloseProtocolViolation},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ReadReason(tt.err); got != tt.want {
				t.Fatalf("ReadReason(%v) = %s, want %s", tt.err, got, tt.want)
			}
		})
	}
}
