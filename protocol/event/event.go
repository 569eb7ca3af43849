package event

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/hapticd/hapticd/protocol"
)

// Event is one activity event as it goes on the wire.
type Event struct {
	// Seq grows by one per event published to the activity channel, from a
	// first seq per run of the service that no earlier run reached. On an
	// events-dropped event it repeats the seq of the last event the
	// subscriber received before the gap; on a service-restarted event it
	// is the one before this run's first.
	Seq uint64 `json:"seq"`
	// Time is when the event was published, encoded in UTC with
	// milliseconds.
	Time     time.Time       `json:"time"`
	Name     string          `json:"name"`
	Category string          `json:"category"`
	Level    string          `json:"level"`
	Data     json.RawMessage `json:"data"`
	// Message is one human sentence saying what happened and, where there
	// is one, what to do about it.
	Message string `json:"message"`
}

// MarshalJSON encodes the event exactly as [AppendJSON] does, so that every
// path (socket, GET /events, logs) writes the same bytes.
func (e Event) MarshalJSON() ([]byte, error) {
	return AppendJSON(make([]byte, 0, 256+len(e.Data)+len(e.Message)), &e), nil
}

// Event names (docs/events.md and the additions listed in [Kinds]).
const (
	NameHTTPRouteDeprecated = "http-route-deprecated"
	NameCommandDeprecated   = "command-deprecated"
	NameDeviceConnected     = "device-connected"
	NameDeviceDisconnected  = "device-disconnected"
	NameDeviceFailed        = "device-failed"
	NameInvalidIOChannel    = "invalid-io-channel"
	NameSessionStarted      = "session-started"
	NameSessionEnded        = "session-ended"
	NameDeviceBusy          = "device-busy"
	NameControlLeaseExpired = "control-lease-expired"
	NameControlRateWarning  = "control-rate-warning"
	NameEventsDropped       = "events-dropped"
	NameServiceRestarted    = "service-restarted"
	NameEffectRefused       = "effect-refused"
	NameEffectExpired       = "effect-expired"
	NameNavigationRefused   = "navigation-refused"
	NamePassivityActive     = "passivity-active"
	NameRecordingFailed     = "recording-failed"
	NameLabNodeRefused      = "lab-node-refused"
	NameStoredEntryRejected = "stored-entry-rejected"
)

// Categories.
const (
	CategorySystem  = "system"
	CategorySession = "session"
	CategoryDevice  = "device"
	CategoryInput   = "input"
)

// Levels, from least to most severe.
const (
	LevelInfo    = "info"
	LevelNotice  = "notice"
	LevelWarning = "warning"
	LevelError   = "error"
)

// MaxReceivedBytes is how much of the input sent on the events socket an
// invalid-io-channel event keeps.
const MaxReceivedBytes = 256

// Kind describes one event name: its category, level and the fields of its
// data object, in the order they are encoded.
type Kind struct {
	Name     string   `json:"name"`
	Category string   `json:"category"`
	Level    string   `json:"level"`
	Fields   []string `json:"fields"`
	// About says when the event is emitted, for generated documentation.
	About string `json:"about"`
}

