package hwtest

import (
	"errors"
	"fmt"
	"os"
	"testing"
	"time"
)

// pollEvery is how often Eventually and Main look again: short enough that a
// test waits little past the moment its condition holds, long enough not to
// take the cores from the goroutines it waits for.
const pollEvery = 2 * time.Millisecond

// Eventually waits for cond to hold: it calls cond at once and then every
// few milliseconds, on the caller's goroutine (so cond may call t.Fatal),
// and returns how long it took as soon as cond returns true. If within
// passes first it fails the test with t.Fatalf, naming what (say what is
// awaited: "the arm to halt") and the deadline, and returns within.
//
// within is a failure deadline, not a speed goal: the caller passes a
// generous one (seconds, not milliseconds), since a passing test never waits
// it out and a loaded machine may take long. Speed goals belong in
// benchmarks. Eventually has no fixed window: it cannot show that something
// does not happen, only that something does.
func Eventually(t testing.TB, within time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	took, err := poll(within, func() error {
		if cond() {
			return nil
		}
		return errNotYet
	})
	if err != nil {
		t.Fatalf("%s: not within %v", what, within)
	}
	return took
}

// EventuallyNil is Eventually for a check that says why it does not hold
// yet: it polls check until it returns nil, and on the deadline fails the
// test naming what and the last error check returned.
func EventuallyNil(t testing.TB, within time.Duration, what string, check func() error) time.Duration {
	t.Helper()
	took, err := poll(within, check)
	if err != nil {
		t.Fatalf("%s: not within %v: %v", what, within, err)
	}
	return took
}

var errNotYet = errors.New("hw/hwtest: condition does not hold yet")

// poll calls check until it returns nil or within passes, and returns how
// long that took and check's last error.
func poll(within time.Duration, check func() error) (time.Duration, error) {
	start := time.Now()
	for {
		err := check()
		took := time.Since(start)
		if err == nil || took > within {
			return took, err
		}
		time.Sleep(pollEvery)
	}
}

// GoroutinesEndWithin is how long Main lets goroutines run on after the
// tests: some end on their own shortly after (a closed listener's accept
// loop, a connection's reader after its close, protoactor's dead-letter
// throttle one interval after a dead letter).
const GoroutinesEndWithin = 10 * time.Second

// Main is a package's TestMain: it runs the tests and exits with their
// status, failing them when a goroutine outlives them. goroutinesLeft
// describes the goroutines still running other than the test runner's, or
// returns nil when there are none; pass go.uber.org/goleak's Find:
//
//	func TestMain(m *testing.M) { hwtest.Main(m, func() error { return goleak.Find() }) }
//
// (hwtest imports only the standard library, so hw stays free of test
// modules.) It is polled for up to GoroutinesEndWithin. A leaked goroutine
// is a bug to fix; ignore a goroutine only where it lives for the process
// by design, by that one function, saying why.
func Main(m *testing.M, goroutinesLeft func() error) {
	code := m.Run()
	if code == 0 {
		if _, err := poll(GoroutinesEndWithin, goroutinesLeft); err != nil {
			fmt.Fprintf(os.Stderr, "goroutines outlived the tests by %v: %v\n", GoroutinesEndWithin, err)
			code = 1
		}
	}
	os.Exit(code)
}
