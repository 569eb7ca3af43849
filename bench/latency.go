package bench

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/gorilla/websocket"

	"github.com/hapticd/hapticd/protocol"
)

// CommandLatency is the time from a client's send of a force command to the
// force frame the arm receives (`hapticbench device`): the delay term of a
// wall a client streams. The probe client sends coded forces
// (protocol.ForceCode) to the stand-in arm, stamping each send on
// CLOCK_MONOTONIC; the stand-in stamps each code's first frame on the same
// clock. A command the loop never sent on its own (a later one came before
// its tick: the latest command wins) is timed to the first frame of a later
// one, which is when its force was replaced at the motors.
type CommandLatency struct {
	DeviceID string  `json:"device_id"`
	RateHz   float64 `json:"rate_hz"` // the probe's send rate; 0 is lock-step as fast as possible
	// Sent counts the probe's commands in the measured window; OwnFrame of
	// them reached the arm in a frame of their own, Superseded only through
	// a later command, and Missing not at all (no later command arrived
	// either: only the last few of a run, or a loop that stopped).
	Sent       uint64 `json:"sent"`
	OwnFrame   uint64 `json:"own_frame"`
	Superseded uint64 `json:"superseded"`
	Missing    uint64 `json:"missing"`
	// Rejected counts frames at the arm that read as a command not sent
	// by then (or never): a force the loop blended from two commands (the
	// slew limit on a tick right after a late one) that reads as a third.
	// They are no arrival, and hide none after them.
	Rejected uint64 `json:"rejected"`
	// Latency is over every command that reached the arm, in µs.
	Latency Summary `json:"latency"`
	// LoopPeriodUs is the loop's target period, and BoundUs the bound the
	// latency's p99 is held to: one period (the wait for the next tick)
	// plus 250 µs.
	LoopPeriodUs float64 `json:"loop_period_us"`
	BoundUs      float64 `json:"bound_us"`
	// ProbeRTT is the probe's own round trip (send to frame).
	ProbeRTT Summary `json:"probe_rtt"`
}

// latencyBoundExtraUs is what the latency's p99 may exceed one loop period
// by.
const latencyBoundExtraUs = 250

// probeSends are the probe client's sends: sendNs[seq] is when the command
// carrying seq went out, on CLOCK_MONOTONIC; commands from seq measuredFrom
// on are in the measured window.
type probeSends struct {
	sendNs       []int64
	measuredFrom int
	rtt          Summary
}

