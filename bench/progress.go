package bench

import (
	"fmt"
	"sync"
	"time"
)

// liveEvery is how often the live progress line is rewritten.
const liveEvery = 250 * time.Millisecond

// live keeps one line of o.Progress rewritten in place with the phase and
// its elapsed time of total, until the returned stop is called, which
// clears the line. It does nothing unless o.Live is set (a terminal: a
// file or pipe must not fill with carriage returns).
func (o *RunOptions) live(phase string, total time.Duration) (stop func()) {
	if !o.Live || o.Progress == nil {
		return func() {}
	}
	start := time.Now()
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(liveEvery)
		defer t.Stop()
		for {
			fmt.Fprintf(o.Progress, "\r\033[K%s: %.1f s of %.1f s", phase, time.Since(start).Seconds(), total.Seconds())
			select {
			case <-done:
				fmt.Fprint(o.Progress, "\r\033[K")
				return
			case <-t.C:
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}
