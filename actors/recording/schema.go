package recording

import (
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/hapticd/hapticd/protocol"
)

// Channel kinds, in each channel's "kind" metadata; each kind has one
// schema.
const (
	KindState  = "state"    // a device's loop snapshot, every tick or at rate_hz
	KindClient = "in"       // a session's client message, as received
	KindFrame  = "out"      // a frame, as sent to a session
	KindConfig = "config"   // a config or settings change over HTTP
	KindEvent  = "event"    // an activity event
	KindStats  = "recorder" // the recorder's own counters
)

// messageEncoding is every channel's: one JSON document per message.
const messageEncoding = "json"

// channelSchema is one kind's schema as the file names it.
type channelSchema struct {
	kind, name, schema string
}

// minimalSchemas are the JSON Schemas of the recording's channels. Client
// messages, frames and events get the full schemas the service serves
// instead when Config.ServedSchema gives them (servedSchemas).
var minimalSchemas = []channelSchema{
	{KindState, "hapticd.DeviceState", `{"$schema":"https://json-schema.org/draft/2020-12/schema","title":"hapticd device state","type":"object","required":["device","type","tick","time_ns","position","velocity","force"],"properties":{"device":{"type":"string"},"type":{"type":"string"},"status":{"type":"integer","description":"status flags, as hw.Status"},"tick":{"type":"integer"},"time_ns":{"type":"integer"},"age_ns":{"type":"integer","minimum":0,"description":"how old the state was at time_ns: 0 when the loop read it at that tick; older when the driver repeated it after a missed reply or, on a lab gateway, when the node's push was"},"mode":{"type":"integer"},"owner":{"type":"integer"},"applied_seq":{"type":"integer"},"failed":{"type":"boolean"},"target":{"type":"array","items":{"type":"number"}},"position":{"type":"array","items":{"type":"number"}},"velocity":{"type":"array","items":{"type":"number"}},"force":{"type":"array","items":{"type":"number"}},"model":{"type":"integer","minimum":0,"maximum":255,"description":"an arm's device type number (its family: 4 Inverse3, 5 Inverse3x, 6 Minverse)"},"left_handed":{"type":"boolean","description":"an arm that was left-handed at this state (absent: right-handed)"},"orientation":{"type":"array","items":{"type":"number"},"minItems":4,"maxItems":4,"description":"a grip's orientation quaternion, w x y z"},"buttons":{"type":"integer","description":"a grip's pressed buttons, as hw.Buttons"},"hall":{"type":"number","description":"a grip's hall sensor, 0..1"},"battery":{"type":"number","description":"a grip's battery level, 0..1"},"link":{"type":"string","enum":["wired","wireless","unknown"],"description":"how a grip reaches the host"}}}`},
	{KindClient, "hapticd.ClientMessage", `{"$schema":"https://json-schema.org/draft/2020-12/schema","title":"a session's client message as received","type":"object","required":["session","time_ns","message"],"properties":{"session":{"type":"integer"},"time_ns":{"type":"integer","description":"receive time"},"message":{}}}`},
	{KindFrame, "hapticd.Frame", `{"$schema":"https://json-schema.org/draft/2020-12/schema","title":"a frame as sent to a session","type":"object","required":["session","time_ns","message"],"properties":{"session":{"type":"integer"},"time_ns":{"type":"integer","description":"send time"},"inventory":{"const":true,"description":"the session's inventory, the frame its opening sent: present only on it"},"message":{}}}`},
	{KindConfig, "hapticd.ConfigChange", `{"$schema":"https://json-schema.org/draft/2020-12/schema","title":"an HTTP config or settings change","type":"object","required":["method","path","status"],"properties":{"method":{"type":"string"},"path":{"type":"string","description":"the request path with its query: ?session=N for a session-scoped entry"},"status":{"type":"integer"},"body":{}}}`},
	{KindEvent, "hapticd.Event", `{"$schema":"https://json-schema.org/draft/2020-12/schema","title":"an activity event (PROTOCOL.md)","type":"object","required":["seq","time","name"],"properties":{"seq":{"type":"integer"},"time":{"type":"string"},"name":{"type":"string"},"category":{"type":"string"},"level":{"type":"string"},"data":{},"message":{"type":"string"}}}`},
	{KindStats, "hapticd.RecorderStats", `{"$schema":"https://json-schema.org/draft/2020-12/schema","title":"the recorder's own counters","type":"object","required":["dropped","dropped_states","messages"],"properties":{"dropped":{"type":"integer","description":"messages lost so far: refused by the bounded queue, and device states the loops dropped"},"dropped_states":{"type":"integer","description":"of dropped, the device states the loops dropped (a device's ring was full)"},"messages":{"type":"integer"}}}`},
}