// kinds is the one table of every event. It is never written; Kinds and
// Lookup hand out copies.
var kinds = [...]Kind{
	{NameHTTPRouteDeprecated, CategorySystem, LevelWarning,
		[]string{"route", "replacement", "remote"},
		"a deprecated HTTP route was called (replacement with {type}/{id} filled in when the body names a device)"},
	{NameCommandDeprecated, CategorySession, LevelWarning,
		[]string{"command", "replacement", "session_id", "profile"},
		"a session sent a deprecated command (replacement in the session's API layout, 3.0's keyed by device id, with the command's own preset or permutation and one of the service's arms)"},
	{NameDeviceConnected, CategoryDevice, LevelNotice,
		[]string{"device_family", "device_type", "device_id"},
		"a device was found at start or plugged in later"},
	{NameDeviceDisconnected, CategoryDevice, LevelWarning,
		[]string{"device_family", "device_type", "device_id"},
		"a device went away"},
	{NameDeviceFailed, CategoryDevice, LevelError,
		[]string{"device_type", "device_id", "reason"},
		"a device's driver kept failing; it is halted and unlisted, and added again once it answers (replugged, or by itself after a hang)"},
	{NameInvalidIOChannel, CategoryInput, LevelWarning,
		[]string{"received_data"},
		"a client sent input on the read-only events socket (kept up to 256 bytes)"},
	{NameSessionStarted, CategorySession, LevelInfo,
		[]string{"session_id", "profile", "remote", "api_version"},
		"a simulation WebSocket session opened; profile is null then (a session picks its profile with its first messages; session-ended names it)"},
	{NameSessionEnded, CategorySession, LevelInfo,
		[]string{"session_id", "profile", "remote", "api_version", "reason", "close_code"},
		"a simulation WebSocket session closed; reason is client_closed, read_error (also a client that answered no ping within the read timeout), write_timeout, message_too_big, shutdown, internal_error or protocol_violation"},
	{NameDeviceBusy, CategoryDevice, LevelWarning,
		[]string{"device_type", "device_id", "session_id", "owner_session_id"},
		"a session was refused control of a device another session controls"},
	{NameControlLeaseExpired, CategoryDevice, LevelNotice,
		[]string{"device_type", "device_id", "session_id", "effects_dropped"},
		"a controlling session sent no command within its lease; the force ramps to zero, and effects_dropped counts the session's effects on the device that went with it (0: it had none; they are not rendered again until declared again). On a lab node, for a gateway's control: 0, its effects pause with the force and render again with the gateway's next command (the message says how many); the gateway passes that one on only while its session's lease there runs on (a stalled link), or once after it took the arm from that session for the node's other holder: a quiet session's lapse is the gateway's own to tell"},
	{NameControlRateWarning, CategoryDevice, LevelWarning,
		[]string{"device_type", "device_id", "period_us_p99", "target_us", "suppressed"},
		"a device's control loop missed its bound (p99 period over 1.5 × target) over a one-second window; at most one a minute per device, suppressed counting the late windows not reported since the last one"},
	{NameEventsDropped, CategorySystem, LevelWarning,
		[]string{"missed"},
		"this subscriber fell behind and missed events (its own stream only; not in the ring)"},
	{NameServiceRestarted, CategorySystem, LevelNotice,
		[]string{"since"},
		"this subscriber resumed with a since an earlier run of hapticd handed out (it restarted since): this run's events follow from its first; what the earlier run published after since is not known (its own stream only; not in the ring)"},
	{NameEffectRefused, CategoryDevice, LevelWarning,
		[]string{"device_type", "device_id", "session_id", "effect_id", "code", "reason"},
		"a device refused a session's effect declaration (code: the error code the session got, e.g. device_busy, or too_many_effects when the arm would hold more than 16); nothing of it applied. device_busy at most once a second per device, as device-busy; a declaration the message's decoding refuses (17 effects in one set, a bad field) is answered in the frame only"},
	{NameEffectExpired, CategoryDevice, LevelInfo,
		[]string{"device_type", "device_id", "session_id", "effect_id"},
		"an effect's ttl_ms ran out (or a vibration's duration_ms); its force faded out and it was removed"},
	{NameNavigationRefused, CategoryDevice, LevelWarning,
		[]string{"device_type", "device_id", "session_id", "code", "reason"},
		"the loop that renders an arm could not take a session's bubble navigation after the config was answered (in a lab: the arm's node refused what the gateway forwarded; code invalid_value or unavailable); the arm renders no navigation for that session, its config entry stays"},
	{NamePassivityActive, CategoryDevice, LevelWarning,
		[]string{"device_type", "device_id", "session_id", "duration_ms", "added_damping"},
		"the passivity controller added damping to a device's output for longer than a second (the rendering generates energy: lower a stiffness or raise the loop rate); at most one per episode"},
	{NameRecordingFailed, CategorySystem, LevelError,
		[]string{"recording_id", "name", "path", "reason"},
		"a recording's file refused a write (a full disk, an I/O error): the recording stopped there and records nothing more; `GET /recordings` lists it inactive with the error (while it is among the last 64 stopped), and counts what it lost in `dropped`"},
	{NameLabNodeRefused, CategorySystem, LevelError,
		[]string{"node_id", "reason"},
		"a lab gateway's node refused its subscription, or the gateway refused the node: the node runs another build than the gateway (or a build older than the lab's build check), which `reason` names with both builds and docs/lab.md's upgrade order, and the gateway's `/readyz` names the node until both run one build; or another live gateway process advertises the same cluster address (a misconfigured `--cluster-advertise`, or NAT) and holds the node. The node's devices are not served by this gateway until the node takes it (once per refusal, again after the node took it or after its refusals stopped for 3 s). A gateway restarted at a fixed cluster port gets none: the node's \"takeover pending\" answers, while the old process's silence is waited out (1 s), are not published unless they go on past 3 s"},
	{NameStoredEntryRejected, CategorySystem, LevelError,
		[]string{"device_type", "device_id", "profile", "entry", "path", "kept_at", "reason", "node_id"},
		"an entry of a stored config document (a device's device-global entries, or a profile's on one device; device_type and device_id null for a profile's basis and lease) holds a value this build does not accept (written by a newer build, or a typo): that entry takes its default, every other entry of the document is in force; path is the file, kept_at a copy of it as read (\"\" if none could be made). GET of the entry answers a warning saying so until the entry is set again (a profile's while a session of the profile is connected to the device; a profile's basis and lease are warned of in the pick's frame); published when the document is read (a device's at its addition, a profile's at a pick that reads it). `entry` `*`: a device's whole document was not readable (not JSON, torn, a byte-order mark, a bad value outside the entries) and was moved aside to `kept_at`: every entry of it takes its default, and a GET of any of them says so until it is set again (published at the device's addition, once). `node_id`: on a lab's gateway, the node whose stored document it is (null on the node itself, or a single host). The gateway publishes each device-global entry a node holds rejected (one whose GET warns) once per node process, however long after the node's read it joined, with `device_id` the gateway's id of the device; a profile's as the node publishes it"},
}