// runProbe drives one session on the arm deviceID with coded forces at
// rateHz (0: as fast as lock-step allows) for warmup+duration, waiting for
// each command's frame before the next, as a lock-step engine does.
func runProbe(ctx context.Context, url, deviceID string, rateHz float64, warmup, duration time.Duration) (probeSends, error) {
	var p probeSends
	if _, err := MonotonicNs(); err != nil {
		return p, err
	}
	d := websocket.Dialer{HandshakeTimeout: 5 * time.Second}
	conn, resp, err := d.DialContext(ctx, url, nil)
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
	if err != nil {
		return p, fmt.Errorf("bench: latency probe: dial %s: %w", url, err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	read := func() ([]byte, error) {
		if err := conn.SetReadDeadline(time.Now().Add(5 * time.Second)); err != nil {
			return nil, err
		}
		_, b, err := conn.ReadMessage()
		return b, err
	}
	if _, err := read(); err != nil {
		return p, fmt.Errorf("bench: latency probe: read inventory: %w", err)
	}
	rtt := newRTTHistogram()
	var msg []byte
	base := time.Now()
	var periodNs int64
	if rateHz > 0 {
		periodNs = int64(1e9 / rateHz)
	}
	p.measuredFrom = -1
	var tick int64
	for seq := 0; seq < protocol.ForceCodeMax; seq++ {
		since := int64(time.Since(base))
		if since >= int64(warmup+duration) {
			break
		}
		if periodNs > 0 {
			// Absolute deadlines; late by more than a period skips ahead
			// to the next one, never a catch-up burst.
			if since > (tick+1)*periodNs {
				tick = since / periodNs
			}
			if wait := tick*periodNs - since; wait > 0 {
				if !waitUntil(ctx, time.Now().Add(time.Duration(wait))) {
					return p, ctx.Err()
				}
			}
			tick++
		}
		if p.measuredFrom < 0 && time.Since(base) >= warmup {
			p.measuredFrom = seq
		}
		f := protocol.ForceCode(uint32(seq))
		msg = append(msg[:0], `{"arm3":[{"device_id":`...)
		msg = protocol.AppendString(msg, deviceID)
		msg = append(msg, `,"commands":{"set_cursor_force":{"vector":{"x":`...)
		msg = strconv.AppendFloat(msg, f[0], 'g', -1, 64)
		msg = append(msg, `,"y":`...)
		msg = strconv.AppendFloat(msg, f[1], 'g', -1, 64)
		msg = append(msg, `,"z":`...)
		msg = strconv.AppendFloat(msg, f[2], 'g', -1, 64)
		msg = append(msg, `}}}}]}`...)
		sent, err := MonotonicNs()
		if err != nil {
			return p, err
		}
		if err := conn.WriteMessage(websocket.TextMessage, msg); err != nil {
			return p, fmt.Errorf("bench: latency probe: send: %w", err)
		}
		p.sendNs = append(p.sendNs, sent)
		frame, err := read()
		if err != nil {
			return p, fmt.Errorf("bench: latency probe: read the frame of command %d: %w", seq, err)
		}
		if back, err := MonotonicNs(); err == nil && p.measuredFrom >= 0 {
			rtt.Record(back - sent)
		}
		if why, refused := refusal(frame); refused {
			return p, fmt.Errorf("bench: latency probe: the service refused a force command on %s: %s", deviceID, why)
		}
	}
	if p.measuredFrom < 0 {
		p.measuredFrom = len(p.sendNs)
	}
	p.rtt = summarize(rtt)
	_ = conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
	return p, nil
}

// commandLatency times each measured send to the first frame that carried
// it or a later command. arrivals are the stand-in's changes of code in
// arrival order (protocol.ForceArrivalLog). A change to a code not sent by
// then is no arrival: it is counted as rejected and dropped before the
// rest are filtered to ascending sequence numbers (a repeat or a lower
// code is no new command), so that one misread frame neither times a
// command nor hides the true arrivals after it. Most frames rejected means
// the two ends did not read one clock: an error, never figures.
func commandLatency(p probeSends, arrivals []protocol.ForceArrival) (CommandLatency, error) {
	var c CommandLatency
	kept := make([]protocol.ForceArrival, 0, len(arrivals))
	newest := -1
	for _, a := range arrivals {
		seq := int(a.Seq)
		if seq >= len(p.sendNs) || a.MonoNs < p.sendNs[seq] {
			c.Rejected++
			continue
		}
		if seq > newest {
			newest = seq
			kept = append(kept, a)
		}
	}
	if c.Rejected > 0 && c.Rejected >= uint64(len(kept)) {
		return c, fmt.Errorf("bench: %d of %d frames at the arm carried a command before it was sent: the probe and the stand-in do not share a clock", c.Rejected, len(arrivals))
	}
	h := newRTTHistogram()
	for seq := p.measuredFrom; seq < len(p.sendNs); seq++ {
		c.Sent++
		i := sort.Search(len(kept), func(i int) bool { return int(kept[i].Seq) >= seq })
		if i == len(kept) {
			c.Missing++
			continue
		}
		a := kept[i]
		if int(a.Seq) == seq {
			c.OwnFrame++
		} else {
			c.Superseded++
		}
		// Never negative: kept[i] arrived after its own send, which is
		// after seq's.
		h.Record(a.MonoNs - p.sendNs[seq])
	}
	c.Latency = summarize(h)
	c.ProbeRTT = p.rtt
	return c, nil
}