// validUTF8 replaces each byte of s that is not UTF-8 with U+FFFD, as
// protocol.AppendString and encoding/json do. A channel key comes from
// firmware (a device id), and MCAP strings must be UTF-8.
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i, r := range s {
		if r == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(s[i:]); size == 1 {
				b.WriteRune(utf8.RuneError)
				continue
			}
		}
		b.WriteRune(r)
	}
	return b.String()
}

// topic names a channel of a key made valid UTF-8.
func topic(kind, key string) string {
	switch kind {
	case KindState:
		return "/devices/" + key + "/state"
	case KindClient:
		return "/sessions/" + key + "/client"
	case KindFrame:
		return "/sessions/" + key + "/frames"
	case KindConfig:
		return "/config"
	case KindEvent:
		return "/events"
	}
	return "/recorder"
}

// State is the recorded form of one tick's loop snapshot. Grips also carry
// Orientation, Buttons, Hall, Battery and Link (arms leave them out).
type State struct {
	Device     string     `json:"device"`
	Type       string     `json:"type"` // the reference's name: arm3 or grip
	Status     uint8      `json:"status"`
	Tick       uint64     `json:"tick"`
	TimeNs     int64      `json:"time_ns"`
	AgeNs      int64      `json:"age_ns"` // how old the state was at TimeNs (loop.Snapshot.CurrentAtNs)
	Mode       int        `json:"mode"`
	Owner      uint64     `json:"owner"`
	AppliedSeq uint64     `json:"applied_seq"`
	Failed     bool       `json:"failed"`
	Target     [3]float64 `json:"target"`
	Position   [3]float64 `json:"position"`
	Velocity   [3]float64 `json:"velocity"`
	Force      [3]float64 `json:"force"`
	// Model is an arm's device type number (hw.Info.Model: its family, 4
	// an Inverse3), so a replay serves the family that was recorded.
	Model DeviceModel `json:"model,omitempty"`
	// LeftHanded says the arm was left-handed at this state (its
	// handedness entry): a replay derives its joint angles as the arm
	// did. Left out when right-handed, as in files from before it was kept.
	LeftHanded bool `json:"left_handed,omitempty"`
	// Grip.
	Orientation [4]float64 `json:"orientation"` // w x y z
	Buttons     uint8      `json:"buttons"`
	Hall        float64    `json:"hall"`
	Battery     float64    `json:"battery"`
	Link        string     `json:"link,omitempty"` // wired or wireless (hw.Link)
}

// DeviceModel is a recorded device type number. Read from a file, a value
// that is no device type number (outside 0..255, not a whole number) reads
// as 0, not reported: that arm replays as an Inverse3, as a real arm with
// an unknown number answers, and the rest of the file still replays.
type DeviceModel uint8

// UnmarshalJSON implements json.Unmarshaler.
func (m *DeviceModel) UnmarshalJSON(b []byte) error {
	var v float64
	if err := json.Unmarshal(b, &v); err != nil || v < 0 || v > 255 || v != float64(int(v)) {
		*m = 0
		return nil
	}
	*m = DeviceModel(v)
	return nil
}

// IsGrip says whether s is a grip's state.
func (s *State) IsGrip() bool { return s.Type == protocol.TypeGrip.Key() }

// Message is a session's client message or frame as recorded.
type Message struct {
	Session uint64 `json:"session"`
	TimeNs  int64  `json:"time_ns"` // receive time (client), send time (frame)
	// Inventory marks the frame the session's opening sent (frames only;
	// files from before it was kept leave it out of every frame, and their
	// frames channel has no InventoryMarked metadata).
	Inventory bool            `json:"inventory,omitempty"`
	Message   json.RawMessage `json:"message"` // a JSON string when the client sent no JSON
}

// InventoryMarked is the frames channels' metadata key, set to "true" by a
// recorder that marks each session's inventory frame (Message.Inventory):
// in such a file a session whose first frame is not marked was connected
// before the recording started, whatever that frame holds, unless its
// frames channel also has InventoryLost.
const InventoryMarked = "inventory_marked"

// InventoryLost is the frames channel's metadata key, set to "true" when
// the recorder's queue dropped that session's inventory: the session
// connected while recording, and its recording has a gap where the
// inventory was.
const InventoryLost = "inventory_lost"

