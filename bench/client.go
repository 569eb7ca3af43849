package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"

	"time"

	"github.com/gorilla/websocket"

	"github.com/hapticd/hapticd/protocol"
	"github.com/hapticd/hapticd/protocol/histogram"
)

// Messages a client sends. They are JSON written by hand so that bench does
// not depend on the service's encoder; each client builds its own once.
const (
	controlMessageFormat = `{"arm3":[{"device_id":%q,"commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":0.5}}}}]}`
	probeMessageFormat   = `{"arm3":[{"device_id":%q,"commands":{"probe_position":{}}}]}`
	// fullStateMessage is the only message whose frame carries "config";
	// the end-of-run alignment check relies on that.
	fullStateMessage = `{"session":{"force_render_full_state":{}}}`
	// pingMessage gets a plain frame and renews no lease.
	pingMessage = `{}`
)

var (
	keySessionID = []byte(`"session_id"`)
	keyErrors    = []byte(`"errors"`)
	keyConfig    = []byte(`"config"`)
)

// Role says what a client does each tick.
type Role string

const (
	// RoleController commands its own arm with set_cursor_force.
	RoleController Role = "controller"
	// RoleObserver only probes an arm's position.
	RoleObserver Role = "observer"
)

// ClientResult is what one client measured in the measured window (warm-up
// excluded), plus the problems it saw over the whole run.
type ClientResult struct {
	Index     int    `json:"index"`
	Role      Role   `json:"role"`
	DeviceID  string `json:"device_id"`
	SessionID int64  `json:"session_id"`
	// TargetHz is the requested tick rate; 0 means as fast as possible.
	TargetHz   float64 `json:"target_hz"`
	AchievedHz float64 `json:"achieved_hz"`
	Counts
	// Errors lists what stopped or disturbed the client (dial, I/O, checks).
	Errors     []string `json:"errors,omitempty"`
	FrameBytes int      `json:"frame_bytes"`
	RTT        Summary  `json:"rtt"`

	rtt *histogram.Histogram
}

// Counts are the message and frame tallies of one client, or summed over
// every client of a phase. Embedded untagged, its fields stay top-level
// keys of the JSON report.
type Counts struct {
	Sent     uint64 `json:"sent"`
	Received uint64 `json:"received"`
	// MissedDeadlines counts paced ticks skipped because the previous round
	// trip ended after their deadline.
	MissedDeadlines uint64 `json:"missed_deadlines"`
	// Lost counts messages whose frame never came within the frame timeout.
	Lost uint64 `json:"lost"`
	// OutOfOrder counts frames where the contract says none can be: another
	// session's id, a "config" frame not asked for, or a stream found
	// shifted by the end-of-run alignment check.
	OutOfOrder uint64 `json:"out_of_order"`
	// ErrorFrames counts frames that carried an "errors" array, except
	// those BusyFrames counts.
	ErrorFrames uint64 `json:"error_frames"`
	// BusyFrames counts frames whose error was device_busy: another
	// session controls the arm, as the README says, which happens
	// when there are more controlling clients than arms.
	BusyFrames uint64 `json:"busy_frames"`
}

// add sums o into c.
func (c *Counts) add(o Counts) {
	c.Sent += o.Sent
	c.Received += o.Received
	c.MissedDeadlines += o.MissedDeadlines
	c.Lost += o.Lost
	c.OutOfOrder += o.OutOfOrder
	c.ErrorFrames += o.ErrorFrames
	c.BusyFrames += o.BusyFrames
}

// schedule is the shared timeline of one load run, as offsets from base on
// the monotonic clock.
type schedule struct {
	base         time.Time
	measureStart time.Duration // end of the warm-up
	measureEnd   time.Duration
	// release closes once the service's figures for the window are read;
	// sessions stay open until then so the service counts them all.
	release <-chan struct{}
}

// capturedFrames holds copies of a real service's frames for the echo
// baseline.
type capturedFrames struct {
	inventory []byte
	state     []byte
}

// client is one lock-step WebSocket session.
type client struct {
	index     int
	role      Role
	rateHz    float64
	timeout   time.Duration
	phaseNs   int64 // offset of this client's deadlines within a period
	conn      *websocket.Conn
	sessionID int64
	deviceID  string
	message   []byte
	buf       []byte
	capture   *capturedFrames // non-nil on the client that captures
	inventory []byte          // copy kept until the capture is taken
	result    ClientResult
}