// nullFields are the data fields, by event, that may be null besides a
// profile (null everywhere it is absent).
var nullFields = map[string][]string{
	NameStoredEntryRejected: {"device_type", "device_id", "node_id"},
}

// Nullable reports whether field of the event called name may be null
// (a profile may be, in every event that has one).
func Nullable(name, field string) bool {
	return field == "profile" || slices.Contains(nullFields[name], field)
}

// Kinds returns the table of every event, in documentation order. The
// result is a copy.
func Kinds() []Kind {
	out := make([]Kind, len(kinds))
	for i, k := range kinds {
		k.Fields = append([]string(nil), k.Fields...)
		out[i] = k
	}
	return out
}

// Lookup returns the table row of an event name.
func Lookup(name string) (Kind, bool) {
	r := row(name)
	if r == nil {
		return Kind{}, false
	}
	k := *r
	k.Fields = append([]string(nil), k.Fields...)
	return k, true
}

// row is the table row of name, or nil; the caller must not write it.
func row(name string) *Kind {
	for i := range kinds {
		if kinds[i].Name == name {
			return &kinds[i]
		}
	}
	return nil
}

// build fills an event from its table row. data is a struct whose JSON
// fields are the row's Fields, in order; the tests hold every constructor to
// that.
func build(name string, data any, message string) Event {
	k := row(name)
	raw, err := json.Marshal(data)
	if err != nil || k == nil {
		// Unreachable: every data struct holds only strings, integers and
		// finite floats (see finite), and every name is in the table.
		raw = []byte("{}")
		if k == nil {
			return Event{Name: name, Category: CategorySystem, Level: LevelError, Data: raw, Message: message}
		}
	}
	return Event{Name: k.Name, Category: k.Category, Level: k.Level, Data: raw, Message: message}
}

