package recording

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hapticd/hapticd/protocol/event"
	"github.com/hapticd/hapticd/protocol/mcap"
)

// FrameConn is one session with a running service, as Drive uses it: a
// WebSocket connection to its simulation channel.
type FrameConn interface {
	// Send writes one client message.
	Send(msg []byte) error
	// Receive reads the next frame, waiting at most timeout.
	Receive(timeout time.Duration) ([]byte, error)
	Close() error
}

// Tolerance is how far a number in a frame may be from its recorded value:
// Abs (Force for forces, Angle for angles) plus Rel times the value.
type Tolerance struct {
	Abs, Force, Angle, Rel float64
	// Ignore names frame keys not compared.
	Ignore []string
}

// Drive re-sends each recorded session's client messages to a running
// service, one at a time as the client did (a frame answers each), all
// sessions at once on the recorded timeline, and compares every frame with the recorded one or
// the closest recorded frame within Window of it or next to it (the
// service's ticks do not fall where they fell when recording).
type Drive struct {
	// Dial opens one session with the service.
	Dial func() (FrameConn, error)
	// DialLegacy opens one session with the service's 3.0 WebSocket, for
	// the sessions recorded in the 3.0 format (their messages mean nothing
	// on the 3.x socket). Nil: such a session is an error that says so.
	DialLegacy func() (FrameConn, error)
	Tolerance  Tolerance
	Window     time.Duration
	// Report receives a summary per session and its first differences.
	Report io.Writer
}

// frameTimeout bounds the wait for the frame that answers a message.
const frameTimeout = 5 * time.Second

// shownDiffs is how many differences the report lists per session.
const shownDiffs = 20

// Run drives every recorded session and returns the number of differences
// beyond tolerance. The sessions run at once, on one timeline: each is
// dialled when the recording shows it connected, sends its messages when
// it sent them and closes when it closed, so sessions recorded together
// share the service as they did (the arm one holds is busy for another)
// and sessions recorded one after the other keep the gap between them.
// Dial may be called from several goroutines at once.
func (d Drive) Run(f *mcap.File) (int, error) {
	in, frames := MessagesOf(f, KindClient), MessagesOf(f, KindFrame)
	sessions := make([]string, 0, len(frames))
	for k := range frames {
		sessions = append(sessions, k)
	}
	sort.Slice(sessions, func(i, j int) bool {
		a, _ := strconv.Atoi(sessions[i])
		b, _ := strconv.Atoi(sessions[j])
		return a < b
	})
	if len(sessions) == 0 {
		return 0, errors.New("recording: the recording holds no session")
	}
	ends, fileEnd := sessionEnds(f)
	marked, lost := markedSessions(f, InventoryMarked), markedSessions(f, InventoryLost)
	fileStart := uint64(math.MaxUint64)
	for _, m := range f.Messages {
		fileStart = min(fileStart, m.LogTime)
	}
	progress := make([]sessionProgress, len(sessions))
	closeAt := make([]uint64, len(sessions))
	var t0 uint64
	var checks []*frameCheck
	for i, s := range sessions {
		check, err := newFrameCheck(frames[s], d.Tolerance, d.Window)
		if err != nil {
			return 0, fmt.Errorf("recording: session %s: %w", s, err)
		}
		switch {
		case lost[s]:
			// Not "recorded mid-way": it connected while recording, and
			// starting the recording first would not have helped.
			err = fmt.Errorf("%w: the recorder's queue dropped its inventory (the frame its opening sent), though it connected while recording", ErrRecordingHasGaps)
		case !recordedFromItsStart(in[s], frames[s], check.decoded[0], marked[s]):
			return 0, fmt.Errorf("recording: session %s: %w", s, ErrSessionRecordedMidway)
		default:
			err = pairedUp(in[s], frames[s], fileStart)
		}
		if err != nil {
			if n := droppedByRecorder(f); n > 0 {
				err = fmt.Errorf("%w (the recorder counted %d messages dropped)", err, n)
			}
			return 0, fmt.Errorf("recording: session %s: %w", s, err)
		}
		if legacyInventory(check.decoded[0]) && d.DialLegacy == nil {
			return 0, fmt.Errorf("recording: session %s: %w", s, ErrLegacySession)
		}
		end, ok := ends[s]
		last := frames[s][len(frames[s])-1].LogTime
		if l := len(in[s]); l > 0 {
			last = max(last, in[s][l-1].LogTime)
		}
		if !ok || end < last {
			end = max(fileEnd, last) // still open when the recording stopped
		}
		progress[i] = sessionProgress{frames: frames[s], in: in[s]}
		closeAt[i] = end
		if i == 0 || frames[s][0].LogTime < t0 {
			t0 = frames[s][0].LogTime
		}
		checks = append(checks, check)
	}
	tl := newTimeline(progress, closeAt)
	tl.t0, tl.checks = t0, checks
	tl.start = time.Now()
	type outcome struct {
		diffs  []string
		sent   int
		behind time.Duration
		err    error
	}
	out := make([]outcome, len(sessions))
	var wg sync.WaitGroup
	for i := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o := &out[i]
			o.diffs, o.sent, o.behind, o.err = d.session(tl, i, in[sessions[i]])
		}()
	}
	wg.Wait()
	total := 0
	for i, s := range sessions {
		if out[i].err != nil {
			return total, fmt.Errorf("recording: session %s: %w", s, out[i].err)
		}
		d.report(s, out[i].sent, out[i].behind, out[i].diffs)
		total += len(out[i].diffs)
	}
	return total, nil
}

