// Package wsclose names why a WebSocket read failed as the close reason a
// connection's end reports (protocol.CloseReason), so that the simulation
// sessions and the events socket name their ends alike.
package wsclose

import (
	"errors"
	"io"
	"net"

	"github.com/gorilla/websocket"

	"github.com/hapticd/hapticd/protocol"
)

// ReadReason names why a read failed. gorilla reports a close frame as a
// CloseError, a connection that broke without one as a CloseError 1006 or
// a net or io error, and a message over the read limit as ErrReadLimit;
// any other error is a frame that breaks RFC 6455 (gorilla has sent close
// 1002).
func ReadReason(err error) protocol.CloseReason {
	var ce *websocket.CloseError
	var ne net.Error
	switch {
	case errors.Is(err, websocket.ErrReadLimit):
		return protocol.CloseMessageTooBig
	case errors.As(err, &ce) && ce.Code == websocket.CloseAbnormalClosure:
		return protocol.CloseReadError // gorilla's name for EOF without a close frame
	case errors.As(err, &ce):
		return protocol.CloseClientClosed
	case errors.As(err, &ne), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed):
		return protocol.CloseReadError
	default:
		return protocol.CloseProtocolViolation
	}
}