// nullable encodes "" as JSON null: an absent profile is null on the wire,
// as in GET /sessions.
func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// finite keeps json.Marshal from failing on a NaN or infinite measurement;
// such a value is reported as 0. Every finite value, however large, is kept.
func finite(f float64) float64 {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0
	}
	return f
}

// HTTPRouteDeprecated reports a call to a deprecated HTTP route. route and
// replacement include the method ("POST /force_scale"); remote is the
// caller's address.
func HTTPRouteDeprecated(route, replacement, remote string) Event {
	return build(NameHTTPRouteDeprecated, struct {
		Route       string `json:"route"`
		Replacement string `json:"replacement"`
		Remote      string `json:"remote"`
	}{route, replacement, remote},
		fmt.Sprintf("%s is deprecated and will be removed in 4.0; use %s", route, replacement))
}

// CommandDeprecated reports a deprecated session command
// ("session.set_basis"). profile is "" when the session has none.
func CommandDeprecated(command, replacement string, sessionID uint64, profile string) Event {
	return build(NameCommandDeprecated, struct {
		Command     string  `json:"command"`
		Replacement string  `json:"replacement"`
		SessionID   uint64  `json:"session_id"`
		Profile     *string `json:"profile"`
	}{command, replacement, sessionID, nullable(profile)},
		fmt.Sprintf("%s is deprecated (session %d%s); use %s", command, sessionID, profileSuffix(profile), replacement))
}

func profileSuffix(profile string) string {
	if profile == "" {
		return ", no profile"
	}
	return ", profile " + profile
}

type deviceData struct {
	Family string `json:"device_family"`
	Type   string `json:"device_type"`
	ID     string `json:"device_id"`
}

// DeviceConnected reports a device found at start or hot-plugged. family is
// "inverse" for arms and "verse_grip" for grips.
func DeviceConnected(family, deviceType, deviceID string) Event {
	return build(NameDeviceConnected, deviceData{family, deviceType, deviceID},
		fmt.Sprintf("%s %s (%s) connected", deviceType, deviceID, family))
}

// DeviceDisconnected reports a device that went away.
func DeviceDisconnected(family, deviceType, deviceID string) Event {
	return build(NameDeviceDisconnected, deviceData{family, deviceType, deviceID},
		fmt.Sprintf("%s %s (%s) disconnected; sessions no longer see it", deviceType, deviceID, family))
}

// DeviceFailed reports a device whose driver kept failing and which is now
// halted; reason is the last driver error.
func DeviceFailed(deviceType, deviceID, reason string) Event {
	return build(NameDeviceFailed, struct {
		Type   string `json:"device_type"`
		ID     string `json:"device_id"`
		Reason string `json:"reason"`
	}{deviceType, deviceID, reason},
		fmt.Sprintf("%s %s failed and is halted: %s; it is added again once it answers (GET /ports shows the retries)", deviceType, deviceID, reason))
}

// InvalidIOChannel reports input sent on the read-only events socket. Only
// the first MaxReceivedBytes bytes are kept; bytes that are not UTF-8 are
// encoded as U+FFFD.
func InvalidIOChannel(received []byte) Event {
	if len(received) > MaxReceivedBytes {
		received = received[:MaxReceivedBytes]
	}
	return build(NameInvalidIOChannel, struct {
		Received string `json:"received_data"`
	}{string(received)},
		"the events socket is read-only; input sent to it was dropped")
}

type sessionData struct {
	SessionID  uint64  `json:"session_id"`
	Profile    *string `json:"profile"`
	Remote     string  `json:"remote"`
	APIVersion string  `json:"api_version"`
}

// SessionStarted reports a simulation session that opened. apiVersion is
// "3.x" or "3.0"; profile is "" when the session has none yet.
func SessionStarted(sessionID uint64, profile, remote, apiVersion string) Event {
	return build(NameSessionStarted, sessionData{sessionID, nullable(profile), remote, apiVersion},
		fmt.Sprintf("session %d started from %s (API %s%s)", sessionID, remote, apiVersion, profileSuffix(profile)))
}

