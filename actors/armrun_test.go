package actors

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/hapticd/hapticd/actors/loop"
	"github.com/hapticd/hapticd/actors/loop/effect"
	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/protocol"
	"github.com/hapticd/hapticd/protocol/space"
)

// runRig is a few simulated arms of one service's framing (a shared
// count of view and effects changes), each session framing them with a
// memo of its own, as tickPath does.
type runRig struct {
	t     *testing.T
	devs  *DeviceSet
	cores []*deviceCore
	now   int64
	memos map[uint64]*viewMemo
	snap  loop.Snapshot
	types *protocol.TypeTable
}

func newRunRig(t *testing.T, n int, sessions ...uint64) *runRig {
	r := &runRig{t: t, devs: &DeviceSet{runs: new(armRuns)}, now: loop.SystemClock().Now(), memos: map[uint64]*viewMemo{}}
	types, err := protocol.NewTypeTable(nil)
	if err != nil {
		t.Fatal(err)
	}
	r.types = types
	epoch := new(atomic.Uint64)
	for i := 0; i < n; i++ {
		d, core := simArmCore()
		d.framesEpoch = epoch
		r.devs = r.devs.with(d)
		r.cores = append(r.cores, core)
		for _, s := range sessions {
			core.attach(nil, &attachSession{session: s, basis: protocol.Basis{Permutation: protocol.IdentityBasis}})
		}
		// Each arm pushed its own way, so that their states differ.
		reg := d.Register()
		force := &hw.Command{Mode: hw.ModeForce, ForceN: hw.Vec3{X: float64(i) * 0.3, Z: 0.5}}
		if reg.Claim(100) != 100 || !reg.Write(100, 1, r.now+int64(time.Hour), force, nil) {
			t.Fatal("could not command an arm")
		}
	}
	r.step(50)
	return r
}

// step runs every arm's loop n ticks.
func (r *runRig) step(n int) {
	for range n {
		r.now += int64(time.Millisecond)
		for _, d := range r.devs.arms {
			d.rt.Step(r.now)
		}
	}
}

// frame is the JSON of session's frame, and the arm elements it holds.
func (r *runRig) frame(session uint64) ([]byte, []protocol.ArmFrame) {
	m := r.memos[session]
	if m == nil {
		m = new(viewMemo)
		r.memos[session] = m
	}
	f := &protocol.Frame{SessionID: session}
	fillFrame(r.devs, session, f, &r.snap, false, nil, protocol.Codec{}, nil, m, 0)
	out := protocol.Codec{}.AppendFrame(nil, f, r.types)
	// The same frame as a splicing sink gets it (emit): its own bytes and
	// the run, to be written where it lies.
	f.Splice = true
	own := protocol.Codec{}.AppendFrame(nil, f, r.types)
	f.Splice = false
	if f.SplicedAt >= 0 {
		shared := splicedElement(f)
		if m.run.held == nil || len(shared) == 0 || &shared[0] != &m.run.held.body[0] {
			r.t.Fatal("a spliced frame's element is not the run it holds")
		}
		own = append(append(own[:f.SplicedAt:f.SplicedAt], shared...), own[f.SplicedAt:]...)
	} else if len(f.Arms) == 1 && f.Arms[0].Spliced {
		r.t.Fatal("the run was not left out of a frame that splices")
	}
	if !bytes.Equal(own, out) {
		r.t.Fatalf("the frame spliced differs from the frame copied:\n%s\n%s", own, out)
	}
	m.run.release()
	return out, f.Arms
}

// perArm is session's frame encoded arm by arm, with no run and no memo:
// the bytes a run must reproduce.
func (r *runRig) perArm(session uint64) []byte {
	f := &protocol.Frame{SessionID: session}
	fillFrame(r.devs, session, f, &r.snap, false, nil, nil, nil, nil, 0)
	return protocol.Codec{}.AppendFrame(nil, f, r.types)
}

