// Package protocol is hapticd's wire contract in code: configuration entries
// and their validation, the error-code table, settings, selectors, the
// naming table (the device-type names written and accepted), the
// deprecation table, the 3.x client-message decoder and the frame encoder.
// Every transport (HTTP 3.x and /3.0/, both
// WebSockets) calls this package; nothing else validates input. The legacy
// 3.0 codec (protocol/v30) is a second spelling over the same types and the
// same decoders. protocol/schema generates the machine-readable schema
// (JSON Schema 2020-12) from this package's tables.
//
// # Rules
//
// Input is strict where a value is known and lenient where it is not: a known
// key with a wrong type, a non-finite number (NaN, 1e400, "1") or a value out
// of range is an error and the whole message applies not at all; unknown
// device types, commands, keys and fields are warnings and the rest applies,
// so a force is never dropped because a newer client added a key. null
// counts as absent for an optional field.
//
// # Decisions the specs leave open
//
//   - Bases are reported in canonical form, the one protocol/space prints:
//     '+' signs dropped, '-' kept ("+X-Z+Y" is stored and echoed as "X-ZY").
//   - Vectors, quaternions and angle triples need all their components; a
//     force with a missing "z" is an error, not a zero.
//   - When "vector" and "values" (or "position" and "values") are both
//     given, the documented name wins and the other is a warning.
//   - damping, force_gate, navigation and effects sent to a grip are
//     warnings (a grip has no force output); preset, basis and mount apply
//     to grips (Key.AppliesTo).
//   - A key given both flat and under "filters" is an error.
//   - gravity_compensation needs both "enabled" and "scaling_factor", as do
//     the legacy bodies of POST /gravity_compensation.
//   - A malformed required_version is an error; a mismatch is a warning.
//
// # Effects, navigation and passivity
//
// An arm's entry in a message may carry "effects" (effects.go): springs,
// dampers, friction, walls with a proxy, workspace limits, a local linear
// field, vibrations and the vendor's SDF shapes (sdf.go), declared in the
// session's application space and converted once to the device frame by
// Effect.ToDevice. "navigation" (navigation.go) is a session-scoped entry;
// "passivity/force_clamp" and "passivity/force_slew_limit" (passivity.go)
// are device-global. This package decodes, validates and encodes them; the
// loop renders them. An arm's state carries their reports through
// ArmState.Ext.
//
// # Codecs
//
// The 3.x codec is DecodeClientMessage and AppendFrame. The message walk
// (ClientMessage.Decode with a CollectionDecoder, DecodeDevice) and the frame
// encoder (AppendFrameAs with a Spelling; AppendArmElement and
// AppendGripElement for pre-encoded elements) are exported so that protocol/v30 lays out the 3.0
// format over the same implementation: it supplies only its collection
// decoder and its Spelling.
//
// # Performance
//
// DecodeClientMessage and AppendFrame run once per WebSocket message, up to
// 1 kHz per session. Both reuse caller-owned memory: the decoder keeps its
// JSON tape and strings in the ClientMessage it fills, the encoder appends to
// the caller's buffer. A typical control message and a frame cost no
// allocation in steady state (pinned by AllocsPerRun tests). Errors and
// warnings allocate; they are rare.
//
// # Concurrency
//
// The package has no goroutines and does no I/O. Tables (TypeTable, the
// error and deprecation tables) are immutable and safe for concurrent use;
// a ClientMessage or Doc belongs to one goroutine at a time.
package protocol