// ErrSessionRecordedMidway is Drive's answer to a session whose recording
// started after it connected (POST /recordings while the client ran): what
// it declared before (effects, navigation, lease, view) is not in the file,
// so its re-driven frames would show another scene than the recorded ones.
var ErrSessionRecordedMidway = errors.New("the session was connected before the recording started, so what it declared before (effects, navigation, lease, view) is not in the file and it cannot be re-driven; start the recording before the client connects (POST /recordings first, or hapticd --record)")

// recordedFromItsStart says whether a session's recording holds its
// inventory: its first frame came before its first client message and is
// the inventory. What a frame holds cannot tell: a frame answering
// force_render_full_state carries the session view and every device's
// config as the inventory does, and a 3.0 state frame keys devices by id as
// its inventory does. So in a file whose recorder marks the inventory
// (marked) only the mark tells; in an older file, the 3.x session view is
// the best there is (and a 3.0 session is taken as recorded from its start).
func recordedFromItsStart(in, frames []mcap.Message, first any, marked bool) bool {
	if len(in) > 0 && in[0].LogTime < frames[0].LogTime {
		return false
	}
	if marked {
		var rec Message
		return json.Unmarshal(frames[0].Data, &rec) == nil && rec.Inventory
	}
	if legacyInventory(first) {
		return true
	}
	m, _ := first.(map[string]any)
	_, ok := m["session"]
	return ok
}

// markedSessions are the sessions whose frames channel has the metadata
// mark ("true"): InventoryMarked, written by a recorder that marks the
// inventory, or InventoryLost.
func markedSessions(f *mcap.File, mark string) map[string]bool {
	out := map[string]bool{}
	for _, c := range f.Channels {
		if c.Metadata["kind"] == KindFrame && c.Metadata[mark] == "true" {
			out[c.Metadata["key"]] = true
		}
	}
	return out
}

// ErrRecordingHasGaps is Drive's answer to a session whose recording lost
// a client message or a frame (the recorder's bounded queue dropped it, or
// a chunk was lost): every frame but the inventory answers one client
// message, so without the pairs Drive would wait for a frame no message it
// re-sends brings, or compare each frame with another's recording.
var ErrRecordingHasGaps = errors.New("the recording lost some of the session's client messages or frames, so its frames cannot be told which message they answer and it cannot be re-driven")

