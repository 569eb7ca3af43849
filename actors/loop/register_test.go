package loop

import (
	"math"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/hapticd/hapticd/hw"
)

func TestRegisterOwnership(t *testing.T) {
	type op struct {
		name    string
		do      func(r *Register) uint64
		want    uint64
		owner   uint64 // after the op
		term    uint64 // after the op: changes of owner so far
		written bool   // for writes: accepted
	}
	write := func(s uint64) func(r *Register) uint64 {
		return func(r *Register) uint64 {
			c := force(1, 0, 0)
			if r.Write(s, 1, 100, &c, nil) {
				return 1
			}
			return 0
		}
	}
	claim := func(s uint64) func(r *Register) uint64 { return func(r *Register) uint64 { return r.Claim(s) } }
	release := func(s uint64) func(r *Register) uint64 {
		return func(r *Register) uint64 {
			if r.Release(s) {
				return 1
			}
			return 0
		}
	}
	steps := []op{
		{name: "write before any claim is refused", do: write(1), want: 0, owner: 0},
		{name: "session 0 cannot claim", do: claim(0), want: 0, owner: 0},
		{name: "first claim wins", do: claim(1), want: 1, owner: 1, term: 1},
		{name: "claim again is a no-op", do: claim(1), want: 1, owner: 1, term: 1},
		{name: "second session sees the owner", do: claim(2), want: 1, owner: 1, term: 1},
		{name: "non-owner write refused", do: write(2), want: 0, owner: 1, term: 1},
		{name: "owner write accepted", do: write(1), want: 1, owner: 1, term: 1},
		{name: "non-owner release refused", do: release(2), want: 0, owner: 1, term: 1},
		{name: "owner release", do: release(1), want: 1, owner: 0, term: 2},
		{name: "release twice refused", do: release(1), want: 0, owner: 0, term: 2},
		{name: "write after release refused", do: write(1), want: 0, owner: 0, term: 2},
		{name: "another session claims", do: claim(2), want: 2, owner: 2, term: 3},
	}
	var r Register
	for _, s := range steps {
		if got := s.do(&r); got != s.want {
			t.Fatalf("%s: got %d, want %d", s.name, got, s.want)
		}
		if o := r.Owner(); o != s.owner {
			t.Fatalf("%s: owner = %d, want %d", s.name, o, s.owner)
		}
		if tm := r.Term(); tm != s.term {
			t.Fatalf("%s: term = %d, want %d", s.name, tm, s.term)
		}
	}
}

func TestRegisterReadReturnsWhatWasWritten(t *testing.T) {
	var r Register
	var c Command
	r.Read(&c)
	if c.Session != 0 || c.Cmd.Mode != hw.ModeIdle {
		t.Fatalf("empty register read %+v", c)
	}
	r.Claim(4)
	p := DefaultParams()
	cmd := hw.Command{Mode: hw.ModeAngle, ForceN: hw.Vec3{X: 1}, PositionM: hw.Vec3{Y: 2},
		TorquesNmm: hw.Angles3{A2: 3}, AnglesDeg: hw.Angles3{A0: -4, A1: math.Inf(1)}}
	r.Write(4, 99, 12345, &cmd, p)
	r.Read(&c)
	if c.Session != 4 || c.Seq != 99 || c.DeadlineNs != 12345 || c.Params != p || c.Cmd != cmd {
		t.Fatalf("read back %+v, want session 4 seq 99 deadline 12345 and %+v", c, cmd)
	}
}

