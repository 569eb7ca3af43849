package protocol

import "testing"

func TestQueryEnvelope(t *testing.T) {
	tests := []struct {
		query    string
		envelope bool
		refused  bool
	}{
		{"", false, false},
		{"format=json", true, false},
		{"format=json&session=x", true, false},
		{"format=", false, true},
		{"format=JSON", false, true},
		{"format=xml", false, true},
		{"format=json&format=json", false, true},
		// A query that cannot be decoded is refused, not read as if the
		// pair were absent (url.URL's Query drops it).
		{"format=json%", false, true},
		{"format=json&session=%zz", false, true},
		{"format=json;session=1", false, true},
	}
	for _, tt := range tests {
		envelope, perr := QueryEnvelope(tt.query)
		if envelope != tt.envelope || (perr != nil) != tt.refused {
			t.Errorf("%q: envelope %v, error %v; want envelope %v, refused %v", tt.query, envelope, perr, tt.envelope, tt.refused)
		}
		if perr != nil && perr.Code != CodeInvalidValue {
			t.Errorf("%q: code %s, want invalid_value", tt.query, perr.Code)
		}
	}
}