// pairedUp checks that each of a session's frames after the inventory
// answers a recorded client message (frame k needs k messages recorded by
// its time) and that every message has its frame but the last one (the
// recording, or the session, ended before its answer). start is the
// recording's first log time, for the times in the error.
func pairedUp(in, frames []mcap.Message, start uint64) error {
	at := func(m mcap.Message) time.Duration { return time.Duration(m.LogTime - start).Round(time.Microsecond) }
	j := 0
	for k := 1; k < len(frames); k++ {
		for j < len(in) && in[j].LogTime <= frames[k].LogTime {
			j++
		}
		if j < k {
			return fmt.Errorf("%w: its frame %d, %v into the recording, answers no recorded client message (%d recorded before it)", ErrRecordingHasGaps, k, at(frames[k]), j)
		}
	}
	unanswered := len(in) - (len(frames) - 1)
	if unanswered == 0 || unanswered == 1 && in[len(in)-1].LogTime >= frames[len(frames)-1].LogTime {
		return nil
	}
	// Lock-step, message k+1 comes after frame k: the first that comes
	// before it follows a message whose frame was lost.
	for k := 1; k < len(frames) && k < len(in); k++ {
		if in[k].LogTime < frames[k].LogTime {
			return fmt.Errorf("%w: its client message %d, %v into the recording, has no recorded frame", ErrRecordingHasGaps, k, at(in[k-1]))
		}
	}
	return fmt.Errorf("%w: %d of its %d client messages have no recorded frame", ErrRecordingHasGaps, unanswered, len(in))
}

// droppedByRecorder is how many session, config and event messages the
// recorder said it dropped (its last /recorder counts), 0 when unknown.
func droppedByRecorder(f *mcap.File) uint64 {
	type counts struct {
		Dropped       uint64 `json:"dropped"`
		DroppedStates uint64 `json:"dropped_states"`
	}
	var last counts
	var lastAt uint64
	for _, m := range f.Messages {
		var c counts
		if f.Channels[m.ChannelID].Metadata["kind"] != KindStats || m.LogTime < lastAt || json.Unmarshal(m.Data, &c) != nil {
			continue
		}
		last, lastAt = c, m.LogTime
	}
	if last.Dropped < last.DroppedStates {
		return 0
	}
	return last.Dropped - last.DroppedStates
}

// sessionEnds returns when each recorded session ended (its session-ended
// event, by session id) and the time of the recording's last message.
func sessionEnds(f *mcap.File) (map[string]uint64, uint64) {
	ends := map[string]uint64{}
	var last uint64
	for _, m := range f.Messages {
		last = max(last, m.LogTime)
		if f.Channels[m.ChannelID].Metadata["kind"] != KindEvent {
			continue
		}
		var e struct {
			Name string `json:"name"`
			Data struct {
				SessionID *uint64 `json:"session_id"`
			} `json:"data"`
		}
		if json.Unmarshal(m.Data, &e) != nil || e.Name != event.NameSessionEnded || e.Data.SessionID == nil {
			continue
		}
		ends[strconv.FormatUint(*e.Data.SessionID, 10)] = m.LogTime
	}
	return ends, last
}

// timeline is the recorded timeline the sessions are re-driven on, and how
// far each has got on it.
type timeline struct {
	// Set before the sessions start, only read after.
	t0      uint64 // the recorded time of the first connection
	start   time.Time
	checks  []*frameCheck
	closeAt []uint64 // the recorded time each session closed
	// mu guards the following.
	mu       sync.Mutex
	progress []sessionProgress
	// reached is, for each session, the latest recorded time by which it
	// has done all it had done when recording (reachedBy); lowest and
	// second are the two lowest of them, lowestSession the session that
	// reached lowest: whether a session may act is then known without a
	// pass over the others.
	reached        []uint64
	lowest, second uint64
	lowestSession  int
	// waitingFor is the recorded time each session waits to act at, and
	// waiting whether it waits; wake[i] ends session i's wait.
	waitingFor []uint64
	waiting    []bool
	wake       []chan struct{}
}

type sessionProgress struct {
	frames []mcap.Message // as recorded
	in     []mcap.Message // its client messages, as recorded
	read   int            // frames read so far
	sent   bool           // every message it will send is sent and answered
	closed bool
	// closedAt is when the replay closed it (zero: not yet, or it ended
	// on an error).
	closedAt time.Time
}

// newTimeline is the timeline of sessions (their recorded frames and
// client messages, nothing read yet) that closed at closeAt.
func newTimeline(progress []sessionProgress, closeAt []uint64) *timeline {
	n := len(progress)
	tl := &timeline{progress: progress, closeAt: closeAt, reached: make([]uint64, n),
		waitingFor: make([]uint64, n), waiting: make([]bool, n), wake: make([]chan struct{}, n)}
	for i := range progress {
		tl.wake[i] = make(chan struct{}, 1)
		tl.reached[i] = tl.reachedBy(i)
	}
	tl.rankLocked()
	return tl
}