// TestRegisterConcurrentWritersNeverTear has several goroutines of the owner
// and of other sessions write, claim and release while a reader checks that
// every command it reads is one whole write.
func TestRegisterConcurrentWritersNeverTear(t *testing.T) {
	var r Register
	const writers = 6
	const writes = 4000
	var stop atomic.Bool
	var wg sync.WaitGroup
	var accepted, refused atomic.Uint64
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			session := uint64(w%3 + 1) // three sessions, two goroutines each
			for i := 1; i <= writes; i++ {
				k := float64(session*1_000_000 + uint64(i))
				cmd := hw.Command{Mode: hw.ModeForce, ForceN: hw.Vec3{X: k, Y: k, Z: k},
					TorquesNmm: hw.Angles3{A0: k, A1: k, A2: k}}
				r.Claim(session)
				if r.Write(session, uint64(k), int64(k), &cmd, nil) {
					accepted.Add(1)
				} else {
					refused.Add(1)
				}
				if i%50 == 0 {
					r.Release(session)
				}
			}
		}(w)
	}
	var torn atomic.Uint64
	var reads atomic.Uint64
	var rwg sync.WaitGroup
	for range 2 {
		rwg.Add(1)
		go func() {
			defer rwg.Done()
			var c Command
			for !stop.Load() {
				r.Read(&c)
				reads.Add(1)
				if c.Session == 0 {
					continue
				}
				k := float64(c.Seq)
				f, tq := c.Cmd.ForceN, c.Cmd.TorquesNmm
				if f.X != k || f.Y != k || f.Z != k || tq.A0 != k || tq.A2 != k ||
					c.DeadlineNs != int64(c.Seq) || c.Seq/1_000_000 != c.Session {
					torn.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	stop.Store(true)
	rwg.Wait()
	if torn.Load() != 0 {
		t.Fatalf("%d of %d reads saw a torn command", torn.Load(), reads.Load())
	}
	if accepted.Load() == 0 {
		t.Fatal("no write was accepted")
	}
	if accepted.Load()+refused.Load() != writers*writes {
		t.Fatalf("accepted %d + refused %d != %d writes", accepted.Load(), refused.Load(), writers*writes)
	}
}

func TestRegisterNilCommandIsIdle(t *testing.T) {
	var r Register
	r.Claim(1)
	c := force(1, 0, 0)
	r.Write(1, 1, 100, &c, nil)
	if !r.Write(1, 2, 100, nil, nil) {
		t.Fatal("Write with a nil command was refused")
	}
	var got Command
	r.Read(&got)
	if got.Seq != 2 || got.Cmd != (hw.Command{}) {
		t.Fatalf("after a nil command the register holds %+v, want an idle command", got)
	}
}

func TestRegisterDoesNotAllocate(t *testing.T) {
	var r Register
	r.Claim(1)
	cmd := force(1, 2, 3)
	p := DefaultParams()
	var c Command
	var seq uint64
	if a := testing.AllocsPerRun(1000, func() {
		seq++
		r.Write(1, seq, 1e9, &cmd, p)
		r.Read(&c)
	}); a != 0 {
		t.Fatalf("Write + Read allocate %.1f times, want 0", a)
	}
}

func TestSnapshotReadersNeverTear(t *testing.T) {
	var cell SnapshotCell
	pattern := func(k uint64, s *Snapshot) {
		f := float64(k)
		s.State = hw.State{
			PositionM: hw.Vec3{X: f, Y: f, Z: f}, VelocityMps: hw.Vec3{X: f, Y: f, Z: f},
			AnglesDeg: hw.Angles3{A0: f, A1: f, A2: f}, AngularVelocityDps: hw.Angles3{A0: f, A1: f, A2: f},
			BodyOrientation: hw.Quat{W: f, X: f, Y: f, Z: f}, ForceN: hw.Vec3{X: f, Y: f, Z: f},
			Orientation: hw.Quat{W: f, X: f, Y: f, Z: f}, Buttons: hw.Buttons(k % 8),
			Hall: f, Battery: f, Status: hw.Status(k % 64),
		}
		s.Mode = hw.ControlMode(k % 5)
		s.Owner, s.Tick, s.TimeNs, s.AppliedSeq, s.Failed = k, k, int64(k), k, k%2 == 1
	}
	var s Snapshot
	hammerCell(t, func(k uint64) bool {
		pattern(k, &s)
		return cell.Publish(&s)
	}, cell.Load, pattern)
}

// hammerCell publishes states 1 to 100,000 (publish(k) false: try k
// again, as the loop's next tick would) while four readers load them, and
// fails on a torn read (want(k) is what a load of state k must equal), a
// load that went back in time, or a last state that is not the last.
func hammerCell(t *testing.T, publish func(k uint64) bool, load func(dst *Snapshot), want func(k uint64, dst *Snapshot)) {
	t.Helper()
	var stop atomic.Bool
	var torn, backwards, reads atomic.Uint64
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var got, exp Snapshot
			var prev uint64
			for !stop.Load() {
				load(&got)
				reads.Add(1)
				k := got.Tick
				want(k, &exp)
				if k != 0 && got != exp {
					torn.Add(1)
				}
				if k < prev {
					backwards.Add(1)
				}
				prev = k
			}
		}()
	}
	for k := uint64(1); k <= 100_000; k++ {
		if !publish(k) {
			k--
		}
	}
	stop.Store(true)
	wg.Wait()
	if torn.Load() != 0 || backwards.Load() != 0 {
		t.Fatalf("of %d reads %d were torn and %d went back in time", reads.Load(), torn.Load(), backwards.Load())
	}
	var last Snapshot
	load(&last)
	if last.Tick != 100_000 {
		t.Fatalf("latest tick = %d, want 100000", last.Tick)
	}
}

func TestSnapshotDoesNotAllocate(t *testing.T) {
	var cell SnapshotCell
	var s, d Snapshot
	if a := testing.AllocsPerRun(1000, func() {
		s.Tick++
		cell.Publish(&s)
		cell.Load(&d)
	}); a != 0 {
		t.Fatalf("Publish + Load allocate %.1f times, want 0", a)
	}
}

func TestSnapshotSeqCountsEveryPublish(t *testing.T) {
	var cell SnapshotCell
	var s, d Snapshot
	if cell.Seq() != 0 {
		t.Fatalf("an empty cell has Seq %d", cell.Seq())
	}
	s.Tick = 7
	cell.Publish(&s)
	s.Mode = hw.ModeIdle // a Halt republishes the same tick
	cell.Publish(&s)
	if got := cell.Seq(); got != 2 {
		t.Fatalf("Seq after two publishes of one tick = %d, want 2", got)
	}
	// With a reader announced on every other buffer, Publish stores
	// nothing and Seq must not move.
	latest := cell.latest.Load()
	for i := range cell.bufs {
		if b := &cell.bufs[i]; b != latest {
			b.readers.Add(1)
		}
	}
	if cell.Publish(&s) || cell.Seq() != 2 {
		t.Fatalf("a publish that stored nothing moved Seq to %d", cell.Seq())
	}
	cell.Load(&d)
	if d != s {
		t.Fatalf("Load = %+v, want %+v", d, s)
	}
}

// TestRegisterReparam: Reparam gives the owner's latest command new Params
// and keeps the rest, as a new write the loop notices; it never touches
// another session's command, nor one from before a release.
func TestRegisterReparam(t *testing.T) {
	cmd := hw.Command{Mode: hw.ModeForce, ForceN: hw.Vec3{X: 4}}
	p1, p2 := DefaultParams(), &Params{ForceGateGain: 0.9}
	cases := []struct {
		name    string
		setup   func(r *Register) // after session 7 claimed and wrote seq 5 with p1
		session uint64
		want    bool
		wantP   *Params
	}{
		{"the owner's command", func(*Register) {}, 7, true, p2},
		{"the same Params again", func(r *Register) { r.Reparam(7, p2) }, 7, true, p2},
		{"not the owner", func(*Register) {}, 8, false, p1},
		{"another owner since", func(r *Register) { r.Release(7); r.Claim(8) }, 8, false, p1},
		{"released", func(r *Register) { r.Release(7) }, 7, false, p1},
		{"claimed again, nothing written", func(r *Register) { r.Release(7); r.Claim(7) }, 7, false, p1},
		{"session 0", func(*Register) {}, 0, false, p1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var r Register
			r.Claim(7)
			r.Write(7, 5, 1000, &cmd, p1)
			tc.setup(&r)
			var before, after Command
			r.Read(&before)
			if got := r.Reparam(tc.session, p2); got != tc.want {
				t.Fatalf("Reparam = %v, want %v", got, tc.want)
			}
			r.Read(&after)
			if after.Params != tc.wantP {
				t.Fatalf("Params %p after, want %p", after.Params, tc.wantP)
			}
			if after.Session != 7 || after.Seq != 5 || after.DeadlineNs != 1000 || after.Cmd != cmd || after.term != before.term {
				t.Fatalf("the command changed: %+v, want session 7 seq 5 deadline 1000 %+v term %d", after, cmd, before.term)
			}
			if changed := after.version != before.version; changed != (tc.want && before.Params != p2) {
				t.Fatalf("version %d → %d: a rewrite must be a new version, nothing else one", before.version, after.version)
			}
		})
	}
}

