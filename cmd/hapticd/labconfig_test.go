//go:build linux

// Config sets through a gateway against the same sets sent straight to the
// device's node, while the machine is loaded and while a node restarts.

package main

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// setLoop posts handedness sets ("left", "right", in turn) to url one
// after another until stopped, and records each answer's status and
// latency (status 0: no answer).
type setLoop struct {
	stop chan struct{}
	done chan struct{}
	mu   sync.Mutex
	sets []setAnswer
}

type setAnswer struct {
	at     time.Time
	status int
	took   time.Duration
}

func startSetLoop(url string) *setLoop {
	l := &setLoop{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(l.done)
		for i := 0; ; i++ {
			select {
			case <-l.stop:
				return
			default:
			}
			v := []string{"left", "right"}[i%2]
			start := time.Now()
			st, _ := postJSON(url, `"`+v+`"`)
			l.mu.Lock()
			l.sets = append(l.sets, setAnswer{at: start, status: st, took: time.Since(start)})
			l.mu.Unlock()
		}
	}()
	return l
}

func (l *setLoop) end() []setAnswer {
	close(l.stop)
	<-l.done
	return l.sets
}

// setFigures sums up a loop's answers over d: acknowledged sets per
// second, their median and worst latency, and the other answers' count by
// status and worst latency.
type setFigures struct {
	acked       int
	perSecond   float64
	median, max time.Duration
	failed      map[int]int
	failedMax   time.Duration
}

func figuresOf(sets []setAnswer, d time.Duration) setFigures {
	f := setFigures{failed: map[int]int{}}
	var ok []time.Duration
	for _, s := range sets {
		if s.status == 200 {
			ok = append(ok, s.took)
			continue
		}
		f.failed[s.status]++
		f.failedMax = max(f.failedMax, s.took)
	}
	f.acked = len(ok)
	f.perSecond = float64(len(ok)) / d.Seconds()
	if len(ok) > 0 {
		slices.Sort(ok)
		f.median, f.max = ok[len(ok)/2], ok[len(ok)-1]
	}
	return f
}

func (f setFigures) String() string {
	return fmt.Sprintf("%d acked (%.1f/s), latency median %v max %v; not acked %v (slowest %v)",
		f.acked, f.perSecond, f.median.Round(100*time.Microsecond), f.max.Round(time.Millisecond), f.failed, f.failedMax.Round(time.Millisecond))
}

// storeWrites is m's count of durable writes to its state directory and
// their total time (GET /metrics); ok false when it could not be read.
func storeWrites(m *labMember) (n float64, total time.Duration, ok bool) {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(m.url("/metrics"))
	if err != nil {
		return 0, 0, false
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, 0, false
	}
	var sum float64
	var haveN, haveSum bool
	for _, line := range strings.Split(string(b), "\n") {
		name, value, found := strings.Cut(line, " ")
		if !found {
			continue
		}
		switch name {
		case "hapticd_store_write_seconds_count":
			_, err := fmt.Sscan(value, &n)
			haveN = err == nil
		case "hapticd_store_write_seconds_sum":
			_, err := fmt.Sscan(value, &sum)
			haveSum = err == nil
		}
	}
	return n, time.Duration(sum * float64(time.Second)), haveN && haveSum
}

// Config sets through the gateway, measured against the same loop sent
// straight to the device's node in the same run (both at once, on the same
// arm): on a quiet machine and with CPU hogs on every core.
//
//   - While the other node is SIGKILLed and restarted, sets to node b's arm
//     through the gateway keep their pace: their rate, as a share of the
//     direct loop's in the same window, is at least half the share in a
//     window without a fault (bounded without the hogs; logged with them). (The share is well below 1 without a fault:
//     the gateway writes its own copy durably after the node did, and the
//     set crosses two more processes.)
//   - A set in flight to a node that is then SIGKILLed is answered 503 once
//     the gateway dropped the node, not after the gateway's full 2 s: no
//     later than the arm's device-disconnected plus ten times the direct
//     loop's median latency and its slowest set (the machine's own pace);
//     the node's next process has the value the node had. The node is
//     stopped, every thread of it, before the set is sent: the SIGSTOP's
//     return alone left its threads running for 50 ms and more under the
//     hogs, and a set the node took and persisted meanwhile was answered
//     200 (rightly) 34 ms after it was sent.
func TestLabConfigSetsThroughTheGateway(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary, loads the machine and restarts nodes for about 60 s")
	}
	bin := buildBinary(t)
	for _, loaded := range []bool{false, true} {
		name := "quiet"
		if loaded {
			name = "loaded"
		}
		t.Run(name, func(t *testing.T) { testConfigSetsThroughTheGateway(t, bin, loaded) })
	}
}