// waitUntil sleeps until the recorded time at, shifted later by shift, and
// returns how late that is.
func (tl *timeline) waitUntil(at uint64, shift time.Duration) time.Duration {
	wait := time.Duration(at-tl.t0) + shift - time.Since(tl.start)
	if wait > 0 {
		time.Sleep(wait)
	}
	return -wait
}

// after waits, for session i about to act at recorded time at, until every
// other session has done what it had done before at when recording: read
// the frames recorded before it and closed if it had closed. A loaded
// machine may wake the sessions in another order than the timeline's;
// without this, a session refused device_busy when recording could reach
// the arm first in the replay. Every wait points back in recorded time, so
// no two sessions wait on each other: a session is waited for only to
// read the frames its messages sent before at bring (the inventory and
// one per message), never a recorded frame no earlier message of its own
// brings (a recording that lost the message, which Run refuses anyway).
//
// A session that may not act yet is woken only once it may (update), not
// at every other session's frame: with a hundred sessions, waking each to
// look again at each other on every frame fell behind the recorded
// timeline.
func (tl *timeline) after(i int, at uint64) {
	tl.mu.Lock()
	if tl.mayActLocked(i, at) {
		tl.mu.Unlock()
		return
	}
	tl.waitingFor[i], tl.waiting[i] = at, true
	tl.mu.Unlock()
	<-tl.wake[i]
}

// reachedBy is the latest recorded time by which session j has done all
// it had done when recording (math.MaxUint64: all it will do): another
// session may act at a time up to it. Once j has sent all it sends, that is
// its close time. Before, with r frames read, it has read every frame
// recorded up to its next unread one's time, and every frame its messages
// recorded up to its r-th one's time bring (the inventory and one a
// message): after waits for no frame that no message of j's own brings.
func (tl *timeline) reachedBy(j int) uint64 {
	p := &tl.progress[j]
	if p.closed {
		return math.MaxUint64
	}
	if p.sent {
		return tl.closeAt[j]
	}
	reached := uint64(math.MaxUint64)
	if p.read < len(p.frames) && (p.read == 0 || p.read-1 < len(p.in)) {
		reached = p.frames[p.read].LogTime
		if p.read >= 1 {
			reached = max(reached, p.in[p.read-1].LogTime)
		}
	}
	return min(reached, tl.closeAt[j])
}

// mayActLocked says whether session i may act at recorded time at: every
// other session has reached it.
func (tl *timeline) mayActLocked(i int, at uint64) bool {
	if i == tl.lowestSession {
		return at <= tl.second
	}
	return at <= tl.lowest
}

// keepGaps waits, for session i about to connect at recorded time at,
// until as long has passed since each session that had closed before at
// as had passed when recording (after has waited for them to close). A
// session that fell behind the recorded timeline closes late: the next
// one, dialled at its recorded time, would reach the arm while the first
// one's force still ramps out, and its frames would differ. It returns how
// much later than at's place on the timeline that is: the session's shift,
// which its later steps keep, so that they stay as far apart as recorded
// rather than catch up back to back.
func (tl *timeline) keepGaps(i int, at uint64) (shift time.Duration) {
	tl.mu.Lock()
	var until time.Time
	for j := range tl.progress {
		p := &tl.progress[j]
		if j == i || p.closedAt.IsZero() || tl.closeAt[j] > at {
			continue
		}
		if u := p.closedAt.Add(time.Duration(at - tl.closeAt[j])); u.After(until) {
			until = u
		}
	}
	tl.mu.Unlock()
	time.Sleep(time.Until(until))
	return max(0, until.Sub(tl.start.Add(time.Duration(at-tl.t0))))
}

// rankLocked finds the two lowest times the sessions reached.
func (tl *timeline) rankLocked() {
	tl.lowest, tl.second, tl.lowestSession = math.MaxUint64, math.MaxUint64, -1
	for j, r := range tl.reached {
		switch {
		case r < tl.lowest:
			tl.lowest, tl.second, tl.lowestSession = r, tl.lowest, j
		case r < tl.second:
			tl.second = r
		}
	}
}

