package protocol

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// Code is a stable, machine-readable error or warning code. Every transport
// (HTTP 3.x and 3.0, both WebSockets) reads the one table below, so a code
// means the same thing and maps to the same HTTP status everywhere.
type Code string

// Error codes. Those marked "warning" never block a message: they are listed
// under "warnings" and the rest of the message applies.
const (
	CodeInvalidJSON         Code = "invalid_json"          // body or message is not JSON (or not an object)
	CodeInvalidValue        Code = "invalid_value"         // wrong type or shape, missing required field
	CodeOutOfRange          Code = "out_of_range"          // a number outside its documented range
	CodePresetMountConflict Code = "preset_mount_conflict" // preset and mount in one configure
	CodeDampingEmpty        Code = "damping_empty"         // damping with neither scalar nor vector
	CodeHTTPOnlyKey         Code = "http_only_key"         // a device-global key sent over WebSocket
	CodeUnknownPreset       Code = "unknown_preset"
	CodeInvalidPermutation  Code = "invalid_permutation"
	CodeUnknownRoute        Code = "unknown_route"
	CodeUnknownDeviceType   Code = "unknown_device_type" // a warning inside a WebSocket message
	CodeUnknownDevice       Code = "unknown_device"      // a warning inside a WebSocket message
	CodeUnknownSetting      Code = "unknown_setting"
	CodeUnknownSession      Code = "unknown_session"
	CodeAmbiguousSelector   Code = "ambiguous_selector"
	CodeSessionRequired     Code = "session_required"
	CodeMethodNotAllowed    Code = "method_not_allowed"
	CodeBodyTooLarge        Code = "body_too_large"
	CodeHeadersTooLarge     Code = "headers_too_large" // a request line and headers over 64 KiB
	// The four below answer what net/http refuses before any handler runs.
	CodeMalformedRequest            Code = "malformed_request"             // a request line, header or Host HTTP/1.1 does not allow
	CodeUnsupportedTransferEncoding Code = "unsupported_transfer_encoding" // a Transfer-Encoding other than chunked
	CodeUnsupportedHTTPVersion      Code = "unsupported_http_version"      // a version other than HTTP/1.0 or HTTP/1.1
	CodeExpectationFailed           Code = "expectation_failed"            // an Expect other than 100-continue
	CodeBadHandshake                Code = "bad_handshake"                 // a WebSocket upgrade request gorilla refused
	CodeForbiddenOrigin             Code = "forbidden_origin"
	CodeForbiddenHost               Code = "forbidden_host"
	CodeDeviceBusy                  Code = "device_busy"
	CodeTooManyEffects              Code = "too_many_effects" // more effects on an arm than MaxEffectsPerArm
	CodeUnknownEffect               Code = "unknown_effect"   // warning: remove named an effect the session does not have
	CodeUnknownKey                  Code = "unknown_key"      // warning: unknown configure or session key
	CodeUnknownCommand              Code = "unknown_command"  // warning: unknown command name
	CodeUnknownField                Code = "unknown_field"    // warning: unknown field inside a known entry
	CodeCommandIgnored              Code = "command_ignored"  // warning: lost the control-command precedence
	CodeEffectsDropped              Code = "effects_dropped"  // warning: a lapsed lease dropped the session's effects on the arm
	CodeStateStale                  Code = "state_stale"      // warning: a lab device's newest state is older than the lab's lease
	CodeStaleCommand                Code = "stale_command"    // warning: a command arrived longer than its lease before it could be applied, and was not
	CodeWarningsDropped             Code = "warnings_dropped" // warning: counts the warnings past MaxWarnings
	CodeErrorsDropped               Code = "errors_dropped"   // counts the errors past MaxErrors
	CodeVersionMismatch             Code = "version_mismatch"
	CodeInternal                    Code = "internal"
	CodeUnavailable                 Code = "unavailable"
)

// codeInfo is one row of the error table.
type codeInfo struct {
	code    Code
	status  int
	message string
	reach   codeReach
}

// codeReach says where a code can be met.
type codeReach uint8

const (
	// overHTTP: an HTTP answer may carry it (and a frame's errors too).
	overHTTP codeReach = iota
	// framesOnly: only WebSocket frames list it, among their errors or
	// warnings; no HTTP route answers it, so the OpenAPI document does not
	// promise its status.
	framesOnly
)