// TestRegisterReparamNeverRevertsANewerCommand: a Reparam racing the
// owner's writes never publishes an older command (with new Params) over a
// newer one: the latest sequence number read never goes back.
func TestRegisterReparamNeverRevertsANewerCommand(t *testing.T) {
	var r Register
	r.Claim(3)
	p1, p2 := DefaultParams(), &Params{ForceGateGain: 0.5}
	const writes = 20000
	var done atomic.Bool
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		defer done.Store(true)
		for i := 1; i <= writes; i++ {
			cmd := hw.Command{Mode: hw.ModeForce, ForceN: hw.Vec3{X: float64(i)}}
			r.Write(3, uint64(i), int64(i), &cmd, p1)
		}
	}()
	var reparams atomic.Uint64
	go func() {
		defer wg.Done()
		for !done.Load() {
			if r.Reparam(3, p2) {
				reparams.Add(1)
			}
		}
	}()
	var c Command
	var last uint64
	for !done.Load() {
		r.Read(&c)
		if c.Seq < last {
			t.Fatalf("seq %d read after %d: an older command came back", c.Seq, last)
		}
		if c.Seq != 0 && (c.Cmd.ForceN.X != float64(c.Seq) || c.DeadlineNs != int64(c.Seq)) {
			t.Fatalf("torn: %+v", c)
		}
		last = c.Seq
	}
	wg.Wait()
	if r.Read(&c); c.Seq != writes {
		t.Fatalf("the last write (seq %d) is not the latest: %d", writes, c.Seq)
	}
	t.Logf("%d reparams landed among %d writes", reparams.Load(), writes)
}