// update changes session i's progress and wakes the sessions that may now
// act, and no other.
func (tl *timeline) update(i int, change func(p *sessionProgress)) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	change(&tl.progress[i])
	tl.reached[i] = tl.reachedBy(i)
	tl.rankLocked()
	for k, w := range tl.waiting {
		if w && tl.mayActLocked(k, tl.waitingFor[k]) {
			tl.waiting[k] = false
			tl.wake[k] <- struct{}{} // never blocks: one wake a wait
		}
	}
}

// session re-drives session i on tl: it dials at the recorded connect
// time, re-sends its messages at their recorded times, closes at its
// recorded close time and compares its frames; sent counts the messages
// re-sent and behind is how far the replay fell behind the recorded
// timeline at worst.
//
// The frames are compared once the session is over, not between messages:
// comparing takes time (tens of microseconds a frame, more on a loaded
// machine), and done between messages it would delay the next one behind
// the recorded timeline; the state the service integrates over time then
// runs ahead of the recorded frames the next ones are compared with, which
// makes more frames miss and the replay fall further behind.
func (d Drive) session(tl *timeline, i int, in []mcap.Message) (diffs []string, sent int, behind time.Duration, err error) {
	// However it ends, the others no longer wait on it.
	defer tl.update(i, func(p *sessionProgress) { p.sent, p.closed = true, true })
	check := tl.checks[i]
	frames := check.recorded
	dial := d.Dial
	if legacyInventory(check.decoded[0]) {
		dial = d.DialLegacy // Run checked it is there
	}
	tl.after(i, frames[0].LogTime)
	shift := tl.keepGaps(i, frames[0].LogTime)
	behind = max(0, tl.waitUntil(frames[0].LogTime, shift))
	conn, err := dial()
	if err != nil {
		return nil, 0, behind, fmt.Errorf("dial: %w", err)
	}
	defer conn.Close()
	got := make([][]byte, 0, len(frames))
	read := func() error {
		b, err := conn.Receive(frameTimeout)
		if err != nil {
			return fmt.Errorf("read frame %d: %w", len(got), err)
		}
		got = append(got, b)
		tl.update(i, func(p *sessionProgress) { p.read = len(got) })
		return nil
	}
	if err := read(); err != nil { // the inventory
		return nil, 0, behind, err
	}
	for _, m := range in {
		if len(got) >= len(frames) {
			break // a recording cut before this message's frame: nothing to compare it with
		}
		msg, err := clientMessage(m)
		if err != nil {
			return nil, sent, behind, err
		}
		// On the recorded timeline: as many ticks pass between two
		// messages as did when recording.
		tl.after(i, m.LogTime)
		behind = max(behind, tl.waitUntil(m.LogTime, shift))
		if err := conn.Send(msg); err != nil {
			return nil, sent, behind, fmt.Errorf("send: %w", err)
		}
		sent++
		if err := read(); err != nil {
			return nil, sent, behind, err
		}
	}
	tl.update(i, func(p *sessionProgress) { p.sent = true })
	// Held open as long as it was, and until the others have done what
	// they did before it closed: its arm stays its own until then.
	tl.after(i, tl.closeAt[i])
	tl.waitUntil(tl.closeAt[i], shift)
	_ = conn.Close()
	closedAt := time.Now()
	tl.update(i, func(p *sessionProgress) { p.closed, p.closedAt = true, closedAt })
	for _, b := range got {
		check.next(b)
	}
	return check.diffs, sent, behind, nil
}

// ErrLegacySession is Drive's answer to a session recorded on the 3.0
// WebSocket when it has no DialLegacy.
var ErrLegacySession = errors.New("recording: the session was recorded on the 3.0 WebSocket; re-driving it needs the service's 3.0 WebSocket (hapticd replay --drive-legacy ws://HOST:10000/)")

// legacyInventory says whether a recorded inventory is in the 3.0 format:
// its device collections are objects keyed by id, where every 3.x
// collection is an array (always present, possibly empty).
func legacyInventory(inv any) bool {
	m, _ := inv.(map[string]any)
	for k, v := range m {
		if _, ok := v.(map[string]any); ok && k != "session" {
			return true
		}
	}
	return false
}