// TestArmRunsAreTheFramesBytes: sessions that see every arm through its
// default view copy one run of every arm's element, shared between them,
// and their frames are byte for byte what encoding each arm gives, after
// every arm publishes and after only some do (the run then copies the
// others' elements from the run it replaces). A session with a view of
// its own of one arm is never served the run, and sees its own
// coordinates; the run is shared again once its view is the default.
func TestArmRunsAreTheFramesBytes(t *testing.T) {
	const a, b, own = 1, 2, 3
	r := newRunRig(t, 4, a, b, own)
	swapped := space.IdentityTransform()
	swapped.Position = space.Vec3{X: 0.25}
	if err := r.cores[2].setWorkspace(&setWorkspace{session: own, transform: swapped}); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name string
		move func()
	}{
		{"first frames", func() {}},
		{"every arm published", func() { r.step(1) }},
		{"one arm published", func() { r.devs.arms[1].rt.Step(r.now + int64(500*time.Microsecond)) }},
		{"one arm halted", func() { r.devs.arms[3].rt.Halt() }},
		{"another session's view changed", func() {
			moved := swapped
			moved.Position.Y = 0.1
			if err := r.cores[2].setWorkspace(&setWorkspace{session: own, transform: moved}); err != nil {
				t.Fatal(err)
			}
		}},
		{"the default view replaced", func() { r.cores[0].publishGlobals() }},
		// Pushed against their limits, the arms publish every tick with
		// the same content but for bits a frame does not show.
		{"every arm at its limit", func() { r.step(3000) }},
		{"every arm published again at its limit", func() { r.step(1) }},
		{"one arm released at its limit", func() { r.devs.arms[2].Register().Release(100); r.step(1) }},
	}
	for _, st := range steps {
		st.move()
		fa, armsA := r.frame(a)
		fb, armsB := r.frame(b)
		if want := r.perArm(a); !bytes.Equal(fa, want) {
			t.Fatalf("%s: the run's frame differs from the arms encoded one by one:\n%s\n%s", st.name, fa, want)
		}
		if len(armsA) != 1 || len(armsB) != 1 || &armsA[0].Element[0] != &armsB[0].Element[0] {
			t.Fatalf("%s: two sessions of the default views did not share one run (%d and %d elements)", st.name, len(armsA), len(armsB))
		}
		if !bytes.Equal(fb, r.perArm(b)) {
			t.Fatalf("%s: session b's frame differs from its arms encoded one by one", st.name)
		}
		fo, armsO := r.frame(own)
		if len(armsO) != 4 {
			t.Fatalf("%s: the session with a workspace of its own got %d elements, want one per arm", st.name, len(armsO))
		}
		if want := r.perArm(own); !bytes.Equal(fo, want) {
			t.Fatalf("%s: the own view's frame differs from its arms encoded one by one:\n%s\n%s", st.name, fo, want)
		}
		if bytes.Equal(fo[bytes.IndexByte(fo, ','):], fa[bytes.IndexByte(fa, ','):]) {
			t.Fatalf("%s: the session with its own workspace framed the default views' arms", st.name)
		}
	}
	if err := r.cores[2].setWorkspace(&setWorkspace{session: own, transform: space.IdentityTransform()}); err != nil {
		t.Fatal(err)
	}
	_, armsA := r.frame(a)
	if _, armsO := r.frame(own); len(armsO) != 1 || &armsO[0].Element[0] != &armsA[0].Element[0] {
		t.Fatalf("back to the default workspace, the session got %d elements, not the shared run", len(armsO))
	}
}

// TestArmRunsStopAtEffects: effects declared on one arm end the sharing
// at once, before the arm publishes again (the run built before holds no
// effects), and every frame then shows them; withdrawn, the run is shared
// again.
func TestArmRunsStopAtEffects(t *testing.T) {
	const a, b = 1, 2
	r := newRunRig(t, 3, a, b)
	r.frame(a)
	if _, arms := r.frame(b); len(arms) != 1 {
		t.Fatalf("got %d elements before any effect, want the run", len(arms))
	}
	d := r.devs.arms[1]
	set, err := effect.NewSet(100, []effect.Spec{{ID: "d", Kind: effect.Damper, Params: effect.Params{DampingNsPerM: 2}}})
	if err != nil {
		t.Fatal(err)
	}
	d.RenderHeld(set) // no step: the loop has not published since
	for _, s := range []uint64{a, b} {
		out, arms := r.frame(s)
		if len(arms) != 3 {
			t.Fatalf("session %d: %d elements with effects on an arm, want one per arm", s, len(arms))
		}
		if !strings.Contains(string(out), `"effects"`) && !strings.Contains(string(out), `"passivity"`) {
			t.Fatalf("session %d: the frame does not show the arm's effects: %s", s, out)
		}
	}
	d.rt.DropEffects(100)
	r.step(1)
	r.frame(a)
	if _, arms := r.frame(b); len(arms) != 1 {
		t.Fatalf("effects withdrawn: got %d elements, want the run again", len(arms))
	}
}

