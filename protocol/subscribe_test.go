package protocol

import (
	"reflect"
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
			if got == nil || got.All != tc.want.All || len(got.Devices) != len(tc.want.Devices) ||
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
