package bench

import (
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/gorilla/websocket"
)

// LeaseOptions configure `hapticbench lease`: how long a stalled client's
// force stays on. A controlling session commands a force at RateHz for Hold,
// then goes quiet with its connection open; an observer session pings as
// fast as the service answers and notes when the arm's
// current_cursor_force reaches zero. The release time runs from the
// controller's last message to that frame. The documented bound is the
// lease plus 20 ms (the loop's ramp ends within it).
type LeaseOptions struct {
	Hapticd string // binary; empty searches as FindHapticd does
	// Target is a running hapticd (ws://host:port/); empty starts one.
	Target  string
	Stalls  int           // default 100
	Hold    time.Duration // commanding before each stall; default 200 ms
	RateHz  float64       // controller's rate while holding; default 1000
	LoopHz  float64       // device loop of a started hapticd; default 1000
	LeaseMs int           // the session's lease (session.configure.lease); default 100
	// Timeout bounds one release; default 5 s.
	Timeout  time.Duration
	Progress io.Writer
}

// LeaseReport is every release measured.
type LeaseReport struct {
	Machine Machine `json:"machine"`
	LeaseMs int     `json:"lease_ms"`
	LoopHz  float64 `json:"loop_hz"`
	// BoundMs is the documented release bound: lease + 20 ms.
	BoundMs float64 `json:"bound_ms"`
	// ReleaseMs are the releases, in stall order.
	ReleaseMs []float64 `json:"release_ms"`
	P50Ms     float64   `json:"p50_ms"`
	P99Ms     float64   `json:"p99_ms"`
	MaxMs     float64   `json:"max_ms"`
	// OverBound counts releases later than BoundMs.
	OverBound int `json:"over_bound"`
	// ObserverRTTUs is the observer's median round trip: the resolution of
	// every release time.
	ObserverRTTUs float64 `json:"observer_rtt_us"`
	// LastCommandRTTMaxMs is the longest round trip of a stall's last
	// command. Releases count from that command's send, so a slow delivery
	// (a starved service) is part of them, never hidden.
	LastCommandRTTMaxMs float64 `json:"last_command_rtt_max_ms"`
}

// rampMs is how soon after a lapsed lease the force is documented to be at
// zero (actors/loop's ReleaseBoundNs).
const rampMs = 20

func (o *LeaseOptions) defaults() {
	if o.Stalls <= 0 {
		o.Stalls = 100
	}
	if o.Hold <= 0 {
		o.Hold = 200 * time.Millisecond
	}
	if o.RateHz <= 0 {
		o.RateHz = 1000
	}
	if o.LoopHz <= 0 {
		o.LoopHz = 1000
	}
	if o.LeaseMs <= 0 {
		o.LeaseMs = 100
	}
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Second
	}
}

