package transport

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/hapticd/hapticd/protocol"
)

// POST /recordings' body is read by the rules every body follows, and its
// errors are in the service's words with the member at fault in path: they
// were encoding/json's ("json: cannot unmarshal number into Go struct field
// Options.name of type string", "json: unknown field \"zz\""), and a member
// given twice with a bad first value was refused, against "last occurrence
// wins" (docs/protocol.md, Input).
func TestRecordingOptionsAnswerInTheServicesWords(t *testing.T) {
	dir := t.TempDir()
	ts := startService(t, serviceConfig{arms: 1, recordDir: dir})
	for _, tt := range []struct {
		body, path string
		code       protocol.Code
		says       string
	}{
		{`{"name":5}`, "name", protocol.CodeInvalidValue, "name must be a string"},
		{`{"name":true}`, "name", protocol.CodeInvalidValue, "name must be a string"},
		{`{"name":[]}`, "name", protocol.CodeInvalidValue, "name must be a string"},
		{`{"zz":1}`, "zz", protocol.CodeInvalidValue, `no member "zz"`},
		{`{"name":"a","Rate_hz":5}`, "Rate_hz", protocol.CodeInvalidValue, "devices, sessions, rate_hz and name"},
		{`{"rate_hz":"x"}`, "rate_hz", protocol.CodeInvalidValue, "rate_hz must be a number"},
		{`{"rate_hz":1e400}`, "rate_hz", protocol.CodeInvalidValue, "not a number a float64 holds (finite, and 0 or at least 5e-324 in size): 1e400"},
		{`{"rate_hz":1e-400}`, "rate_hz", protocol.CodeInvalidValue, "not a number a float64 holds"},
		{`{"rate_hz":-1e-400}`, "rate_hz", protocol.CodeInvalidValue, "not a number a float64 holds"},
		{`{"rate_hz":100,"rate_hz":"x"}`, "rate_hz", protocol.CodeInvalidValue, "rate_hz must be a number"},
		{`{"devices":[]}`, "devices", protocol.CodeInvalidValue, "devices is empty: it would record no device; leave it out"},
		{`{"sessions":[]}`, "sessions", protocol.CodeInvalidValue, "sessions is empty: it would record no session; leave it out"},
		{`{"devices":"CBBD"}`, "devices", protocol.CodeInvalidValue, "devices must be an array of device ids"},
		{`{"devices":[5]}`, "devices[0]", protocol.CodeInvalidValue, "must be a device id"},
		{`{"sessions":3}`, "sessions", protocol.CodeInvalidValue, "sessions must be an array of session ids"},
		{`{"sessions":[1.5]}`, "sessions[0]", protocol.CodeInvalidValue, "must be a session id"},
		{`{"sessions":[-1]}`, "sessions[0]", protocol.CodeInvalidValue, "must be a session id"},
		{`{"sessions":["1"]}`, "sessions[0]", protocol.CodeInvalidValue, "must be a session id"},
		{`{"sessions":[1e400]}`, "sessions[0]", protocol.CodeInvalidValue, "must be a session id"},
	} {
		r := ts.do("POST", ts.base+"/recordings", tt.body)
		msg, _ := r.env["error"].(string)
		if r.status != 400 || r.env["code"] != string(tt.code) || r.env["path"] != tt.path || !strings.Contains(msg, tt.says) {
			t.Errorf("POST /recordings %s: %v, want 400 %s at %q saying %q", tt.body, r, tt.code, tt.path, tt.says)
		}
		for _, goish := range []string{"json:", "Go struct", "unmarshal", "Options."} {
			if strings.Contains(msg, goish) {
				t.Errorf("POST /recordings %s: %q speaks Go (%q)", tt.body, msg, goish)
			}
		}
	}
	if files, _ := os.ReadDir(dir); len(files) != 0 {
		t.Errorf("after refused starts: %d files in the recordings directory, want none", len(files))
	}

	// The last occurrence counts, a bad first one included, and a null
	// member is an absent one: its default.
	for _, tt := range []struct{ body, name, rate string }{
		{`{"rate_hz":"x","rate_hz":100}`, "recording", "100"},
		{`{"name":5,"name":"last"}`, "last", "0"},
		{`{"name":null,"rate_hz":null,"devices":null,"sessions":null}`, "recording", "0"},
		{`{"name":"first","name":null}`, "recording", "0"},
	} {
		r := ts.startRecording(tt.body)
		if got := path(r.data(), "name"); got != tt.name || strconv.FormatFloat(num(path(r.data(), "options", "rate_hz")), 'g', -1, 64) != tt.rate {
			t.Errorf("POST /recordings %s: %v, want name %q and rate_hz %s", tt.body, r, tt.name, tt.rate)
		}
		ts.do("DELETE", ts.base+"/recordings/"+strconv.Itoa(int(num(path(r.data(), "id")))), "")
	}
}