// TestArmRunBuffersAreReusedOnlyWhenUnread: a run a frame still holds
// keeps its bytes while later builds replace it; once released, a later
// build takes its buffers instead of allocating.
func TestArmRunBuffersAreReusedOnlyWhenUnread(t *testing.T) {
	const a, b, c = 1, 2, 3
	r := newRunRig(t, 3, a, b, c)
	var snap loop.Snapshot
	memos := map[uint64]*viewMemo{a: new(viewMemo), b: new(viewMemo), c: new(viewMemo)}
	// build steps the arms and frames session s, releasing its last run.
	build := func(s uint64) *armRun {
		r.step(1)
		run := armRunFor(r.devs, r.devs.arms, slot3x, s, memos[s], &snap, protocol.Codec{})
		if run == nil {
			t.Fatalf("session %d: no run", s)
		}
		return run
	}
	held := build(a)
	kept := append([]byte(nil), held.body...)
	// Sessions b and c take turns building (a session does not rebuild
	// its own run that nobody reused on every frame: runRebuildEvery).
	for i := range 6 {
		build(b + uint64(i%2))
	}
	if !bytes.Equal(held.body, kept) {
		t.Fatal("a run still held was overwritten by a later build")
	}
	memos[a].run.release()
	for i := range 6 {
		if run := build(b + uint64(i%2)); &run.body[:1][0] == &held.body[:1][0] {
			return // the released run's buffer is built into again
		}
	}
	t.Fatal("no build reused the buffer of the run released")
}

// joiningSink is a SplicingSink that joins each frame's parts, as the
// bytes a socket's writev sends, and counts the frames that came spliced.
type joiningSink struct {
	*chanSink
	spliced int
}

func (s *joiningSink) SendSpliced(buf []byte, at int, shared []byte) {
	s.spliced++
	joined := append(append(append(make([]byte, 0, len(buf)+len(shared)), buf[:at]...), shared...), buf[at:]...)
	s.frames <- joined
}

// TestSessionsSpliceTheRun: sessions whose sink splices get every-arm
// frames as their own bytes and the shared run, which joined are a frame
// of every arm; each frame lets go of the run once written, so its
// buffers can be reused.
func TestSessionsSpliceTheRun(t *testing.T) {
	svc := startWith(t, Options{})
	var ids []string
	for i := range 3 {
		ids = append(ids, addArm(t, svc, simArm(i)).ID)
	}
	sinks := []*joiningSink{{chanSink: newChanSink()}, {chanSink: newChanSink()}}
	var sessions []*Session
	for _, s := range sinks {
		sessions = append(sessions, openOn(t, svc, s, s.chanSink))
	}
	for i := range 200 {
		k := i % 2
		sessions[k].Deliver([]byte(`{"arm3":[{"device_id":"`+ids[k]+`","commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":0.1}}}}]}`), 0)
		out := <-sinks[k].frames
		var frame struct {
			SessionID uint64 `json:"session_id"`
			Arms      []struct {
				DeviceID string `json:"device_id"`
			} `json:"inverse3"` // the default naming
		}
		if err := json.Unmarshal(out, &frame); err != nil {
			t.Fatalf("frame %d is not JSON: %v\n%s", i, err, out)
		}
		if frame.SessionID != sessions[k].ID || len(frame.Arms) != len(ids) {
			t.Fatalf("frame %d: session %d, %d arms; want session %d, %d arms\n%.300s", i, frame.SessionID, len(frame.Arms), sessions[k].ID, len(ids), out)
		}
		for j, a := range frame.Arms {
			if a.DeviceID != ids[j] {
				t.Fatalf("frame %d: arm %d is %q, want %q", i, j, a.DeviceID, ids[j])
			}
		}
		if r := svc.Devices().runs.runs[slot3x].Load(); r != nil && r.readers.Load() != 0 {
			t.Fatalf("frame %d: the run is still held by %d frames once written", i, r.readers.Load())
		}
	}
	if sinks[0].spliced+sinks[1].spliced == 0 {
		t.Fatal("no frame came spliced: the sessions never shared a run")
	}
}

// stallingSink splices, counting the distinct run buffers it was handed;
// with hold set, SendSpliced blocks first, as a write to a client whose
// socket is full does (its frame holds the run meanwhile).
type stallingSink struct {
	*chanSink
	hold    chan struct{}
	entered chan struct{}
	bodies  map[*byte]bool
}

func (s *stallingSink) SendSpliced(buf []byte, at int, shared []byte) {
	if s.hold != nil {
		s.entered <- struct{}{}
		<-s.hold
	}
	if len(shared) > 0 && s.bodies != nil {
		s.bodies[&shared[0]] = true
	}
	s.frames <- buf
}