// Lease runs `hapticbench lease`.
func Lease(ctx context.Context, o LeaseOptions) (LeaseReport, error) {
	o.defaults()
	rep := LeaseReport{Machine: ThisMachine(), LeaseMs: o.LeaseMs, LoopHz: o.LoopHz, BoundMs: float64(o.LeaseMs + rampMs)}
	wsURL := o.Target
	if wsURL == "" {
		binary, cleanup, err := FindHapticd(ctx, o.Hapticd)
		if err != nil {
			return rep, err
		}
		defer cleanup()
		svc, err := startService(ctx, ServiceOptions{Binary: binary, Arms: 1, LoopHz: o.LoopHz})
		if err != nil {
			return rep, err
		}
		defer svc.stop()
		wsURL = svc.wsURL
	} else if u, _, err := targetURLs(o.Target); err == nil {
		wsURL = u
	} else {
		return rep, err
	}
	ctl, err := dialClient(ctx, wsURL, 0, RoleController, o.RateHz, o.Timeout, subscribeTo{})
	if err != nil {
		return rep, err
	}
	defer ctl.close()
	obs, err := dialClient(ctx, wsURL, 0, RoleObserver, 0, o.Timeout, subscribeTo{})
	if err != nil {
		return rep, err
	}
	defer obs.close()
	if _, err := ctl.exchange(fmt.Appendf(nil, `{"session":{"configure":{"lease":{"ms":%d}}}}`, o.LeaseMs)); err != nil {
		return rep, fmt.Errorf("bench: lease: set the lease: %w", err)
	}
	push := fmt.Appendf(nil, `{"arm3":[{"device_id":%q,"commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":1}}}}]}`, ctl.deviceID)
	ping := []byte(`{}`)
	rtt := newRTTHistogram()
	period := time.Duration(float64(time.Second) / o.RateHz)
	for i := range o.Stalls {
		// Hold a force, then stall: the last message's send time is t0.
		var t0 time.Time
		var lastRTT time.Duration
		for end := time.Now().Add(o.Hold); time.Now().Before(end); {
			t0 = time.Now()
			frame, err := ctl.exchange(push)
			if err != nil {
				return rep, fmt.Errorf("bench: lease: stall %d: command: %w", i, err)
			}
			lastRTT = time.Since(t0)
			if why, refused := refusal(frame); refused {
				return rep, fmt.Errorf("bench: lease: stall %d: the command was refused: %s", i, why)
			}
			if !waitUntil(ctx, t0.Add(period)) {
				return rep, ctx.Err()
			}
		}
		rep.LastCommandRTTMaxMs = max(rep.LastCommandRTTMaxMs, float64(lastRTT.Microseconds())/1e3)
		held := false
		for {
			sent := time.Now()
			frame, err := obs.exchange(ping)
			if err != nil {
				return rep, fmt.Errorf("bench: lease: stall %d: observe: %w", i, err)
			}
			now := time.Now()
			rtt.Record(now.Sub(sent).Nanoseconds())
			f, err := armForce(frame, ctl.deviceID)
			if err != nil {
				return rep, fmt.Errorf("bench: lease: stall %d: %w", i, err)
			}
			if f != 0 {
				held = true
			}
			if f == 0 {
				if !held && now.Sub(t0) < time.Duration(o.LeaseMs)*time.Millisecond/2 {
					return rep, fmt.Errorf("bench: lease: stall %d: the arm showed no force while commanded", i)
				}
				// The frame was built between sent and now: count from
				// its midpoint, the observer's best estimate.
				at := sent.Add(now.Sub(sent) / 2)
				rep.ReleaseMs = append(rep.ReleaseMs, float64(at.Sub(t0).Microseconds())/1e3)
				break
			}
			if now.Sub(t0) > o.Timeout {
				return rep, fmt.Errorf("bench: lease: stall %d: force still %.3f N %s after the last command: the lease never lapsed", i, f, now.Sub(t0))
			}
		}
		if o.Progress != nil && (i+1)%10 == 0 {
			fmt.Fprintf(o.Progress, "lease: %d of %d stalls, last release %.1f ms\n", i+1, o.Stalls, rep.ReleaseMs[len(rep.ReleaseMs)-1])
		}
	}
	sorted := slices.Clone(rep.ReleaseMs)
	slices.Sort(sorted)
	at := func(q float64) float64 { return sorted[min(len(sorted)-1, int(math.Ceil(q*float64(len(sorted))))-1)] }
	rep.P50Ms, rep.P99Ms, rep.MaxMs = at(0.5), at(0.99), sorted[len(sorted)-1]
	for _, r := range rep.ReleaseMs {
		if r > rep.BoundMs {
			rep.OverBound++
		}
	}
	rep.ObserverRTTUs = summarize(rtt).P50Us
	return rep, ctx.Err()
}

// exchange sends one message and reads its frame (lock-step, untimed).
func (c *client) exchange(msg []byte) ([]byte, error) {
	if err := c.conn.SetWriteDeadline(time.Now().Add(c.timeout)); err != nil {
		return nil, err
	}
	if err := c.conn.WriteMessage(websocket.TextMessage, msg); err != nil {
		return nil, err
	}
	return c.readFrame()
}

// armForce reads the arm's current_cursor_force magnitude from a frame.
func armForce(frame []byte, id string) (float64, error) {
	s, err := readArmSample(frame, id)
	if err != nil {
		return 0, err
	}
	v := s.f
	return math.Sqrt(v[0]*v[0] + v[1]*v[1] + v[2]*v[2]), nil
}

// WriteTable writes the release figures.
func (r LeaseReport) WriteTable(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "hapticbench lease: %d stalls, lease %d ms, loop %g Hz; %s\n\n",
		len(r.ReleaseMs), r.LeaseMs, r.LoopHz, r.Machine)
	var t textTable
	t.add("figure", "ms")
	t.add("force at zero after the last command, p50", number(r.P50Ms))
	t.add("same, p99", number(r.P99Ms))
	t.add("same, max", number(r.MaxMs))
	t.add("documented bound (lease + 20 ms)", number(r.BoundMs))
	t.write(&b)
	fmt.Fprintf(&b, "releases over the bound: %d of %d (observer round trip p50 %s µs: the resolution; a stall's last command took up to %s ms to answer, counted in)\n",
		r.OverBound, len(r.ReleaseMs), number(r.ObserverRTTUs), number(r.LastCommandRTTMaxMs))
	_, err := io.WriteString(w, b.String())
	return err
}
