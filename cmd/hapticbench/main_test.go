package main

import (
	"context"
	"errors"
	"io"
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
		{[]string{"run", "--sweep", "arms=1,2"}, "only the number of clients"},
		{[]string{"run", "extra"}, "unexpected arguments"},
		{[]string{"arms", "--max", "x"}, "invalid value"},
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