// SessionEnded reports a simulation session that closed, with the profile it
// had at the end and why it ended.
func SessionEnded(sessionID uint64, profile, remote, apiVersion string, reason protocol.CloseReason) Event {
	return build(NameSessionEnded, struct {
		sessionData
		Reason    protocol.CloseReason `json:"reason"`
		CloseCode int                  `json:"close_code"`
	}{sessionData{sessionID, nullable(profile), remote, apiVersion}, reason, reason.CloseCode()},
		fmt.Sprintf("session %d from %s ended: %s (API %s%s)", sessionID, remote, reason, apiVersion, profileSuffix(profile)))
}

// DeviceBusy reports a control command refused because another session
// controls the device.
func DeviceBusy(deviceType, deviceID string, sessionID, ownerSessionID uint64) Event {
	return build(NameDeviceBusy, struct {
		Type    string `json:"device_type"`
		ID      string `json:"device_id"`
		Session uint64 `json:"session_id"`
		Owner   uint64 `json:"owner_session_id"`
	}{deviceType, deviceID, sessionID, ownerSessionID},
		fmt.Sprintf("session %d was refused control of %s %s: session %d controls it until it disconnects or its lease lapses",
			sessionID, deviceType, deviceID, ownerSessionID))
}

// ControlLeaseExpired reports a controlling session whose lease lapsed,
// and how many of its effects on the device the lapse dropped.
func ControlLeaseExpired(deviceType, deviceID string, sessionID uint64, effectsDropped int) Event {
	dropped := ""
	if effectsDropped == 1 {
		dropped = "; its effect there was dropped: declare it again"
	} else if effectsDropped > 1 {
		dropped = fmt.Sprintf("; its %d effects there were dropped: declare them again", effectsDropped)
	}
	return controlLeaseExpired(deviceType, deviceID, sessionID, effectsDropped,
		fmt.Sprintf("session %d sent no command to %s %s within its lease; the force ramps to zero (send commands every tick or raise session.configure.lease)%s",
			sessionID, deviceType, deviceID, dropped))
}

// RemoteControlLeaseExpired is ControlLeaseExpired on a lab node for a
// gateway's forwarded control: its paused effects (none dropped) render
// again with the gateway's next command, unless another owner takes the
// arm first.
func RemoteControlLeaseExpired(deviceType, deviceID string, sessionID uint64, effectsPaused int) Event {
	paused := ""
	if effectsPaused == 1 {
		paused = "; its effect there is paused with the force and renders again with the gateway's next command"
	} else if effectsPaused > 1 {
		paused = fmt.Sprintf("; its %d effects there are paused with the force and render again with the gateway's next command", effectsPaused)
	}
	return controlLeaseExpired(deviceType, deviceID, sessionID, 0,
		fmt.Sprintf("the lab gateway's control (owner %d) sent no command to %s %s within the node's lease (--cluster-lease-ms); the force ramps to zero%s",
			sessionID, deviceType, deviceID, paused))
}

func controlLeaseExpired(deviceType, deviceID string, sessionID uint64, effectsDropped int, msg string) Event {
	return build(NameControlLeaseExpired, struct {
		Type    string `json:"device_type"`
		ID      string `json:"device_id"`
		Session uint64 `json:"session_id"`
		Dropped int    `json:"effects_dropped"`
	}{deviceType, deviceID, sessionID, effectsDropped}, msg)
}