// report prints one session's outcome.
func (d Drive) report(session string, sent int, behind time.Duration, diffs []string) {
	if d.Report == nil {
		return
	}
	tol := d.Tolerance
	fmt.Fprintf(d.Report, "session %s: %d client messages re-sent (at worst %v behind the recorded timeline), %d frames compared, %d differences beyond tolerance (%g, forces %g N, angles %g deg, + %g×value)\n",
		session, sent, behind.Round(time.Millisecond), sent+1, len(diffs), tol.Abs, tol.Force, tol.Angle, tol.Rel)
	for i, diff := range diffs {
		if i == shownDiffs {
			fmt.Fprintf(d.Report, "  ... and %d more\n", len(diffs)-shownDiffs)
			break
		}
		fmt.Fprintf(d.Report, "  %s\n", diff)
	}
}

// clientMessage is a recorded client message as the client sent it.
func clientMessage(m mcap.Message) ([]byte, error) {
	var rec Message
	if err := json.Unmarshal(m.Data, &rec); err != nil {
		return nil, fmt.Errorf("recorded client message: %w", err)
	}
	var str string
	if json.Unmarshal(rec.Message, &str) == nil {
		return []byte(str), nil // recorded as a string: it was not JSON
	}
	return rec.Message, nil
}

// frameCheck compares one session's frames, in order, with its recorded
// frames.
type frameCheck struct {
	recorded []mcap.Message
	decoded  []any // recorded[i]'s message
	// inventoryState is the inventory as a later frame would carry it.
	inventoryState any
	tol            Tolerance
	window         uint64 // ns
	n              int    // the next frame's index
	diffs          []string
}

func newFrameCheck(frames []mcap.Message, tol Tolerance, window time.Duration) (*frameCheck, error) {
	if len(frames) == 0 {
		return nil, errors.New("no recorded frame")
	}
	c := &frameCheck{recorded: frames, decoded: make([]any, len(frames)), tol: tol, window: uint64(window)}
	for i, m := range frames {
		var rec Message
		if err := json.Unmarshal(m.Data, &rec); err != nil {
			return nil, fmt.Errorf("recorded frame %d: %w", i, err)
		}
		_ = json.Unmarshal(rec.Message, &c.decoded[i])
	}
	// Later frames may match the inventory's state too (a command that
	// lands a tick later than recorded): without the parts only the
	// inventory carries.
	c.inventoryState = stripInventory(c.decoded[0])
	return c, nil
}

// next compares the next frame, got.
func (c *frameCheck) next(got []byte) {
	n := c.n
	c.n++
	var g any
	if err := json.Unmarshal(got, &g); err != nil {
		c.diffs = append(c.diffs, fmt.Sprintf("frame %d is not JSON: %s", n, got))
		return
	}
	if n == 0 { // the inventory answers the connection, not a tick
		compareJSON("inventory", c.decoded[0], g, c.tol, &c.diffs)
		return
	}
	c.diffs = append(c.diffs, c.closest(n, g)...)
}

// closest compares frame n with the recorded frames within the window of
// it, and the one before and after it however far apart, and returns the
// differences from the closest (none when one matches). The neighbours
// always count: a frame answering a message may catch the service a tick
// before or after the recorded one did (showing what the frame before or
// after showed), and a stall while recording can set them further apart
// than the window. Failing a whole match, each value may be the one the
// frame itself or a neighbour showed (compareMixed).
func (c *frameCheck) closest(n int, g any) []string {
	at := fmt.Sprintf("frame %d", n)
	var best []string
	consider := func(i int) bool {
		want := c.decoded[i]
		if i == 0 {
			want = c.inventoryState
		}
		var d []string
		compareJSON(at, want, g, c.tol, &d)
		if best == nil || len(d) < len(best) {
			best = d
		}
		return len(best) == 0
	}
	fr := c.recorded
	for i := n; i >= 0 && (i >= n-1 || fr[n].LogTime-fr[i].LogTime <= c.window); i-- {
		if consider(i) {
			return nil
		}
	}
	for i := n + 1; i < len(fr) && (i == n+1 || fr[i].LogTime-fr[n].LogTime <= c.window); i++ {
		if consider(i) {
			return nil
		}
	}
	// A frame caught at a tick where two of its values change (a force
	// ramp ends: the control mode flips to idle there, while the force is
	// within tolerance of zero on either side), or where another session's
	// command to its own arm lands a tick apart from the recording's (two
	// sessions replayed together), may show one value as one frame of the
	// window did and another as another: each value is then matched
	// against the frames the whole-frame match considered, not the whole
	// frame.
	wants := []any{c.decoded[n]}
	add := func(i int) {
		if i == 0 {
			wants = append(wants, c.inventoryState)
		} else if i != n {
			wants = append(wants, c.decoded[i])
		}
	}
	for i := n - 1; i >= 0 && (i >= n-1 || fr[n].LogTime-fr[i].LogTime <= c.window); i-- {
		add(i)
	}
	for i := n + 1; i < len(fr) && (i == n+1 || fr[i].LogTime-fr[n].LogTime <= c.window); i++ {
		add(i)
	}
	var mixed []string
	compareMixed(at, wants, g, c.tol, &mixed)
	if len(mixed) < len(best) {
		return mixed
	}
	return best
}