// TestStalledWritesDoNotPinTheRunSpares: clients whose writes stall hold
// the runs their frames were spliced from for as long as the write takes;
// builds for the other sessions still reuse the spare buffers instead of
// allocating a run each (63 KB at 100 arms, several a tick). Without
// retire's eviction of held spares, two stalled writes made every later
// build allocate (found by review: 21 distinct runs in 160 frames against
// 4). The frames come at an engine's pace: the arms publish between them.
func TestStalledWritesDoNotPinTheRunSpares(t *testing.T) {
	svc := startWith(t, Options{})
	var ids []string
	for i := range 3 {
		ids = append(ids, addArm(t, svc, simArm(i)).ID)
	}
	mk := func() *stallingSink { return &stallingSink{chanSink: newChanSink()} }
	a, b, c := mk(), mk(), mk()
	sa := openOn(t, svc, a, a.chanSink)
	sb := openOn(t, svc, b, b.chanSink)
	sc := openOn(t, svc, c, c.chanSink)
	cmd := []byte(`{"arm3":[{"device_id":"` + ids[0] + `","commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":0.5}}}}]}`)
	frames := func(n int) (distinct int) {
		c.bodies = map[*byte]bool{}
		for range n {
			sc.Deliver(append([]byte(nil), cmd...), 0)
			<-c.frames
			time.Sleep(2 * time.Millisecond) // an engine's pace, not a bound
		}
		return len(c.bodies)
	}
	frames(20) // warm up
	free := frames(160)
	for _, p := range []struct {
		s    *Session
		sink *stallingSink
	}{{sa, a}, {sb, b}} {
		p.sink.hold, p.sink.entered = make(chan struct{}), make(chan struct{}, 1)
		go p.s.Deliver([]byte(`{}`), 0)
		select {
		case <-p.sink.entered:
		case <-time.After(patience):
			t.Fatal("a stalled session's frame did not come spliced")
		}
		// The next builds retire the run the stalled frame holds.
		frames(3)
	}
	stalled := frames(160)
	close(a.hold)
	close(b.hold)
	<-a.frames
	<-b.frames
	if stalled > free+3 {
		t.Errorf("with two writes stalled the other session's frames came from %d distinct runs, against %d with none: builds allocated instead of reusing the spares", stalled, free)
	}
}

