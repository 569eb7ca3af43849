package protocol

import (
	"reflect"
	"testing"
)

// TestConfigureListsEveryError: a configure (or session.configure) with
// several bad keys is refused whole and lists each of them, so a client
// fixing its configuration sees every bad key at once rather than one per
// round trip.
func TestConfigureListsEveryError(t *testing.T) {
	types := aliasTable(t)
	tests := []struct {
		name   string
		msg    string
		errors []string // code@path, sorted
	}{
		{
			name: "two bad keys",
			msg:  `{"arm3":[{"device_id":"049D","configure":{"force_gate":{"gain":7},"basis":{"permutation":"XXY"}}}]}`,
			errors: []string{
				"invalid_permutation@arm3[0].configure.basis.permutation",
				"out_of_range@arm3[0].configure.force_gate.gain",
			},
		},
		{
			name: "a bad key beside a good one, and a bad filter",
			msg:  `{"arm3":[{"device_id":"049D","configure":{"preset":{"preset":"ceiling"},"damping":{"scalar":2},"filters":{"force_gate":{"gain":-1}}}}]}`,
			errors: []string{
				"out_of_range@arm3[0].configure.filters.force_gate.gain",
				"unknown_preset@arm3[0].configure.preset.preset",
			},
		},
		{
			name: "two bad filters",
			msg:  `{"arm3":[{"device_id":"049D","configure":{"filters":{"damping":{},"force_gate":{"gain":2}}}}]}`,
			errors: []string{
				"damping_empty@arm3[0].configure.filters.damping",
				"out_of_range@arm3[0].configure.filters.force_gate.gain",
			},
		},
		{
			name: "an HTTP-only key and a bad value",
			msg:  `{"arm3":[{"device_id":"049D","configure":{"handedness":"left","force_gate":{"gain":2}}}]}`,
			errors: []string{
				"http_only_key@arm3[0].configure.handedness",
				"out_of_range@arm3[0].configure.force_gate.gain",
			},
		},
		{
			name: "preset with mount beside a bad value",
			msg:  `{"arm3":[{"device_id":"049D","configure":{"preset":{"preset":"arm_front"},"mount":{"transform":{}},"damping":{"scalar":-1}}}]}`,
			errors: []string{
				"out_of_range@arm3[0].configure.damping.scalar",
				"preset_mount_conflict@arm3[0].configure",
			},
		},
		{
			name: "preset with a bad mount is still a conflict",
			msg:  `{"arm3":[{"device_id":"049D","configure":{"preset":{"preset":"arm_front"},"mount":{"transform":{"scale":{"x":0,"y":1,"z":1}}}}}]}`,
			errors: []string{
				"out_of_range@arm3[0].configure.mount.transform.scale",
				"preset_mount_conflict@arm3[0].configure",
			},
		},
		{
			name: "two bad session keys",
			msg:  `{"session":{"configure":{"lease":{"ms":5},"basis":{"permutation":"XYY"},"profile":{}}}}`,
			errors: []string{
				"invalid_permutation@session.configure.basis.permutation",
				"invalid_value@session.configure.profile.name",
				"out_of_range@session.configure.lease.ms",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var m ClientMessage
			errs := DecodeClientMessage([]byte(tt.msg), types, &m)
			if got := codesAt(errs); !reflect.DeepEqual(got, tt.errors) {
				t.Fatalf("errors %v, want %v", got, tt.errors)
			}
		})
	}
}
