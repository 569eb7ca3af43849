//go:build unix

package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"regexp"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// A stop that hangs still leaves the operator a way out: the first stop
// signal starts the clean stop, a second SIGQUIT during it dumps every
// goroutine and ends the process with 2 (Go's own SIGQUIT), and any other
// signal meanwhile neither stops the stop nor is lost silently. Before,
// the first signal was the only one read, and a wedged stop could be
// ended only by SIGKILL, with no dump.
func TestSecondSIGQUITDuringAStopDumpsAndExits(t *testing.T) {
	for _, c := range []struct {
		name     string
		signals  []os.Signal
		dumps    int
		exit     int // -1: none
		firstSig os.Signal
	}{
		{"one SIGTERM stops", []os.Signal{syscall.SIGTERM}, 0, -1, syscall.SIGTERM},
		{"one SIGQUIT dumps and stops", []os.Signal{syscall.SIGQUIT}, 1, -1, syscall.SIGQUIT},
		{"SIGTERM then SIGQUIT dumps and exits", []os.Signal{syscall.SIGTERM, syscall.SIGQUIT}, 1, 2, syscall.SIGTERM},
		{"SIGQUIT twice dumps twice and exits", []os.Signal{syscall.SIGQUIT, syscall.SIGQUIT}, 2, 2, syscall.SIGQUIT},
		{"a second SIGINT leaves the stop going", []os.Signal{syscall.SIGINT, syscall.SIGINT, syscall.SIGTERM}, 0, -1, syscall.SIGINT},
	} {
		t.Run(c.name, func(t *testing.T) {
			sig := make(chan os.Signal)
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			served := make(chan struct{})
			exited := make(chan int, 1)
			var dump, logs bytes.Buffer
			done := make(chan struct{})
			go func() {
				defer close(done)
				watchSignals(sig, cancel, served, signalActions{log: zerolog.New(&logs), dump: &dump, exit: func(code int) { exited <- code }})
			}()
			for _, s := range c.signals {
				sig <- s // unbuffered: taken by the watcher before the next
			}
			if c.exit < 0 {
				close(served) // the stop ended
			}
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("the watcher did not return")
			}
			var s stopSignal
			if !errors.As(context.Cause(ctx), &s) || s.sig != c.firstSig {
				t.Errorf("the stop's cause is %v, want the first signal %v", context.Cause(ctx), c.firstSig)
			}
			// Each dump lists the main goroutine (1) once, first or not.
			if n := len(mainGoroutine.FindAllString(dump.String(), -1)); n != c.dumps {
				t.Errorf("%d goroutine dumps, want %d", n, c.dumps)
			}
			select {
			case code := <-exited:
				if code != c.exit {
					t.Errorf("exited %d, want %d", code, c.exit)
				}
			default:
				if c.exit >= 0 {
					t.Errorf("did not exit, want exit %d", c.exit)
				}
			}
		})
	}
}

var mainGoroutine = regexp.MustCompile(`(?m)^goroutine 1 \[`)