// TestArmContentIsSameOnlyWhenTheBytesAre: a run keeps an arm's element
// when the arm published content that encodes to the same bytes
// (armContent.sameContent), and never otherwise. Every field that
// armContent holds, of every kind, down to the last number and flag, is
// set, one at a time, to each pair of values from its kind's table (for
// numbers, values near the edges of how a frame writes them: 0 and -0,
// float32's rounding, its range, integers, NaN and infinities): whenever
// the content is judged the same, the two elements must be byte for byte
// equal, so a field that sameContent leaves out of the comparison fails
// here as soon as the frame writes it. A field of a kind the test has no
// values for fails it too. A force settling on its command in the last
// bits must be judged the same (the reason for the comparison).
func TestArmContentIsSameOnlyWhenTheBytesAre(t *testing.T) {
	floats := []float64{0, math.Copysign(0, -1), 1e-50, -1e-50, 1e-40, 7e-46, 0.5, 0.49999968143596285,
		0.499999692533901, 0.49999999999941624, 0.2000241229000721, 0.20002356013061953, -3, 123456,
		123456.000001, 999999.9999999, 1e6, math.MaxFloat32, math.MaxFloat32 * 1.0000001, -math.MaxFloat32 * 1.0000001,
		math.Inf(1), math.Inf(-1), math.NaN()}
	// The values of each kind a field may have, set through reflect. A
	// pointer is nil or points at its type's zero value (which may encode
	// as nil does: see the check on pointers below).
	values := map[reflect.Kind]func(reflect.Type) []reflect.Value{
		reflect.Float64: func(typ reflect.Type) []reflect.Value { return convertAll(typ, floats) },
		reflect.Bool:    func(typ reflect.Type) []reflect.Value { return convertAll(typ, []bool{false, true}) },
		reflect.Uint8: func(typ reflect.Type) []reflect.Value {
			return convertAll(typ, []uint8{0, 1, 2, 3, 4, 5, 6, 255})
		},
		reflect.Int: func(typ reflect.Type) []reflect.Value {
			return convertAll(typ, []int{0, 1, 2, 3, -1, 1 << 40, math.MinInt})
		},
		reflect.Pointer: func(typ reflect.Type) []reflect.Value {
			return []reflect.Value{reflect.Zero(typ), reflect.New(typ.Elem())}
		},
	}
	base := protocol.ArmFrame{DeviceID: "CBBD"}
	base.State.BodyOrientation.W = 1
	base.State.Transform.Rotation.W = 1
	base.State.Transform.Scale = protocol.Vec3{X: 1, Y: 1, Z: 1}
	base.State.ControlMode, base.State.ControlDomain, base.State.CalibrationState = protocol.ControlForce, protocol.DomainCartesian, protocol.CalibrationDone
	base.Status = protocol.ArmStatus{Calibrated: true, Ready: true, Started: true, PowerSupply: true}
	encode := func(a *protocol.ArmFrame) []byte { return protocol.Codec{}.AppendArmElement(nil, a) }

	// Every leaf field armContent holds, by its path in the frame it is
	// filled from: armContent's own fields mirror the frame's (state is
	// State), as buildArmRun fills them.
	type leaf struct {
		name string
		path []int // in protocol.ArmFrame
		typ  reflect.Type
	}
	var leaves []leaf
	var walk func(typ reflect.Type, name string, at []int)
	walk = func(typ reflect.Type, name string, at []int) {
		for i := range typ.NumField() {
			f := typ.Field(i)
			path, fname := append(append([]int(nil), at...), i), name+"."+f.Name
			switch k := f.Type.Kind(); {
			case k == reflect.Struct:
				walk(f.Type, fname, path)
			case values[k] != nil:
				leaves = append(leaves, leaf{fname, path, f.Type})
			default:
				t.Fatalf("armContent holds %s, a %v: this test has no values of that kind; give it some, and see that sameContent compares it", fname, k)
			}
		}
	}
	frameType := reflect.TypeFor[protocol.ArmFrame]()
	contentType := reflect.TypeFor[armContent]()
	for i := range contentType.NumField() {
		f := contentType.Field(i)
		in, ok := frameType.FieldByName(strings.ToUpper(f.Name[:1]) + f.Name[1:])
		if !ok || in.Type != f.Type || len(in.Index) != 1 {
			t.Fatalf("armContent holds %s, which is no field of protocol.ArmFrame of its type: teach this test how it is filled and varied", f.Name)
		}
		walk(f.Type, f.Name, in.Index)
	}
	// contentOf is armContent filled from a frame, field by field.
	contentOf := func(a *protocol.ArmFrame) armContent {
		var c armContent
		cv, av := reflect.ValueOf(&c).Elem(), reflect.ValueOf(a).Elem()
		for i := range cv.NumField() {
			f := cv.Field(i)
			name := contentType.Field(i).Name
			// The field is unexported: reflect sets it only through its address.
			reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem().Set(av.FieldByName(strings.ToUpper(name[:1]) + name[1:]))
		}
		return c
	}

	judgedSame := 0
	for _, l := range leaves {
		vals := values[l.typ.Kind()](l.typ)
		for _, u := range vals {
			for _, v := range vals {
				a, b := base, base
				reflect.ValueOf(&a).Elem().FieldByIndex(l.path).Set(u)
				reflect.ValueOf(&b).Elem().FieldByIndex(l.path).Set(v)
				c := contentOf(&a)
				same := c.sameContent(&b)
				if ea, eb := encode(&a), encode(&b); same && !bytes.Equal(ea, eb) {
					t.Fatalf("%s, %v against %v: judged the same, but encoded\n%s\n%s", l.name, u, v, ea, eb)
				}
				// What a pointer points at is not compared (a run holds no
				// arm with extensions): content holding one is never the same.
				if same && l.typ.Kind() == reflect.Pointer && !(u.IsNil() && v.IsNil()) {
					t.Fatalf("%s, %v against %v: judged the same, but sameContent cannot see what a pointer points at", l.name, u, v)
				}
				if same && l.typ.Kind() == reflect.Float64 && math.Float64bits(u.Float()) != math.Float64bits(v.Float()) {
					judgedSame++
				}
			}
		}
	}
	if judgedSame == 0 {
		t.Fatal("no two different numbers were judged the same: the comparison is to the bit, and a settling force re-encodes every arm")
	}
	settling := base
	settling.State.CurrentCursorForce.Z = 0.49999999999941624
	c := contentOf(&base)
	c.state.CurrentCursorForce.Z = 0.4999999999994349
	if !c.sameContent(&settling) {
		t.Fatal("a force settling in its last bits was judged changed")
	}
}

// convertAll returns each of vs as a reflect.Value of typ (a named type of
// the same kind, such as protocol.ControlMode for uint8).
func convertAll[T any](typ reflect.Type, vs []T) []reflect.Value {
	out := make([]reflect.Value, len(vs))
	for i, v := range vs {
		out[i] = reflect.ValueOf(v).Convert(typ)
	}
	return out
}