// A device id in POST /recordings names its device by the rule of every
// id a client gives (docs/protocol.md, Input): exactly, or else regardless
// of case. "cbbd" for arm CBBD answered 200 and recorded none of the arm,
// and an id no device has ("ZZZZ") started a recording of nothing: it is
// 404 unknown_device, as a deprecated route's device_id. A session that is
// not connected is 404 unknown_session: {"sessions":[999]} was accepted.
func TestRecordingDevicesAndSessionsMustNameSomething(t *testing.T) {
	dir := t.TempDir()
	ts := startService(t, serviceConfig{arms: 2, recordDir: dir})
	id, lower := ts.armIDInLowerCase(0)

	for _, tt := range []struct {
		body, path string
		code       protocol.Code
	}{
		{`{"devices":["ZZZZ"]}`, "devices[0]", protocol.CodeUnknownDevice},
		{`{"devices":["` + id + `","ZZZZ"]}`, "devices[1]", protocol.CodeUnknownDevice},
		{`{"devices":[""]}`, "devices[0]", protocol.CodeUnknownDevice},
		{`{"sessions":[999]}`, "sessions[0]", protocol.CodeUnknownSession},
		{`{"sessions":[0]}`, "sessions[0]", protocol.CodeUnknownSession},
	} {
		r := ts.do("POST", ts.base+"/recordings", tt.body)
		if r.status != 404 || r.env["code"] != string(tt.code) || r.env["path"] != tt.path {
			t.Errorf("POST /recordings %s: %v, want 404 %s at %q", tt.body, r, tt.code, tt.path)
		}
	}
	if files, _ := os.ReadDir(dir); len(files) != 0 {
		t.Errorf("after refused starts: %d files in the recordings directory, want none", len(files))
	}

	// In lower case: the arm's own id, and its states.
	f, stopped, _, _ := recordFor(t, ts, `{"devices":["`+lower+`"]}`, 50)
	if num(path(stopped.data(), "id")) != 1 || !jsonEqual(t, path(stopped.data(), "options", "devices"), `["`+id+`"]`) {
		t.Errorf("recording of %q: %v, want id 1 (the refused ones took none) and devices [%q]", lower, stopped, id)
	}
	if n := len(statesOf(t, f, id)); n == 0 {
		t.Errorf("recording of %q holds no state of arm %s", lower, id)
	}
	if n := len(statesOf(t, f, ts.armIDs[1])); n != 0 {
		t.Errorf("recording of %q holds %d states of the other arm %s", lower, n, ts.armIDs[1])
	}

	// Named twice, in either case: once.
	twice := ts.startRecording(`{"devices":["` + lower + `","` + id + `"]}`)
	if !jsonEqual(t, path(twice.data(), "options", "devices"), `["`+id+`"]`) {
		t.Errorf("recording of %q and %q: %v, want devices [%q]", lower, id, twice, id)
	}

	// A connected session is taken.
	c := ts.dial(t, ts.wsURL())
	session := int(num(c.expect()["session_id"]))
	r := ts.startRecording(`{"sessions":[` + strconv.Itoa(session) + `]}`)
	if !jsonEqual(t, path(r.data(), "options", "sessions"), `[`+strconv.Itoa(session)+`]`) {
		t.Errorf("recording of session %d: %v", session, r)
	}
}

// An empty or blank body is no options: curl -X POST without -d records
// every device and session, as documented.
func TestRecordingWithoutABodyRecordsEverything(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 1, recordDir: t.TempDir()})
	for _, body := range []string{"", " \n\t"} {
		r := ts.startRecording(body)
		if path(r.data(), "name") != "recording" || path(r.data(), "options", "devices") != nil {
			t.Errorf("POST /recordings %q: %v, want the defaults", body, r)
		}
		ts.do("DELETE", ts.base+"/recordings/"+strconv.Itoa(int(num(path(r.data(), "id")))), "")
	}
}