func testConfigSetsThroughTheGateway(t *testing.T, bin string, loaded bool) {
	lab := newTestLab(t, bin, labHostA, labHostB, labHostGW)
	a, b, gw, armA, armB := lab.twoNodes(t)
	hdB := "/arm3/" + armB + "/config/handedness"
	if loaded {
		startCPUHogs(t, 4, 40*time.Second)
	}

	// window runs both loops on node b's arm while during runs (or for d
	// when it is nil) and returns their figures.
	window := func(what string, d time.Duration, during func()) (direct, through setFigures) {
		gwWrites, gwWriteTime, _ := storeWrites(gw)
		bWrites, bWriteTime, _ := storeWrites(b)
		dl, gl := startSetLoop(b.url(hdB)), startSetLoop(gw.url(hdB))
		ended := false
		defer func() {
			if !ended { // during failed the test
				dl.end()
				gl.end()
			}
		}()
		droppedB := eventCount(gw, "device-disconnected", armB)
		start := time.Now()
		if during != nil {
			during()
		}
		time.Sleep(time.Until(start.Add(d))) // the window's length is the scenario
		took := time.Since(start)
		dsets, gsets := dl.end(), gl.end()
		direct, through = figuresOf(dsets, took), figuresOf(gsets, took)
		ended = true
		if n := eventCount(gw, "device-disconnected", armB); n > droppedB {
			// A machine that stalls node b past the gateway's node timeout
			// (its direct sets say so) has its arm dropped meanwhile.
			t.Logf("%s: node b's arm left the gateway %d times (its sets answered 404 meanwhile)", what, n-droppedB)
		}
		t.Logf("%s (%v): direct to node b: %v", what, took.Round(time.Millisecond), direct)
		t.Logf("%s (%v): through the gateway: %v", what, took.Round(time.Millisecond), through)
		gwWrites2, gwWriteTime2, ok1 := storeWrites(gw)
		bWrites2, bWriteTime2, ok2 := storeWrites(b)
		if ok1 && ok2 && gwWrites2 > gwWrites && bWrites2 > bWrites {
			t.Logf("%s: durable writes: gateway %.0f (mean %v), node b %.0f (mean %v)", what,
				gwWrites2-gwWrites, ((gwWriteTime2 - gwWriteTime) / time.Duration(gwWrites2-gwWrites)).Round(100*time.Microsecond),
				bWrites2-bWrites, ((bWriteTime2 - bWriteTime) / time.Duration(bWrites2-bWrites)).Round(100*time.Microsecond))
		}
		if direct.acked == 0 || through.acked == 0 {
			t.Fatalf("%s: no set acknowledged (direct %d, through the gateway %d)", what, direct.acked, through.acked)
		}
		return direct, through
	}
	quietDirect, quietThrough := window("no fault", 5*time.Second, nil)
	share := quietThrough.perSecond / quietDirect.perSecond

	// The other node restarts: the window runs from its SIGKILL until its
	// arm is back on the gateway, and a second more.
	connected := eventCount(gw, "device-connected", armA)
	direct, through := window("node a SIGKILLed and restarted", 0, func() {
		if err := a.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = a.cmd.Wait()
		a = lab.node(labHostA)
		waitLab(t, 20*time.Second, "node a's arm back on the gateway", func() bool {
			ids, err := armIDs(gw)
			return err == nil && ids[armA] && eventCount(gw, "device-connected", armA) > connected
		})
		time.Sleep(time.Second) // a margin after the return, part of the window
	})
	restartShare := through.perSecond / direct.perSecond
	t.Logf("sets through the gateway as a share of the direct loop's: %.2f without a fault, %.2f while node a restarted", share, restartShare)
	// Under the hogs, with other suites beside them, the share swings with
	// the machine's stalls (0.16 to 0.36 against 0.34 to 0.51 without a
	// fault: one stall of a few seconds in a window of a few): logged only.
	if !loaded && restartShare < share/2 {
		t.Errorf("sets to node b's arm through the gateway slowed while node a restarted: %.2f of the direct loop's rate, against %.2f without a fault", restartShare, share)
	}

	// A set in flight when its node is SIGKILLed: the node is stopped first
	// (every thread of it: hang) so that the set is surely waiting for an
	// answer at the kill. It sets the other value than the node's, so that
	// it needs the node.
	hdA := "/arm3/" + armA + "/config/handedness"
	before, err := getData(a.url(hdA))
	if err != nil {
		t.Fatalf("read node a's handedness: %v", err)
	}
	set := map[string]string{"left": "right", "right": "left"}[before]
	disconnected := eventCount(gw, "device-disconnected", armA)
	hang(t, a)
	type answer struct {
		status int
		at     time.Time
	}
	answered := make(chan answer, 1)
	sent := time.Now()
	go func() {
		st, _ := postJSON(gw.url(hdA), `"`+set+`"`)
		answered <- answer{st, time.Now()}
	}()
	time.Sleep(50 * time.Millisecond) // the set on its way to the stopped node: the scenario
	if err := a.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = a.cmd.Wait()
	var left time.Time
	waitLab(t, 20*time.Second, "device-disconnected for the killed node's arm", func() bool {
		var n int
		n, left = eventsOf(gw, "device-disconnected", armA)
		return n > disconnected
	})
	var got answer
	select {
	case got = <-answered:
	case <-time.After(30 * time.Second):
		t.Fatal("the set in flight to the killed node was never answered")
	}
	slack := 10*quietDirect.median + quietDirect.max
	t.Logf("set in flight at the node's SIGKILL: answered %d %v after it was sent, %v after the arm left the gateway (allowed %v)",
		got.status, got.at.Sub(sent).Round(time.Millisecond), got.at.Sub(left).Round(time.Millisecond), slack.Round(time.Millisecond))
	if got.status != http.StatusServiceUnavailable {
		t.Errorf("a set in flight to a node SIGKILLed answered %d, want 503", got.status)
	}
	if late := got.at.Sub(left); late > slack {
		t.Errorf("a set in flight to a node SIGKILLed was answered %v after the gateway dropped the node (%v after it was sent), want within %v (ten times the direct loop's median set and its slowest)", late, got.at.Sub(sent), slack)
	}
	// The stopped node never took the set up: its next process has the
	// value it had.
	a = lab.node(labHostA)
	var after string
	waitLab(t, 20*time.Second, "the restarted node a's handedness", func() bool {
		after, err = getData(a.url(hdA))
		return err == nil && after != "" // "": an error answer, its arm not loaded yet
	})
	if after != before {
		t.Errorf("a set of %q in flight to a stopped node SIGKILLed, answered %d: the node's next process has %q, want the %q it had", set, got.status, after, before)
	}
}