// compareMixed appends where got differs from every one of wants, value
// by value: a leaf matches when it matches one of them (compareJSON's
// rules), an object's key none of them has, or that all of them have and
// got lacks, is a difference. Differences are reported against wants[0].
func compareMixed(at string, wants []any, got any, tol Tolerance, diffs *[]string) {
	switch g := got.(type) {
	case map[string]any:
		var objs []map[string]any
		for _, w := range wants {
			if m, ok := w.(map[string]any); ok {
				objs = append(objs, m)
			}
		}
		if len(objs) == 0 {
			compareJSON(at, wants[0], got, tol, diffs)
			return
		}
		for k, gv := range g {
			var sub []any
			for _, m := range objs {
				if v, ok := m[k]; ok {
					sub = append(sub, v)
				}
			}
			switch {
			case k == "session_id" || slices.Contains(tol.Ignore, k):
			case len(sub) == 0:
				*diffs = append(*diffs, notRecorded(at, k))
			default:
				compareMixed(at+"."+k, sub, gv, tol, diffs)
			}
		}
		for k := range objs[0] {
			if _, ok := g[k]; ok || k == "session_id" || slices.Contains(tol.Ignore, k) {
				continue
			}
			if !slices.ContainsFunc(objs, func(m map[string]any) bool { _, has := m[k]; return !has }) {
				*diffs = append(*diffs, fmt.Sprintf("%s.%s: missing", at, k))
			}
		}
	case []any:
		var arrs [][]any
		for _, w := range wants {
			if a, ok := w.([]any); ok && len(a) == len(g) {
				arrs = append(arrs, a)
			}
		}
		if len(arrs) == 0 {
			compareJSON(at, wants[0], got, tol, diffs)
			return
		}
		sub := make([]any, len(arrs))
		for i := range g {
			for j, a := range arrs {
				sub[j] = a[i]
			}
			compareMixed(at+"["+strconv.Itoa(i)+"]", sub, g[i], tol, diffs)
		}
	default:
		for _, w := range wants {
			var d []string
			if compareJSON(at, w, got, tol, &d); len(d) == 0 {
				return
			}
		}
		if betweenNumbers(wants, got) {
			return
		}
		compareJSON(at, wants[0], got, tol, diffs)
	}
}