// dialClient opens a session and reads the inventory. The client commands
// (or probes) arm index mod the number of arms in the inventory.
// subscribeTo is what a client subscribes to (session.configure.subscribe):
// its own arm only, and the arm state fields it names (none: every field).
// The zero value subscribes to nothing: the service's default frames.
type subscribeTo struct {
	ownArm bool
	state  []string
}

// message is the subscription's message for the client's arm id, or nil.
func (s subscribeTo) message(id string) []byte {
	if !s.ownArm && len(s.state) == 0 {
		return nil
	}
	b := []byte(`{"session":{"configure":{"subscribe":{`)
	if s.ownArm {
		b = fmt.Appendf(b, `"devices":[{"device_type":"arm3","device_id":%q}]`, id)
	}
	if len(s.state) > 0 {
		if s.ownArm {
			b = append(b, ',')
		}
		b = append(b, `"state":[`...)
		for i, f := range s.state {
			if i > 0 {
				b = append(b, ',')
			}
			b = protocol.AppendString(b, f) // JSON's quoting, not Go's
		}
		b = append(b, ']')
	}
	return append(b, "}}}}"...)
}

func dialClient(ctx context.Context, url string, index int, role Role, rateHz float64, timeout time.Duration, subscribe subscribeTo) (*client, error) {
	d := websocket.Dialer{HandshakeTimeout: timeout, ReadBufferSize: 16 << 10, WriteBufferSize: 4 << 10}
	conn, resp, err := d.DialContext(ctx, url, nil)
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
	if err != nil {
		return nil, fmt.Errorf("bench: dial %s: %w; is hapticd listening there?", url, err)
	}
	c := &client{index: index, role: role, rateHz: rateHz, timeout: timeout, conn: conn, buf: make([]byte, 0, 16<<10)}
	c.result = ClientResult{Index: index, Role: role, TargetHz: rateHz, rtt: newRTTHistogram()}
	frame, err := c.readFrame()
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("bench: client %d: read inventory: %w", index, err)
	}
	inv, err := parseInventory(frame)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("bench: client %d: %w", index, err)
	}
	if len(inv.Arm3) == 0 {
		conn.Close()
		return nil, errors.New("bench: the inventory lists no arm3 devices; start hapticd with --sim-arms N (N ≥ 1)")
	}
	c.sessionID = inv.SessionID
	c.deviceID = inv.Arm3[index%len(inv.Arm3)].DeviceID
	c.inventory = append([]byte(nil), frame...)
	format := controlMessageFormat
	if role == RoleObserver {
		format = probeMessageFormat
	}
	c.message = fmt.Appendf(nil, format, c.deviceID)
	if msg := subscribe.message(c.deviceID); msg != nil {
		// Frames sized to what this client reads: its own arm only, or
		// the state fields named. The answer to the subscription is not a
		// measured tick.
		if err := c.conn.WriteMessage(websocket.TextMessage, msg); err != nil {
			conn.Close()
			return nil, fmt.Errorf("bench: client %d: subscribe: %w", index, err)
		}
		answer, err := c.readFrame()
		if err != nil {
			conn.Close()
			return nil, fmt.Errorf("bench: client %d: read the subscription's frame: %w", index, err)
		}
		// A refused subscription leaves the default frames: measuring
		// those under the subscription's name would mislead.
		if why, refused := refusal(answer); refused {
			conn.Close()
			return nil, fmt.Errorf("bench: client %d: the service refused the subscription %s: %s", index, msg, why)
		}
	}
	c.result.SessionID = c.sessionID
	c.result.DeviceID = c.deviceID
	return c, nil
}

// readFrame reads one whole message into c.buf, reusing its memory.
func (c *client) readFrame() ([]byte, error) {
	if err := c.conn.SetReadDeadline(time.Now().Add(c.timeout)); err != nil {
		return nil, err
	}
	_, r, err := c.conn.NextReader()
	if err != nil {
		return nil, err
	}
	b, err := readAll(c.buf[:0], r)
	if err != nil {
		return nil, err
	}
	c.buf = b
	return b, nil
}