// ControlRateWarning reports a control loop whose p99 period drifted past
// its bound. Both periods are in microseconds; suppressed counts the late
// windows not reported since the previous warning.
func ControlRateWarning(deviceType, deviceID string, periodUsP99, targetUs float64, suppressed uint64) Event {
	periodUsP99, targetUs = finite(periodUsP99), finite(targetUs)
	more := ""
	if suppressed > 0 {
		more = fmt.Sprintf("; late in %d more one-second windows since the last warning", suppressed)
	}
	return build(NameControlRateWarning, struct {
		Type       string  `json:"device_type"`
		ID         string  `json:"device_id"`
		P99        float64 `json:"period_us_p99"`
		Target     float64 `json:"target_us"`
		Suppressed uint64  `json:"suppressed"`
	}{deviceType, deviceID, periodUsP99, targetUs, suppressed},
		fmt.Sprintf("the control loop of %s %s runs late: p99 period %.0f µs against a %.0f µs target (the machine is overloaded)%s",
			deviceType, deviceID, periodUsP99, targetUs, more))
}

// EffectRefused reports an effect declaration a device refused; effectID
// is the first effect of the declaration it names ("" when it names none),
// code the error code the session got.
func EffectRefused(deviceType, deviceID string, sessionID uint64, effectID, code, reason string) Event {
	return build(NameEffectRefused, struct {
		Type    string `json:"device_type"`
		ID      string `json:"device_id"`
		Session uint64 `json:"session_id"`
		Effect  string `json:"effect_id"`
		Code    string `json:"code"`
		Reason  string `json:"reason"`
	}{deviceType, deviceID, sessionID, effectID, code, reason},
		fmt.Sprintf("%s %s refused effects of session %d (%s): %s", deviceType, deviceID, sessionID, code, reason))
}

// EffectExpired reports an effect whose time to live ran out.
func EffectExpired(deviceType, deviceID string, sessionID uint64, effectID string) Event {
	return build(NameEffectExpired, struct {
		Type    string `json:"device_type"`
		ID      string `json:"device_id"`
		Session uint64 `json:"session_id"`
		Effect  string `json:"effect_id"`
	}{deviceType, deviceID, sessionID, effectID},
		fmt.Sprintf("effect %q of session %d on %s %s expired and faded out", effectID, sessionID, deviceType, deviceID))
}

// NavigationRefused reports a session's bubble navigation that the loop
// rendering the arm could not take after its config was answered (a
// lab's node refusing what a gateway forwarded); code is protocol's error
// code.
func NavigationRefused(deviceType, deviceID string, sessionID uint64, code, reason string) Event {
	return build(NameNavigationRefused, struct {
		Type    string `json:"device_type"`
		ID      string `json:"device_id"`
		Session uint64 `json:"session_id"`
		Code    string `json:"code"`
		Reason  string `json:"reason"`
	}{deviceType, deviceID, sessionID, code, reason},
		fmt.Sprintf("%s %s renders no navigation for session %d (%s): %s", deviceType, deviceID, sessionID, code, reason))
}

// PassivityActive reports a passivity controller that has been adding
// damping for durationMs (over a second); addedDamping is the damping it
// adds now, N·s/m. sessionID is the controlling session, 0 for none.
func PassivityActive(deviceType, deviceID string, sessionID uint64, durationMs, addedDamping float64) Event {
	durationMs, addedDamping = finite(durationMs), finite(addedDamping)
	return build(NamePassivityActive, struct {
		Type     string  `json:"device_type"`
		ID       string  `json:"device_id"`
		Session  uint64  `json:"session_id"`
		Duration float64 `json:"duration_ms"`
		Damping  float64 `json:"added_damping"`
	}{deviceType, deviceID, sessionID, durationMs, addedDamping},
		fmt.Sprintf("the passivity controller of %s %s has added damping for %.0f ms (%.2f N·s/m now): the rendering generates energy; lower a stiffness or raise the loop rate",
			deviceType, deviceID, durationMs, addedDamping))
}

// EventsDropped tells one subscriber it fell behind and missed events. The
// activity actor writes it on that subscriber's stream only.
func EventsDropped(missed uint64) Event {
	return build(NameEventsDropped, eventsDropped{missed},
		fmt.Sprintf("this subscriber fell behind and missed %d events; read faster or fetch them with GET /events", missed))
}

// eventsDropped is the data of an events-dropped event.
type eventsDropped struct {
	Missed uint64 `json:"missed"`
}

