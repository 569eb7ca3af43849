package protocol

import (
	"fmt"
	"testing"
)

// TestTransformScaleRange: a scale component (mount, set_transform) is a
// finite number whose magnitude lies in TransformScaleMin..TransformScaleMax;
// negative components mirror. A subnormal or huge scale would make the
// inverse map (application to device, for position commands) overflow to
// Inf, so it is refused with out_of_range over HTTP and WebSocket alike.
func TestTransformScaleRange(t *testing.T) {
	types := aliasTable(t)
	tests := []struct {
		scale string
		code  Code // "" when accepted
	}{
		{"1", ""},
		{"-1", ""},
		{"1e-6", ""},
		{"-1e-6", ""},
		{"1e6", ""},
		{"-1e6", ""},
		{"0.001", ""},
		{"1000", ""},
		{"0", CodeOutOfRange},
		{"-0", CodeOutOfRange},
		{"1e-320", CodeOutOfRange}, // subnormal: 1/s is +Inf
		{"-1e-320", CodeOutOfRange},
		{"9.9e-7", CodeOutOfRange},
		{"1.01e6", CodeOutOfRange},
		{"1e308", CodeOutOfRange},
		{"-1e308", CodeOutOfRange},
		{"1e400", CodeInvalidValue}, // overflows float64: not a finite number
		{`"NaN"`, CodeInvalidValue},
		{`"Infinity"`, CodeInvalidValue},
	}
	for _, tt := range tests {
		t.Run(tt.scale, func(t *testing.T) {
			scale := fmt.Sprintf(`{"x":1,"y":%s,"z":1}`, tt.scale)
			mount := fmt.Sprintf(`{"transform":{"scale":%s}}`, scale)
			_, err := DecodeEntry(KeyMount, []byte(mount), "")
			if got := codeOf(err); got != tt.code {
				t.Errorf("HTTP mount %s: %v, want %q", mount, err, tt.code)
			}
			if err != nil && tt.code != "" && err.Path != "transform.scale" && err.Path != "transform.scale.y" {
				t.Errorf("HTTP mount %s: path %q, want transform.scale(.y)", mount, err.Path)
			}
			var m ClientMessage
			for _, msg := range []string{
				`{"arm3":[{"device_id":"049D","configure":{"mount":` + mount + `}}]}`,
				`{"arm3":[{"device_id":"049D","commands":{"set_transform":{"scale":` + scale + `}}}]}`,
			} {
				errs := DecodeClientMessage([]byte(msg), types, &m)
				var got Code
				if len(errs) > 0 {
					got = errs[0].Code
				}
				if len(errs) > 1 || got != tt.code {
					t.Errorf("WebSocket %s: %v, want %q", msg, errs, tt.code)
				}
			}
		})
	}
}

func codeOf(err *Error) Code {
	if err == nil {
		return ""
	}
	return err.Code
}
