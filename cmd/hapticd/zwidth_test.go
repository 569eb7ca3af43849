package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/hapticd/hapticd/actors/loop/zwidth"
)

func TestZwidthPrintsTheReport(t *testing.T) {
	var out bytes.Buffer
	if err := zwidthVirtual([]string{"--paths", "AB", "--hand", "off", "--client-hz", "60", "--effect-hz", "1000"}, &out); err != nil {
		t.Fatal(err)
	}
	var rep zwidth.Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("output is not a zwidth.Report: %v\n%s", err, out.String())
	}
	if len(rep.Results) != 2 || rep.Results[0].Path != zwidth.PathClient || rep.Results[1].Path != zwidth.PathEffect {
		t.Fatalf("rows %+v, want A 60 Hz then B 1 kHz", rep.Results)
	}
	if a, b := rep.Results[0].LimitNpm, rep.Results[1].LimitNpm; a <= 0 || b < 20*a {
		t.Errorf("limits A %v, B %v N/m: want B ≥ 20·A", a, b)
	}
	if rep.DampingNspm != 1 || rep.EncoderStepM == 0 || !strings.Contains(rep.Renderers, "actors/loop/effect") {
		t.Errorf("report figures: b %v, encoder %v, renderers %q", rep.DampingNspm, rep.EncoderStepM, rep.Renderers)
	}
}

func TestZwidthRejectsBadFlags(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--hand", "maybe"}, "--hand"},
		{[]string{"--paths", "AD"}, "--paths"},
		{[]string{"--client-hz", "60,fast"}, "--client-hz"},
		{[]string{"--delay-frames", "9"}, "--delay-frames"},
		{[]string{"--push", "0"}, "push"},
		{[]string{"--client-hz", "5000"}, "wall rate"},
		{[]string{"stray"}, "unexpected"},
	}
	for _, tc := range tests {
		var out bytes.Buffer
		err := zwidthVirtual(tc.args, &out)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want one naming %q", tc.args, err, tc.want)
		}
		if out.Len() != 0 {
			t.Errorf("%v: printed %q on an error", tc.args, out.String())
		}
	}
}