// betweenNumbers reports whether got is a number within the range the
// numbers in wants span: a value that changes from one recorded frame to
// the next (a force on its ramp) may be caught anywhere on its way when
// the replayed ticks fall elsewhere than the recorded ones.
func betweenNumbers(wants []any, got any) bool {
	g, ok := got.(float64)
	if !ok || len(wants) < 2 {
		return false
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, w := range wants {
		v, ok := w.(float64)
		if !ok {
			return false
		}
		lo, hi = min(lo, v), max(hi, v)
	}
	return lo <= g && g <= hi
}

// stripInventory returns the inventory frame as a later frame would
// carry it: no session view, no device config.
func stripInventory(inv any) any {
	m, ok := inv.(map[string]any)
	if !ok {
		return inv
	}
	out := map[string]any{}
	for k, v := range m {
		if k == "session" {
			continue
		}
		switch devs := v.(type) {
		case []any:
			v = withoutConfig(devs)
		case map[string]any: // 3.0: keyed by id
			byID := map[string]any{}
			for id, dev := range devs {
				byID[id] = withoutConfig([]any{dev})[0]
			}
			v = byID
		}
		out[k] = v
	}
	return out
}

// withoutConfig copies devs without each device's config.
func withoutConfig(devs []any) []any {
	var out []any
	for _, d := range devs {
		dm, ok := d.(map[string]any)
		if !ok {
			out = append(out, d)
			continue
		}
		c := map[string]any{}
		for k, v := range dm {
			if k != "config" {
				c[k] = v
			}
		}
		out = append(out, c)
	}
	return out
}

// notRecorded is the difference of a member the service sent that the
// recorded frame did not have: often a field a later build added, which
// --ignore leaves out (it was reported whatever --ignore said). The hint
// names no key: in a 3.0 frame the key is a device's id, and leaving a
// device out would hide what the re-drive is for.
func notRecorded(at, k string) string {
	return fmt.Sprintf("%s.%s: not in the recording (a field added since it was made: --ignore NAME leaves a field out)", at, k)
}

// compareJSON appends where got differs from want: a missing or extra
// key, another string or bool, a number off by more than tol. session_id
// differs by nature and is not compared.
func compareJSON(at string, want, got any, tol Tolerance, diffs *[]string) {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			*diffs = append(*diffs, fmt.Sprintf("%s: recorded an object, got %v", at, got))
			return
		}
		for k, wv := range w {
			if k == "session_id" || slices.Contains(tol.Ignore, k) {
				continue
			}
			gv, ok := g[k]
			if !ok {
				*diffs = append(*diffs, fmt.Sprintf("%s.%s: missing", at, k))
				continue
			}
			compareJSON(at+"."+k, wv, gv, tol, diffs)
		}
		for k := range g {
			if _, ok := w[k]; !ok && k != "session_id" && !slices.Contains(tol.Ignore, k) {
				*diffs = append(*diffs, notRecorded(at, k))
			}
		}
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			*diffs = append(*diffs, fmt.Sprintf("%s: recorded %d elements, got %v", at, len(w), got))
			return
		}
		for i := range w {
			compareJSON(at+"["+strconv.Itoa(i)+"]", w[i], g[i], tol, diffs)
		}
	case float64:
		g, ok := got.(float64)
		if !ok || math.Abs(g-w) > tol.absFor(at)+tol.Rel*math.Abs(w) {
			*diffs = append(*diffs, fmt.Sprintf("%s: recorded %v, got %v", at, w, got))
		}
	case string:
		g, ok := got.(string)
		if !ok || (w != g && !(strings.HasSuffix(at, ".message") && proseMatches(w, g, tol))) {
			*diffs = append(*diffs, fmt.Sprintf("%s: recorded %v, got %v", at, want, got))
		}
	default:
		if fmt.Sprint(want) != fmt.Sprint(got) {
			*diffs = append(*diffs, fmt.Sprintf("%s: recorded %v, got %v", at, want, got))
		}
	}
}

// proseNumber is a number standing as a word in an error's or warning's
// message ("lapsed 1014 ms before"), not a digit inside a name ("arm3"),
// with the unit of time that makes it a measurement, if any.
var proseNumber = regexp.MustCompile(`\b(\d+(?:\.\d+)?)( ?(?:ms|µs|ns|s)\b)?`)

// proseMatches reports whether two messages say the same, a measured time
// within tolerance: a message quotes what the service measured (how long
// ago a lease lapsed), which a replay measures again a millisecond off.
// Any other number (a session, a count) must match exactly.
func proseMatches(want, got string, tol Tolerance) bool {
	if proseNumber.ReplaceAllString(want, "#$2") != proseNumber.ReplaceAllString(got, "#$2") {
		return false
	}
	wn, gn := proseNumber.FindAllStringSubmatch(want, -1), proseNumber.FindAllStringSubmatch(got, -1)
	for i := range wn {
		if wn[i][2] == "" {
			if wn[i][1] != gn[i][1] {
				return false
			}
			continue
		}
		w, _ := strconv.ParseFloat(wn[i][1], 64)
		g, _ := strconv.ParseFloat(gn[i][1], 64)
		if math.Abs(g-w) > tol.Abs+tol.Rel*math.Abs(w) {
			return false
		}
	}
	return true
}

// absFor is the absolute tolerance of the number at a path: angles and
// forces have their own.
func (t Tolerance) absFor(at string) float64 {
	switch {
	case strings.Contains(at, "angular"):
		return t.Angle
	case strings.Contains(at, "force"):
		return t.Force
	}
	return t.Abs
}