// readAll appends the rest of one message to buf, growing it only when the
// message does not fit, and returns it. Unlike io.ReadAll it keeps the
// caller's memory, so a client reading frames of a steady size allocates
// nothing per frame.
func readAll(buf []byte, r io.Reader) ([]byte, error) {
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if errors.Is(err, io.EOF) {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// run drives the lock-step loop until the end of the schedule or ctx, then
// checks the stream's alignment and closes the session.
func (c *client) run(ctx context.Context, s schedule) {
	defer c.close()
	stop := context.AfterFunc(ctx, func() { c.conn.Close() })
	defer stop()
	defer func() {
		select {
		case <-s.release:
		case <-ctx.Done():
		}
	}()

	var periodNs int64
	var timer *time.Timer
	if c.rateHz > 0 {
		periodNs = int64(1e9 / c.rateHz)
		timer = time.NewTimer(time.Hour)
		defer timer.Stop()
	}
	endNs, startNs := int64(s.measureEnd), int64(s.measureStart)
	var tick int64
	var bytesSum uint64
	for {
		nowNs := int64(time.Since(s.base))
		if periodNs > 0 {
			deadline := c.phaseNs + tick*periodNs
			if nowNs > deadline+periodNs {
				// Late by more than a period: skip ahead to the next
				// deadline still in the future, never a catch-up burst.
				skip := (nowNs - deadline) / periodNs
				if deadline >= startNs {
					c.result.MissedDeadlines += uint64(skip)
				}
				tick += skip
				deadline = c.phaseNs + tick*periodNs
			}
			if deadline >= endNs {
				break
			}
			if wait := deadline - nowNs; wait > 0 {
				timer.Reset(time.Duration(wait))
				select {
				case <-timer.C:
				case <-ctx.Done():
					return
				}
			}
			tick++
		} else if nowNs >= endNs {
			break
		}
		sendNs := int64(time.Since(s.base))
		if sendNs >= endNs {
			break
		}
		measured := sendNs >= startNs
		if err := c.conn.WriteMessage(websocket.TextMessage, c.message); err != nil {
			c.fail("send", err)
			return
		}
		if measured {
			c.result.Sent++
		}
		frame, err := c.readFrame()
		if err != nil {
			c.result.Lost++ // counted over the whole run, like every contract problem
			c.fail("read frame", err)
			return
		}
		rttNs := int64(time.Since(s.base)) - sendNs
		c.check(frame, false)
		if c.capture != nil && (c.capture.state == nil || !measured && len(frame) < len(c.capture.state)) {
			// Keep the shortest warm-up frame: the echo baseline pads it
			// up to hapticd's mean frame size (JSON allows trailing
			// spaces) and could not shorten a longer one.
			c.capture.inventory = c.inventory
			c.capture.state = append(c.capture.state[:0], frame...)
		}
		if measured {
			c.result.Received++
			bytesSum += uint64(len(frame))
			c.result.rtt.Record(rttNs)
		}
	}
	if c.result.Received > 0 {
		c.result.FrameBytes = int(bytesSum / c.result.Received)
	}
	c.checkAlignment()
}

// check applies the per-frame contract checks.
func (c *client) check(frame []byte, wantConfig bool) {
	if id, ok := sessionIDOf(frame); !ok || id != c.sessionID {
		c.result.OutOfOrder++
		c.note(fmt.Sprintf("frame with session_id %d (found %v), want %d", id, ok, c.sessionID))
	}
	if bytes.Contains(frame, keyErrors) {
		if onlyDeviceBusy(frame) {
			c.result.BusyFrames++
		} else {
			c.result.ErrorFrames++
			c.note("frame carries errors: " + clip(frame, 300))
		}
	}
	if bytes.Contains(frame, keyConfig) != wantConfig {
		c.result.OutOfOrder++
		c.note(fmt.Sprintf("frame has config=%v where the message asked for config=%v: the stream is shifted", !wantConfig, wantConfig))
	}
}

// checkAlignment sends a full-state request and a ping; only the first
// answer may carry config. A frame lost or added anywhere before shifts
// these answers.
func (c *client) checkAlignment() {
	for _, m := range []struct {
		msg        string
		wantConfig bool
	}{{fullStateMessage, true}, {pingMessage, false}} {
		if err := c.conn.WriteMessage(websocket.TextMessage, []byte(m.msg)); err != nil {
			c.fail("send alignment check", err)
			return
		}
		frame, err := c.readFrame()
		if err != nil {
			c.result.Lost++
			c.fail("read alignment check", err)
			return
		}
		c.check(frame, m.wantConfig)
	}
}

func (c *client) fail(what string, err error) {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		c.note(fmt.Sprintf("%s: no frame within %s (lost)", what, c.timeout))
		return
	}
	c.note(fmt.Sprintf("%s: %v", what, err))
}

// note keeps the first few problems; a flood of one repeated error would
// only hide the others.
func (c *client) note(s string) {
	const keep = 5
	if len(c.result.Errors) < keep {
		c.result.Errors = append(c.result.Errors, s)
	}
}

func (c *client) close() {
	_ = c.conn.WriteControl(websocket.CloseMessage,
		websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
	_ = c.conn.Close()
}

// finish fills the derived fields once the loop has stopped.
func (c *client) finish(measured time.Duration) ClientResult {
	r := c.result
	if measured > 0 {
		r.AchievedHz = float64(r.Received) / measured.Seconds()
	}
	r.RTT = summarize(r.rtt)
	return r
}

// onlyDeviceBusy reports whether every error in the frame is device_busy.
// It decodes the frame, which allocates, but only frames with errors get
// here.
func onlyDeviceBusy(frame []byte) bool {
	var f struct {
		Errors []struct {
			Code string `json:"code"`
		} `json:"errors"`
	}
	if json.Unmarshal(frame, &f) != nil || len(f.Errors) == 0 {
		return false
	}
	for _, e := range f.Errors {
		if e.Code != "device_busy" {
			return false
		}
	}
	return true
}

// sessionIDOf reads the top-level session_id of a frame without decoding
// the rest.
func sessionIDOf(frame []byte) (int64, bool) {
	i := bytes.Index(frame, keySessionID)
	if i < 0 {
		return 0, false
	}
	rest := bytes.TrimLeft(frame[i+len(keySessionID):], " \t\r\n")
	if len(rest) == 0 || rest[0] != ':' {
		return 0, false
	}
	rest = bytes.TrimLeft(rest[1:], " \t\r\n")
	// Parsed by hand: strconv on string(rest) would allocate per frame.
	var id int64
	n := 0
	for ; n < len(rest) && n < 18 && rest[n] >= '0' && rest[n] <= '9'; n++ {
		id = id*10 + int64(rest[n]-'0')
	}
	return id, n > 0
}

// refusal is why the service refused a message: its frame's errors member,
// clipped, and whether there is one. It is quoted from the member on: the
// member follows every device's state, past any clip of the frame's start.
func refusal(frame []byte) (string, bool) {
	i := bytes.Index(frame, keyErrors)
	if i < 0 {
		return "", false
	}
	return clip(frame[i:], 300), true
}

func clip(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	return string(b[:n]) + "…"
}

// armSample is an arm's cursor position and force as one frame gave them,
// and when it arrived.
type armSample struct {
	at  time.Time
	pos [3]float64
	f   [3]float64
}

// readArmSample reads arm id's cursor_position and current_cursor_force
// from a frame. Arms are under inverse3 (hapticd's default names) or arm3
// (--type-names reference), as in parseInventory.
func readArmSample(frame []byte, id string) (armSample, error) {
	type arm struct {
		DeviceID string `json:"device_id"`
		State    struct {
			Pos   struct{ X, Y, Z float64 } `json:"cursor_position"`
			Force struct{ X, Y, Z float64 } `json:"current_cursor_force"`
		} `json:"state"`
	}
	var f struct {
		Inverse3 []arm `json:"inverse3"`
		Arm3     []arm `json:"arm3"`
	}
	if err := json.Unmarshal(frame, &f); err != nil {
		return armSample{}, fmt.Errorf("frame is not JSON: %w", err)
	}
	for _, a := range append(f.Arm3, f.Inverse3...) {
		if a.DeviceID == id {
			p, v := a.State.Pos, a.State.Force
			return armSample{at: time.Now(), pos: [3]float64{p.X, p.Y, p.Z}, f: [3]float64{v.X, v.Y, v.Z}}, nil
		}
	}
	return armSample{}, fmt.Errorf("the frame lists no arm %s: %s", id, clip(frame, 200))
}
