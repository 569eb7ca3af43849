package transport

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"
)

// TestPortsAnswer: GET /ports says whether the service watches hardware
// at all, and lists what the scan saw as it was handed over, with the
// time of the scan; its answers match the OpenAPI document (the harness
// checks each one).
func TestPortsAnswer(t *testing.T) {
	scanned := time.Date(2026, 11, 28, 2, 40, 0, 0, time.UTC)
	retry := scanned.Add(4 * time.Second)
	held := HardwarePort{Path: "/dev/ttyACM0", USBID: "16c0:0483", Product: "Haply Inverse3", Kind: "arm", Outcome: "failed",
		Reason: "hw/serial: open /dev/ttyACM0: port is busy", Hint: "stop the other hapticd", Failures: 3, RetryAt: &retry}
	other := HardwarePort{Path: "/dev/ttyUSB0", USBID: "0403:6001", Product: "FT232R", Outcome: "skipped", Reason: "USB 0403:6001 is not a known device"}
	tests := []struct {
		name  string
		ports func() HardwarePorts
		want  string
	}{
		{"no hardware watched", nil, `{"watching":false,"scanned_at":null,"ports":[]}`},
		{"before the first scan", func() HardwarePorts { return HardwarePorts{} }, `{"watching":true,"scanned_at":null,"ports":[]}`},
		{"a held port and another board", func() HardwarePorts { return HardwarePorts{ScannedAt: scanned, Ports: []HardwarePort{held, other}} },
			`{"watching":true,"scanned_at":"2026-11-28T02:40:00Z","ports":[` +
				`{"path":"/dev/ttyACM0","explicit":false,"usb_id":"16c0:0483","product":"Haply Inverse3","kind":"arm","outcome":"failed",` +
				`"reason":"hw/serial: open /dev/ttyACM0: port is busy","hint":"stop the other hapticd","failures":3,"retry_at":"2026-11-28T02:40:04Z"},` +
				`{"path":"/dev/ttyUSB0","explicit":false,"usb_id":"0403:6001","product":"FT232R","outcome":"skipped","reason":"USB 0403:6001 is not a known device","failures":0}]}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ts := startService(t, serviceConfig{arms: 1, ports: tc.ports})
			r := ts.do(http.MethodGet, ts.base+"/ports", "")
			if r.status != http.StatusOK || r.env["ok"] != true {
				t.Fatalf("GET /ports: %v", r)
			}
			got, _ := json.Marshal(r.data())
			var want any
			if err := json.Unmarshal([]byte(tc.want), &want); err != nil {
				t.Fatal(err)
			}
			wantJSON, _ := json.Marshal(want)
			if string(got) != string(wantJSON) {
				t.Errorf("GET /ports data:\n got %s\nwant %s", got, wantJSON)
			}
		})
	}
}
