package protocol

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestDecodeSubscribe(t *testing.T) {
	types := aliasTable(t)
	tests := []struct {
		name    string
		sub     string
		want    *Subscription
		wantErr string
	}{
		{"one arm", `{"devices":[{"device_type":"arm3","device_id":"049D"}]}`,
			&Subscription{Devices: []SubscribedDevice{{TypeArm, "049D"}}}, ""},
		{"alias and duplicates", `{"devices":[{"device_type":"inverse3","device_id":"049D"},{"device_type":"arm3","device_id":"049D"},{"device_type":"grip","device_id":"7"}]}`,
			&Subscription{Devices: []SubscribedDevice{{TypeArm, "049D"}, {TypeGrip, "7"}}}, ""},
		{"every device", `{"devices":"*"}`, &Subscription{All: true}, ""},
		{"no device", `{"devices":[]}`, &Subscription{}, ""},
		{"not an object", `[1]`, nil, "subscribe must be an object"},
		{"no devices key", `{}`, nil, `subscribe needs "devices"`},
		{"unknown type", `{"devices":[{"device_type":"arm9","device_id":"1"}]}`, nil, `unknown device type "arm9"`},
		{"missing id", `{"devices":[{"device_type":"arm3"}]}`, nil, `needs "device_type" and "device_id"`},
		{"id not a string", `{"devices":[{"device_type":"arm3","device_id":5}]}`, nil, "device_id must be a non-empty string"},
		{"state fields, every device", `{"state":["cursor_velocity","cursor_position"]}`,
			&Subscription{All: true, ArmState: stateFieldsChosen | 1<<FieldCursorPosition | 1<<FieldCursorVelocity}, ""},
		{"state fields and one arm", `{"devices":[{"device_type":"arm3","device_id":"049D"}],"state":["control_mode"]}`,
			&Subscription{Devices: []SubscribedDevice{{TypeArm, "049D"}}, ArmState: stateFieldsChosen | 1<<FieldControlMode}, ""},
		{"every state field", `{"devices":"*","state":"*"}`, &Subscription{All: true}, ""},
		{"no state field", `{"state":[]}`, &Subscription{All: true, ArmState: stateFieldsChosen}, ""},
		{"unknown state field", `{"state":["cursor_position","motor_temperature"]}`, nil, `unknown arm state field "motor_temperature"`},
		{"state not a list", `{"state":"cursor_position"}`, nil, `state must be "*" or a list`},
		{"state field not a string", `{"state":[1]}`, nil, "a state field is a string"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var m ClientMessage
			errs := DecodeClientMessage([]byte(`{"session":{"configure":{"subscribe":`+tc.sub+`}}}`), types, &m)
			if tc.wantErr != "" {
				if len(errs) != 1 || !strings.Contains(errs[0].Message, tc.wantErr) {
					t.Fatalf("errors %+v, want one containing %q", errs, tc.wantErr)
				}
				return
			}
			if len(errs) != 0 {
				t.Fatalf("errors %+v", errs)
			}
			got := m.Session.Subscribe
			if got == nil || got.All != tc.want.All || got.ArmState != tc.want.ArmState || len(got.Devices) != len(tc.want.Devices) ||
				(len(got.Devices) > 0 && !reflect.DeepEqual(got.Devices, tc.want.Devices)) {
				t.Fatalf("subscription %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestSubscriptionWants(t *testing.T) {
	s := Subscription{Devices: []SubscribedDevice{{TypeArm, "049D"}}}
	if !s.Wants(TypeArm, "049D") || s.Wants(TypeArm, "049E") || s.Wants(TypeGrip, "049D") {
		t.Fatal("a one-arm subscription wants the wrong devices")
	}
	if all := (Subscription{All: true}); !all.Wants(TypeGrip, "x") {
		t.Fatal("an all-devices subscription refused a device")
	}
}

// TestFrameCarriesTheSubscribedStateFields: the encoder writes the chosen
// arm state fields only, in frame order, with the whole status, and still
// allocates nothing; the zero selection writes every field.
func TestFrameCarriesTheSubscribedStateFields(t *testing.T) {
	types := aliasTable(t)
	tests := []struct {
		name   string
		fields StateFields
		want   []string
	}{
		{"every field", 0, ArmStateFieldNames()},
		{"two, frame order", stateFieldsChosen | 1<<FieldCursorVelocity | 1<<FieldCursorPosition, []string{"cursor_position", "cursor_velocity"}},
		{"last only", stateFieldsChosen | 1<<FieldControlDomain, []string{"control_domain"}},
		{"control mode", stateFieldsChosen | 1<<FieldControlMode, []string{"control_mode"}},
		{"none", stateFieldsChosen, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := Frame{SessionID: 1, Arms: []ArmFrame{{DeviceID: "049D"}}, ArmState: tc.fields}
			f.Arms[0].Element = []byte(`{"device_id":"049D","state":{"stale":true},"status":{}}`) // never used under a selection
			if tc.fields == 0 {
				f.Arms[0].Element = nil
			}
			out := AppendFrame(nil, &f, types)
			var m struct {
				Arms []struct {
					State  map[string]json.RawMessage `json:"state"`
					Status map[string]bool            `json:"status"`
				} `json:"inverse3"` // the test table's arm key
			}
			if err := json.Unmarshal(out, &m); err != nil || len(m.Arms) != 1 {
				t.Fatalf("frame is not JSON with one arm (%v): %s", err, out)
			}
			arm := m.Arms[0]
			var got []string
			for _, name := range ArmStateFieldNames() {
				if _, ok := arm.State[name]; ok {
					got = append(got, name)
				}
			}
			if len(got) != len(arm.State) || !slices.Equal(got, tc.want) {
				t.Fatalf("state fields %v (%d members), want %v: %s", got, len(arm.State), tc.want, out)
			}
			if len(arm.Status) != 5 {
				t.Fatalf("status %v, want its five members", arm.Status)
			}
			buf := make([]byte, 0, 4096)
			if n := testing.AllocsPerRun(100, func() { buf = AppendFrame(buf[:0], &f, types) }); n != 0 {
				t.Fatalf("encoding allocates %.0f times", n)
			}
		})
	}
}

// TestSubscribedDeviceEscapedStrings: a subscribed device's type and id,
// escaped (a JSON encoder may write any character so), are read as sent. An
// escaped string lives in the decoder's scratch space, which the next one
// reused: the type was read as the id ("unknown device type \"049D\""), or,
// with the id first, the subscription went silently to a device "arm3".
func TestSubscribedDeviceEscapedStrings(t *testing.T) {
	for _, dev := range []string{
		`{"device_type":"\u0061rm3","device_id":"\u0030\u0034\u0039D"}`,
		`{"device_id":"\u0030\u0034\u0039D","device_type":"\u0061rm3"}`,
		`{"device_type":"\u0061rm3","x\u0079":1,"device_id":"049D"}`,
		`{"device_type":"arm3","device_id":"\u0030\u0034\u0039D"}`,
	} {
		var m ClientMessage
		msg := `{"session":{"configure":{"subscribe":{"devices":[` + dev + `]}}}}`
		if errs := DecodeClientMessage([]byte(msg), nil, &m); len(errs) > 0 {
			t.Errorf("%s: %v", dev, errs)
			continue
		}
		if s := m.Session.Subscribe; s == nil || len(s.Devices) != 1 || s.Devices[0] != (SubscribedDevice{Type: TypeArm, ID: "049D"}) {
			t.Errorf("%s: subscribed %+v, want arm3 049D", dev, s)
		}
	}
}
