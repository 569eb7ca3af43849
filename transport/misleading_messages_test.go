package transport

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// TestByteOrderMarkIsNamed: a message or body that starts with a UTF-8 byte
// order mark (Windows editors and PowerShell write one) was refused as
// "unexpected character 'ï'", the mark's first byte read as Latin-1, which
// no client could find in its text. The answer names the mark.
func TestByteOrderMarkIsNamed(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 1})
	const bom = "\uFEFF"
	for _, u := range []string{ts.base + "/arm3/0/config/gravity_compensation", ts.legacy + "/3.0/arm3/0/config/gravity_compensation", ts.base + "/arm3/0/config/handedness"} {
		r := ts.do(http.MethodPost, u, bom+`{"enabled":true}`)
		if msg, _ := r.env["error"].(string); r.status != 400 || r.env["code"] != "invalid_json" || !strings.Contains(msg, "byte order mark") || strings.Contains(msg, "ï") {
			t.Errorf("POST %s with a BOM: %v", u, r)
		}
	}
	c := ts.dial(t, ts.wsURL())
	c.expect()
	f := c.roundTrip(bom + `{"session":{}}`)
	if msg, _ := path(f, "errors", 0, "message").(string); path(f, "errors", 0, "code") != "invalid_json" || !strings.Contains(msg, "byte order mark") {
		t.Errorf("a WebSocket message with a BOM: %v", f["errors"])
	}
}

// TestHugeRotationIsNormalised: a mount rotation of {"w": 1e200} was
// refused as "rotation must be a non-zero quaternion", which it is; its
// squared length overflowed. It is the identity now, as {"w": 2} is, over
// HTTP and in a WebSocket set_transform; only the zero quaternion is
// refused.
func TestHugeRotationIsNormalised(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 1})
	id := ts.armIDs[0]
	c := ts.dial(t, ts.wsURL())
	inv := c.expect()
	sid := fmt.Sprint(num(inv["session_id"]))
	url := ts.base + "/arm3/0/config/mount?session=" + sid
	for _, w := range []string{"1e200", "1e308", "1e-200"} {
		r := ts.do(http.MethodPost, url, `{"transform":{"rotation":{"w":`+w+`,"x":0,"y":0,"z":0}}}`)
		if r.status != 200 || num(path(r.env, "data", "transform", "rotation", "w")) != 1 {
			t.Errorf("POST mount rotation w %s: %v", w, r)
		}
		f := c.roundTrip(fmt.Sprintf(`{"arm3":[{"device_id":%q,"commands":{"set_transform":{"rotation":{"w":0,"x":%s,"y":0,"z":0}}}}]}`, id, w))
		if f["errors"] != nil || num(path(f, "arm3", 0, "state", "transform", "rotation", "x")) != 1 {
			t.Errorf("set_transform rotation x %s: errors %v, state %v", w, f["errors"], path(f, "arm3", 0, "state", "transform"))
		}
	}
	r := ts.do(http.MethodPost, url, `{"transform":{"rotation":{"w":0,"x":0,"y":0,"z":0}}}`)
	if msg, _ := r.env["error"].(string); r.status != 400 || !strings.Contains(msg, "non-zero quaternion") {
		t.Errorf("POST mount rotation zero: %v", r)
	}
}