// AppendJSON encodes s without reflection (the pump encodes every device at
// the loop rate) through protocol's JSON writer, leaving the grip fields out
// of an arm's state. Strings (a device id comes from firmware) are escaped
// as JSON asks: control characters as \u00XX, invalid UTF-8 as U+FFFD.
func (s *State) AppendJSON(b []byte) []byte {
	b = append(b, `{"device":`...)
	b = protocol.AppendString(b, s.Device)
	b = append(b, `,"type":`...)
	b = protocol.AppendString(b, s.Type)
	b = append(b, `,"status":`...)
	b = strconv.AppendUint(b, uint64(s.Status), 10)
	b = append(b, `,"tick":`...)
	b = strconv.AppendUint(b, s.Tick, 10)
	b = append(b, `,"time_ns":`...)
	b = strconv.AppendInt(b, s.TimeNs, 10)
	b = append(b, `,"age_ns":`...)
	b = strconv.AppendInt(b, s.AgeNs, 10)
	b = append(b, `,"mode":`...)
	b = strconv.AppendInt(b, int64(s.Mode), 10)
	b = append(b, `,"owner":`...)
	b = strconv.AppendUint(b, s.Owner, 10)
	b = append(b, `,"applied_seq":`...)
	b = strconv.AppendUint(b, s.AppliedSeq, 10)
	b = append(b, `,"failed":`...)
	b = strconv.AppendBool(b, s.Failed)
	b = appendFloats(b, "target", s.Target[:])
	b = appendFloats(b, "position", s.Position[:])
	b = appendFloats(b, "velocity", s.Velocity[:])
	b = appendFloats(b, "force", s.Force[:])
	if !s.IsGrip() && s.Model != 0 {
		b = append(b, `,"model":`...)
		b = strconv.AppendUint(b, uint64(s.Model), 10)
	}
	if !s.IsGrip() && s.LeftHanded {
		b = append(b, `,"left_handed":true`...)
	}
	if s.IsGrip() {
		b = appendFloats(b, "orientation", s.Orientation[:])
		b = append(b, `,"buttons":`...)
		b = strconv.AppendUint(b, uint64(s.Buttons), 10)
		b = append(b, `,"hall":`...)
		b = protocol.AppendFloat(b, s.Hall)
		b = append(b, `,"battery":`...)
		b = protocol.AppendFloat(b, s.Battery)
		b = append(b, `,"link":`...)
		b = protocol.AppendString(b, s.Link)
	}
	return append(b, '}')
}

// appendFloats appends ,"name":[x,...]; protocol.AppendFloat writes a
// non-finite value (a failed device's state) as 0, which JSON can hold.
func appendFloats(b []byte, name string, v []float64) []byte {
	b = append(b, `,"`...)
	b = append(b, name...)
	b = append(b, `":[`...)
	for i, x := range v {
		if i > 0 {
			b = append(b, ',')
		}
		b = protocol.AppendFloat(b, x)
	}
	return append(b, ']')
}

// sessionMessage wraps a client message or frame; a message that is not
// JSON (a client's bad input) is kept as a string. A frame is the service's
// own JSON (its encoders are checked against the schema), so it is not
// validated again: at the loop rate of a 100-arm fleet that would cost
// more than the rest of the recorder (bench/results.md). inventory marks
// the session's inventory frame.
func sessionMessage(session uint64, ns int64, buf []byte, frame, inventory bool) []byte {
	out := make([]byte, 0, len(buf)+80)
	out = append(out, `{"session":`...)
	out = strconv.AppendUint(out, session, 10)
	out = append(out, `,"time_ns":`...)
	out = strconv.AppendInt(out, ns, 10)
	if inventory {
		out = append(out, `,"inventory":true`...)
	}
	out = append(out, `,"message":`...)
	if frame || json.Valid(buf) {
		out = append(out, buf...)
	} else {
		out = protocol.AppendString(out, string(buf))
	}
	return append(out, '}')
}

// configChange is the recorded form of a config or settings change.
func configChange(method, path string, status int, body []byte) []byte {
	var b json.RawMessage
	if json.Valid(body) {
		b = body
	}
	data, _ := json.Marshal(struct {
		Method string          `json:"method"`
		Path   string          `json:"path"`
		Status int             `json:"status"`
		Body   json.RawMessage `json:"body,omitempty"`
	}{method, path, status, b})
	return data
}
