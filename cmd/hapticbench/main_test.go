package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDispatchRejectsBadCommandLines(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{nil, "usage"},
		{[]string{"fly"}, `unknown command "fly"`},
		{[]string{"run", "--plot", "x.svg"}, "--plot draws a sweep"},
		{[]string{"run", "--sweep", "threads=1,2"}, "want clients=N,N,... or arms=N,N,..."},
		{[]string{"run", "extra"}, "unexpected arguments"},
		{[]string{"arms", "--max", "x"}, "invalid value"},
		{[]string{"arms", "extra"}, "arms: unexpected arguments"},
		{[]string{"arms", "--repeats", "2"}, "--repeats 2: want an odd count"},
		{[]string{"arms", "--pairs", "-1"}, "--pairs -1"},
		{[]string{"arms", "--near", "0.5"}, "--near 0.5"},
		{[]string{"echo-serve", "--inventory", "a"}, "needs --inventory and --state"},
		{[]string{"echo-serve", "--nope"}, "flag provided but not defined"},
		// Zero or less, given: it ran the default silently (tourbench).
		{[]string{"run", "--pairs", "0"}, "--pairs 0: must be more than 0"},
		{[]string{"run", "--duration", "0s"}, "--duration 0s: must be more than 0"},
		{[]string{"device", "--loop-hz", "0"}, "--loop-hz 0: must be more than 0"},
		{[]string{"lease", "--stalls", "-3"}, "--stalls -3: must be more than 0"},
	}
	for _, tt := range tests {
		err := dispatch(context.Background(), tt.args, io.Discard, io.Discard)
		var usage usageError
		if !errors.As(err, &usage) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("dispatch(%q) = %v, want a usage error containing %q", tt.args, err, tt.want)
		}
	}
}

func TestDispatchHelp(t *testing.T) {
	var out strings.Builder
	if err := dispatch(context.Background(), []string{"help"}, &out, io.Discard); err != nil || !strings.Contains(out.String(), "hapticbench arms") {
		t.Errorf("help: %v, %q", err, out.String())
	}
}

// help CMD prints CMD's flags, as CMD -h does (it printed the general usage).
func TestDispatchHelpOfACommand(t *testing.T) {
	var stderr strings.Builder
	if err := dispatch(context.Background(), []string{"help", "device"}, io.Discard, &stderr); err != nil || !strings.Contains(stderr.String(), "Usage of hapticbench device") {
		t.Errorf("help device: %v, %q; want device's flags", err, stderr.String())
	}
}

func TestDispatchFlagHelpExitsZero(t *testing.T) {
	for _, cmd := range []string{"run", "arms", "echo-serve"} {
		var stderr strings.Builder
		if err := dispatch(context.Background(), []string{cmd, "-h"}, io.Discard, &stderr); err != nil {
			t.Errorf("%s -h = %v, want nil (exit 0)", cmd, err)
		}
		if !strings.Contains(stderr.String(), "Usage of hapticbench "+cmd) {
			t.Errorf("%s -h printed %q, want its flags", cmd, stderr.String())
		}
	}
}

type tableReport struct {
	Figure int `json:"figure"`
}

func (r tableReport) WriteTable(w io.Writer) error {
	_, err := fmt.Fprintf(w, "figure  %d\n", r.Figure)
	return err
}

func TestEmitJSONToStdoutKeepsItParseable(t *testing.T) {
	var stdout, stderr strings.Builder
	if err := emit(tableReport{42}, "-", &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	var got tableReport
	if err := json.Unmarshal([]byte(stdout.String()), &got); err != nil || got.Figure != 42 {
		t.Errorf("stdout with --json - is not the report's JSON (%v): %q", err, stdout.String())
	}
	if !strings.Contains(stderr.String(), "figure  42") {
		t.Errorf("the table did not go to stderr: %q", stderr.String())
	}
}

func TestEmitJSONToFile(t *testing.T) {
	var stdout, stderr strings.Builder
	path := filepath.Join(t.TempDir(), "r.json")
	if err := emit(tableReport{7}, path, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	var got tableReport
	if err != nil || json.Unmarshal(raw, &got) != nil || got.Figure != 7 {
		t.Errorf("%s holds %q (%v), want the report's JSON", path, raw, err)
	}
	if stdout.String() != "figure  7\n" || stderr.Len() != 0 {
		t.Errorf("table on stdout %q, stderr %q; want the table on stdout only", stdout.String(), stderr.String())
	}
}
