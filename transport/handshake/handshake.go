// Package handshake says, in the service's words, why a WebSocket upgrade
// was refused, for every port that takes one (3.x, legacy 3.0, events).
// gorilla/websocket refuses a bad handshake with its own text ("websocket:
// not a websocket handshake: 'Sec-WebSocket-Key' header must be Base64
// encoded value of 16-byte in length"), which named the library and not
// what to send; the ports passed it through.
package handshake

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"

	"github.com/hapticd/hapticd/protocol"
)

// Refusal is the error of an upgrade gorilla refused with status: the code
// protocol.HandshakeCode gives that status, and a message that names what
// of the request is wrong (checked in gorilla's order, so it is the reason
// gorilla refused it) followed by the code's general advice. The library's
// reason is not shown: it is the same fact in the library's words.
func Refusal(r *http.Request, status int) *protocol.Error {
	code := protocol.HandshakeCode(status)
	what := Problem(r)
	if what == "" || code == protocol.CodeInternal || code == protocol.CodeForbiddenOrigin {
		// Not a fault of the request's headers: the connection could
		// not be taken over (internal), or a check of the service's.
		return protocol.Errorf(code, "", "%s", code.DefaultMessage())
	}
	return protocol.Errorf(code, "", "%s; %s", what, code.DefaultMessage())
}

// Problem is what makes r no WebSocket upgrade, in the order RFC 6455's
// checks are made by gorilla, or "" when its headers are a valid upgrade.
func Problem(r *http.Request) string {
	switch {
	case !hasToken(r.Header, "Connection", "upgrade"):
		if v := r.Header.Get("Connection"); v != "" {
			return fmt.Sprintf("the Connection header is %q, which has no upgrade token: send Connection: Upgrade", protocol.ClipQuoted(v))
		}
		return "the request has no Connection: Upgrade header"
	case !hasToken(r.Header, "Upgrade", "websocket"):
		if r.Header.Get("Upgrade") == "" {
			return "the request has no Upgrade: websocket header"
		}
		return fmt.Sprintf("the Upgrade header is %q, not websocket", protocol.ClipQuoted(r.Header.Get("Upgrade")))
	case r.Method != http.MethodGet:
		return NotGET(r)
	case !hasToken(r.Header, "Sec-WebSocket-Version", "13"):
		if v := r.Header.Get("Sec-WebSocket-Version"); v != "" {
			return fmt.Sprintf("Sec-WebSocket-Version is %q: hapticd speaks version 13 (RFC 6455)", protocol.ClipQuoted(v))
		}
		return "the request has no Sec-WebSocket-Version header: send Sec-WebSocket-Version: 13"
	}
	key := r.Header.Get("Sec-WebSocket-Key")
	if key == "" {
		return "the request has no Sec-WebSocket-Key header: send the base64 of 16 random bytes"
	}
	if b, err := base64.StdEncoding.DecodeString(key); err != nil || len(b) != 16 {
		return fmt.Sprintf("Sec-WebSocket-Key %q is not the base64 of 16 bytes (RFC 6455, 4.1)", protocol.ClipQuoted(key))
	}
	return ""
}

// NotGET is the message of an upgrade by another method than GET (405
// method_not_allowed), in the words the 3.x router answers any route with.
func NotGET(r *http.Request) string {
	return fmt.Sprintf("%s is not supported on %s: a WebSocket upgrades with GET", r.Method, r.URL.Path)
}

// hasToken reports whether a comma-separated header of name holds token,
// regardless of case, as gorilla reads it.
func hasToken(h http.Header, name, token string) bool {
	for _, v := range h.Values(name) {
		for _, t := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}