// codeTable is the one error table. It is never written after init.
var codeTable = []codeInfo{
	{CodeInvalidJSON, http.StatusBadRequest, "the body is not valid JSON: send a JSON object", overHTTP},
	{CodeInvalidValue, http.StatusBadRequest, "a value has the wrong type or shape: GET /schema has each input's shape (docs/protocol.md, \"Machine-readable schema\")", overHTTP},
	{CodeOutOfRange, http.StatusBadRequest, "a number is out of its range: GET /schema has each input's range (docs/protocol.md, \"Machine-readable schema\")", overHTTP},
	{CodePresetMountConflict, http.StatusBadRequest, "preset and mount exclude each other: send one of them", overHTTP},
	{CodeDampingEmpty, http.StatusBadRequest, `damping needs "scalar" or "vector"`, overHTTP},
	{CodeHTTPOnlyKey, http.StatusBadRequest, "this key is HTTP-only: use POST /{type}/{id}/config/{key}", overHTTP},
	{CodeUnknownPreset, http.StatusBadRequest, "unknown preset: use " + orList(presetNames), overHTTP},
	{CodeInvalidPermutation, http.StatusBadRequest, "invalid permutation: give each of X, Y, Z once, each optionally prefixed + or -", overHTTP},
	{CodeUnknownRoute, http.StatusNotFound, "unknown route: GET / lists the routes", overHTTP},
	{CodeUnknownDeviceType, http.StatusNotFound, "unknown device type: use inverse3, verse_grip, wireless_verse_grip (or arm3, grip), a configured alias, or *inverse or *verse_grip in paths", overHTTP},
	{CodeUnknownDevice, http.StatusNotFound, "unknown device: list devices with GET /devices", overHTTP},
	{CodeUnknownSetting, http.StatusNotFound, "unknown setting: list settings with GET /settings", overHTTP},
	{CodeUnknownSession, http.StatusNotFound, "no session matches: list sessions with GET /sessions", overHTTP},
	{CodeAmbiguousSelector, http.StatusBadRequest, "the selector matches more than one: narrow it down (e.g. NAME:0 or an id)", overHTTP},
	{CodeSessionRequired, http.StatusBadRequest, "this route is session-scoped: add ?session=N", overHTTP},
	{CodeMethodNotAllowed, http.StatusMethodNotAllowed, "method not allowed on this route", overHTTP},
	{CodeBodyTooLarge, http.StatusRequestEntityTooLarge, "the body is over 64 KiB", overHTTP},
	{CodeHeadersTooLarge, http.StatusRequestHeaderFieldsTooLarge, "the request line and headers are over 64 KiB: send fewer or shorter headers", overHTTP},
	{CodeMalformedRequest, http.StatusBadRequest, "the request is not well-formed HTTP/1.1: send METHOD /path HTTP/1.1, a Host header, and Name: value header lines", overHTTP},
	{CodeUnsupportedTransferEncoding, http.StatusNotImplemented, "the Transfer-Encoding is not supported: send the body with a Content-Length, or chunked", overHTTP},
	{CodeUnsupportedHTTPVersion, http.StatusHTTPVersionNotSupported, "the HTTP version is not supported: send HTTP/1.1 (or HTTP/1.0)", overHTTP},
	{CodeExpectationFailed, http.StatusExpectationFailed, "the Expect header can only be 100-continue: drop it", overHTTP},
	{CodeBadHandshake, http.StatusBadRequest, "not a WebSocket handshake: send GET with Connection: Upgrade, Upgrade: websocket, Sec-WebSocket-Version: 13 and a Sec-WebSocket-Key", overHTTP},
	{CodeForbiddenOrigin, http.StatusForbidden, "requests from this Origin are refused: add it with --allow-origin", overHTTP},
	{CodeForbiddenHost, http.StatusForbidden, "requests for this Host are refused: add it with --allow-host", overHTTP},
	{CodeDeviceBusy, http.StatusConflict, "another session controls this device: wait until it disconnects or its lease lapses", framesOnly},
	{CodeTooManyEffects, http.StatusConflict, "an arm holds at most " + strconv.Itoa(MaxEffectsPerArm) + " effects per session: remove some first", framesOnly},
	{CodeUnknownEffect, http.StatusNotFound, "no effect has this id: nothing removed", framesOnly},
	{CodeUnknownKey, http.StatusBadRequest, "unknown key: ignored", overHTTP},
	{CodeUnknownCommand, http.StatusBadRequest, "unknown command: ignored", framesOnly},
	{CodeUnknownField, http.StatusBadRequest, "unknown field: ignored", framesOnly},
	{CodeCommandIgnored, http.StatusConflict, "another control command in this message took precedence: send one per device", framesOnly},
	{CodeEffectsDropped, http.StatusGone, "the lease lapsed and the session's effects on this arm were dropped: declare them again", framesOnly},
	{CodeStateStale, http.StatusGatewayTimeout, "this device's node has sent no state for longer than the lab's lease: the state shown is old, commands may not be reaching the arm, and its node's lease has ended any force it held", framesOnly},
	{CodeStaleCommand, http.StatusRequestTimeout, "the message waited on the host longer than the control lease before it could be applied (the service was stalled or behind): its control command and effects were not applied; send them again", framesOnly},
	{CodeWarningsDropped, http.StatusBadRequest, "more warnings than a frame lists: fix the listed ones first", framesOnly},
	{CodeErrorsDropped, http.StatusBadRequest, "more errors than a frame lists: fix the listed ones first", framesOnly},
	{CodeVersionMismatch, http.StatusBadRequest, "the required API version does not match " + APIVersion, framesOnly},
	{CodeInternal, http.StatusInternalServerError, "internal error: please report it with the service log", overHTTP},
	{CodeUnavailable, http.StatusServiceUnavailable, "the service is shutting down or the device is not ready: retry", overHTTP},
}