// MissedOf is how many events an events-dropped event stands for (those
// after its seq); false for any other event.
func MissedOf(e Event) (uint64, bool) {
	var d eventsDropped
	if e.Name != NameEventsDropped || json.Unmarshal(e.Data, &d) != nil {
		return 0, false
	}
	return d.Missed, true
}

// ServiceRestarted tells one subscriber that its resume point, since, was
// handed out by an earlier run of the service. The activity actor writes it
// on that subscriber's stream only, in front of this run's events.
func ServiceRestarted(since uint64) Event {
	return build(NameServiceRestarted, struct {
		Since uint64 `json:"since"`
	}{since},
		fmt.Sprintf("hapticd restarted after it handed out seq %d: the events that follow are its new run's, from the first; any the earlier run published after %d are not known", since, since))
}

// LabNodeRefused reports a lab node that refused this gateway's
// subscription, with the node's reason.
func LabNodeRefused(nodeID, reason string) Event {
	return build(NameLabNodeRefused, struct {
		Node   string `json:"node_id"`
		Reason string `json:"reason"`
	}{nodeID, reason},
		fmt.Sprintf("lab node %s refused this gateway: %s", nodeID, reason))
}

// LabNodeOfAnotherBuild is lab-node-refused as the gateway publishes it
// when it refuses the node itself: the node's inventory states another
// build than the gateway's, or none (a build older than the check, which
// cannot refuse the gateway itself).
func LabNodeOfAnotherBuild(nodeID, reason string) Event {
	return build(NameLabNodeRefused, struct {
		Node   string `json:"node_id"`
		Reason string `json:"reason"`
	}{nodeID, reason},
		fmt.Sprintf("lab node %s runs another build; this gateway serves none of its devices: %s", nodeID, reason))
}

// RecordingFailed reports a recording whose file refused a write: it
// stopped, and records nothing more.
func RecordingFailed(id uint64, name, path, reason string) Event {
	return build(NameRecordingFailed, struct {
		ID     uint64 `json:"recording_id"`
		Name   string `json:"name"`
		Path   string `json:"path"`
		Reason string `json:"reason"`
	}{id, name, path, reason},
		fmt.Sprintf("recording %d (%s) stopped: %s", id, path, reason))
}

// StoredEntryRejected reports an entry of a stored config document that
// this build does not accept: it took its default, the others are in force.
// deviceType and deviceID are "" for a profile's session level (encoded
// null), profile "" for a device's device-global document; keptAt is the
// copy of the file as read, "" if none could be made. Its node_id is null:
// a lab's gateway sets it on the events of its nodes.
func StoredEntryRejected(deviceType, deviceID, profile, entry, path, keptAt, reason string) Event {
	where := "device-global entries of " + deviceType + " " + deviceID
	switch {
	case profile != "" && deviceID != "":
		where = fmt.Sprintf("entries of profile %q on %s %s", profile, deviceType, deviceID)
	case profile != "":
		where = fmt.Sprintf("basis and lease of profile %q", profile)
	}
	kept := "; no copy of the file could be kept"
	if keptAt != "" {
		kept = "; the file as read is kept at " + keptAt
	}
	return build(NameStoredEntryRejected, struct {
		Type    *string `json:"device_type"`
		ID      *string `json:"device_id"`
		Profile *string `json:"profile"`
		Entry   string  `json:"entry"`
		Path    string  `json:"path"`
		KeptAt  string  `json:"kept_at"`
		Reason  string  `json:"reason"`
		Node    *string `json:"node_id"`
	}{nullable(deviceType), nullable(deviceID), nullable(profile), entry, path, keptAt, reason, nil},
		func() string {
			if entry == "*" {
				return fmt.Sprintf("the stored %s: the file was not readable (%s) and was moved aside to %s, so every entry of it takes its default; set them again (the moved file has the old values)", where, reason, keptAt)
			}
			return fmt.Sprintf("the stored %s: %s was not accepted (%s), so it takes its default and the other entries are in force%s; set it again to store a clean value", where, entry, reason, kept)
		}())
}