// orList joins names for a message: "a, b or c".
func orList(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

func (c Code) info() (codeInfo, bool) {
	for _, r := range codeTable {
		if r.code == c {
			return r, true
		}
	}
	return codeInfo{}, false
}

// HTTPStatus is the status an HTTP transport answers with for c. Unknown
// codes map to 500: a code missing from the table is a bug in the service.
func (c Code) HTTPStatus() int {
	if r, ok := c.info(); ok {
		return r.status
	}
	return http.StatusInternalServerError
}

// OverHTTP reports whether an HTTP answer may carry c: false for the codes
// only WebSocket frames list (device_busy, warnings such as unknown_field).
func (c Code) OverHTTP() bool {
	r, ok := c.info()
	return !ok || r.reach == overHTTP
}

// DefaultMessage is the table's generic text for c, used when a transport has
// no more specific message.
func (c Code) DefaultMessage() string {
	if r, ok := c.info(); ok {
		return r.message
	}
	return "internal error: unknown error code " + string(c)
}

// Codes lists every code in table order (a copy).
func Codes() []Code {
	out := make([]Code, len(codeTable))
	for i, r := range codeTable {
		out[i] = r.code
	}
	return out
}

// Error is one entry of an "errors" or "warnings" list, and the error type
// of every decoder in this package. Path points into the message or body
// ("arm3[0].configure.damping"); it is empty when the whole body is at fault.
type Error struct {
	Code    Code   `json:"code"`
	Message string `json:"message"`
	Path    string `json:"path,omitempty"`
}

func (e *Error) Error() string {
	if e.Path == "" {
		return "protocol: " + string(e.Code) + ": " + e.Message
	}
	return "protocol: " + string(e.Code) + " at " + e.Path + ": " + e.Message
}

// Errorf builds an *Error. The message should name the problem and the fix.
func Errorf(code Code, path, format string, args ...any) *Error {
	msg := format
	if len(args) > 0 {
		msg = fmt.Sprintf(format, args...)
	}
	if msg == "" {
		msg = code.DefaultMessage()
	}
	return &Error{Code: code, Message: msg, Path: ClipQuoted(path)}
}

// AsError gives any error the shape of an entry of the error table: an
// *Error (wrapped or not) as it is, with path filled in where it has none;
// anything else is internal. Every transport maps errors through it, so a
// failure carries the same code (and HTTP status) over HTTP and WebSocket.
func AsError(err error, path string) *Error {
	var pe *Error
	if errors.As(err, &pe) {
		e := *pe
		if e.Path == "" {
			e.Path = path
		}
		return &e
	}
	return &Error{Code: CodeInternal, Message: err.Error(), Path: path}
}

// HandshakeCode is the code of a WebSocket upgrade the library refused
// with an HTTP status: every WebSocket listener (sessions, events) answers
// such a refusal with the same code for the same status.
func HandshakeCode(status int) Code {
	switch status {
	case http.StatusMethodNotAllowed:
		return CodeMethodNotAllowed
	case http.StatusForbidden:
		return CodeForbiddenOrigin
	case http.StatusInternalServerError:
		return CodeInternal
	}
	return CodeBadHandshake
}

// AppendErrorEnvelope appends the HTTP error envelope of e (see the
// README): {"ok":false,"error":"<message>","code":"<code>"} with "path" when e
// has one. Every HTTP listener answers errors with it, with the status
// e.Code.HTTPStatus().
func AppendErrorEnvelope(dst []byte, e *Error) []byte {
	dst = append(dst, `{"ok":false,"error":`...)
	dst = AppendString(dst, e.Message)
	dst = append(dst, `,"code":`...)
	dst = AppendString(dst, string(e.Code))
	if e.Path != "" {
		dst = append(dst, `,"path":`...)
		dst = AppendString(dst, e.Path)
	}
	return append(dst, '}', '\n')
}
