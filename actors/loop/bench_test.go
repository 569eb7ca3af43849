package loop

import (
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/hapticd/hapticd/actors/loop/effect"
	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/hw/hwtest"
	"github.com/hapticd/hapticd/hw/sim"
)

// nopArm is the cheapest possible driver: it isolates the loop's own cost.
type nopArm struct{ info hw.Info }

func (a *nopArm) Info() hw.Info                                { return a.info }
func (a *nopArm) Exchange(cmd *hw.Command, st *hw.State) error { st.ForceN = cmd.ForceN; return nil }
func (a *nopArm) Halt() error                                  { return nil }
func (a *nopArm) Close() error                                 { return nil }

var _ hw.Driver = (*nopArm)(nil)

func newSimArm(i int) *sim.Arm {
	return sim.NewArm(sim.ArmOptions{Index: i, PeriodS: 0.001, Motion: sim.MotionCircle, Seed: int64(i)})
}

// controlled returns a device whose register holds a live force command with
// damping and the force gate on, so Step runs its whole pipeline.
func controlled(drv hw.Driver) *Device {
	d := NewDevice(drv, DeviceOptions{})
	reg := d.Register()
	reg.Claim(1)
	c := force(0.5, -0.2, 0.1)
	p := &Params{Damping: [3][3]float64{{2, 0, 0}, {0, 2, 0}, {0, 0, 2}}, ForceGateGain: 0.3}
	reg.Write(1, 1, 1<<62, &c, p)
	return d
}

// BenchmarkStep measures one tick: against a no-op driver (the loop's own
// cost) and against a simulated arm, reported as a ratio to the same arm's
// bare Exchange measured in the same run.
func BenchmarkStep(b *testing.B) {
	b.Run("driver=nop", func(b *testing.B) {
		d := controlled(&nopArm{info: hw.Info{Kind: hw.KindArm, MaxForceN: 10, EffectiveMassKg: 0.2, HostGravityCompensation: true}})
		now := SystemClock().Now()
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			now += int64(time.Millisecond)
			d.Step(now)
		}
	})
	b.Run("driver=sim", func(b *testing.B) {
		bare := newSimArm(0)
		var cmd hw.Command
		var st hw.State
		start := time.Now()
		for i := 0; i < b.N; i++ {
			_ = bare.Exchange(&cmd, &st)
		}
		bareNs := float64(time.Since(start).Nanoseconds()) / float64(b.N)

		d := controlled(newSimArm(0))
		now := SystemClock().Now()
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			now += int64(time.Millisecond)
			d.Step(now)
		}
		b.StopTimer()
		stepNs := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
		b.ReportMetric(bareNs, "bare-exchange-ns")
		if bareNs > 0 {
			b.ReportMetric(stepNs/bareNs, "x-bare")
		}
	})
}

// BenchmarkScheduler runs the real scheduler at 1 kHz with n simulated arms
// on GOMAXPROCS shards. One op is one scheduler tick (so ns/op is about the
// period). It reports the stepping cost per device (ns/step), the same cost
// stepping the devices in a bare loop in the same run (bare-ns/step), the
// period's p99 and max, and overruns per 1000 ticks.
//
// The rt=50 cases run the shards SCHED_FIFO (when the process may): they
// show how much of the period jitter is other load on the machine. The idle
// cases are arms nobody controls, at rest (they sleep, see Device.stepAt).
func BenchmarkScheduler(b *testing.B) {
	cases := []struct {
		n, rt int
		idle  bool
	}{{1, 0, false}, {100, 0, false}, {1000, 0, false}, {10000, 0, false}, {1, 50, false}, {1000, 50, false},
		{10000, 0, true}, {10000, 50, true}}
	for _, c := range cases {
		n := c.n
		name := fmt.Sprintf("devices=%d/rt=%d", n, c.rt)
		if c.idle {
			name += "/idle"
		}
		b.Run(name, func(b *testing.B) {
			devs := make([]*Device, n)
			for i := range devs {
				if c.idle {
					devs[i] = NewDevice(sim.NewArm(sim.ArmOptions{Index: i, PeriodS: 0.001}), DeviceOptions{})
				} else {
					devs[i] = controlled(newSimArm(i))
				}
			}
			if c.idle {
				// Let the arms come to rest first.
				now := SystemClock().Now()
				for range 100 {
					now += int64(time.Millisecond)
					for _, d := range devs {
						d.stepAt(now, false)
					}
				}
			}
			// Bare baseline: the same steps with no pacing, threads or shards.
			const bareTicks = 20
			now := SystemClock().Now()
			start := time.Now()
			for k := 0; k < bareTicks; k++ {
				now += int64(time.Millisecond)
				for i, d := range devs {
					d.stepAt(now, (uint64(k)+uint64(i))%exchangeSampleEvery == 0)
				}
			}
			bareNs := float64(time.Since(start).Nanoseconds()) / float64(bareTicks*n)

			s := NewScheduler(SchedulerOptions{PeriodNs: int64(time.Millisecond), RealtimePriority: c.rt})
			for _, d := range devs {
				s.Add(d)
			}
			sh := s.shards[0]
			s.Start()
			// Let the shards settle, then measure b.N ticks of shard 0.
			hwtest.Eventually(b, 30*time.Second, "the shards to settle", func() bool { return sh.stats.period.Summary().Count >= 50 })
			for _, x := range s.shards {
				x.stats.period.Reset()
				x.stats.busy.Reset()
			}
			over0 := sh.stats.overruns.Load()
			b.ResetTimer()
			// A 1 ms shard takes b.N ms; the deadline only stops a stalled one.
			hwtest.Eventually(b, time.Duration(b.N)*10*time.Millisecond+30*time.Second, "b.N ticks of shard 0", func() bool { return sh.stats.period.Summary().Count >= uint64(b.N) })
			b.StopTimer()
			over := sh.stats.overruns.Load() - over0
			var busyNs float64
			for _, x := range s.shards {
				busyNs += float64(x.stats.busy.Summary().MeanNs)
			}
			period := sh.stats.period.Summary()
			if c.rt > 0 && !sh.stats.realtime.Load() {
				b.Log("real-time priority not granted; this case ran with normal scheduling")
			}
			s.Stop()
			b.ReportMetric(busyNs/float64(n), "ns/step")
			b.ReportMetric(bareNs, "bare-ns/step")
			b.ReportMetric(float64(period.P99Ns)/1e3, "period-p99-us")
			b.ReportMetric(float64(period.MaxNs)/1e3, "period-max-us")
			b.ReportMetric(float64(over)*1000/float64(period.Count), "overruns/1k-ticks")
			runtime.GC()
		})
	}
}

// BenchmarkMovingArmsTick is one tick of 10,000 uncontrolled arms that a
// scripted hand keeps moving, stepped by a shard's pass (unpaced, on this
// goroutine), beside the physics alone (ArmCore.Step over a contiguous
// []sim.ArmCore under the same gravity feed-forward, what `hapticd
// baseline-arms` steps) in the same run, alternating so load hits both
// alike. x-bare is the ratio issue 12 wants at most 1.25 (0.8× the bare
// capacity).
func BenchmarkMovingArmsTick(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("arms=%d", n), func(b *testing.B) { movingArmsTick(b, n) })
	}
}

func movingArmsTick(b *testing.B, n int) {
	s := NewScheduler(SchedulerOptions{Shards: 1, ShardFill: n})
	bare := make([]sim.ArmCore, n)
	for i := range n {
		s.Add(NewDevice(newSimArm(i), DeviceOptions{}))
		newSimArm(i).MoveCore(&bare[i])
	}
	defer s.Stop()
	sh := s.shards[0]
	cmd := hw.Command{Mode: hw.ModeForce, ForceN: hw.Vec3{Z: sim.EffectiveMassKg * hw.GravityMps2}}
	clock := SystemClock()
	now := clock.Now()
	var cur *Device
	var stepNs, bareNs int64
	minStep, minBare := int64(1<<62), int64(1<<62)
	b.ResetTimer()
	for k := 0; k < b.N; k++ {
		now += int64(time.Millisecond)
		t0 := time.Now()
		sh.mu.Lock()
		sh.pass(now, clock, &cur)
		sh.mu.Unlock()
		t1 := time.Now()
		for i := range bare {
			_, _ = bare[i].Step(&cmd)
		}
		t2 := time.Now()
		stepNs += t1.Sub(t0).Nanoseconds()
		bareNs += t2.Sub(t1).Nanoseconds()
		minStep, minBare = min(minStep, t1.Sub(t0).Nanoseconds()), min(minBare, t2.Sub(t1).Nanoseconds())
	}
	b.StopTimer()
	b.ReportMetric(float64(stepNs)/float64(b.N*n), "ns/step")
	b.ReportMetric(float64(bareNs)/float64(b.N*n), "bare-ns/step")
	if bareNs > 0 {
		b.ReportMetric(float64(stepNs)/float64(bareNs), "x-bare")
	}
	// The fastest tick of each: on a loaded machine, the one least
	// disturbed by neighbours, so the steadier ratio.
	b.ReportMetric(float64(minStep)/float64(minBare), "x-bare-min")
}

// BenchmarkRegisterWrite times one session's per-tick command write, the
// register's share of every lock-step message, beside a baseline that
// copies the same command under a mutex (what a register without lock-free
// reads would do).
func BenchmarkRegisterWrite(b *testing.B) {
	cmd := hw.Command{Mode: hw.ModeForce, ForceN: hw.Vec3{Z: 0.5}}
	var baseNs float64
	b.Run("baseline=mutex_copy", func(b *testing.B) {
		var mu sync.Mutex
		var slot struct {
			session, seq uint64
			deadline     int64
			cmd          hw.Command
		}
		var seq uint64
		for b.Loop() {
			seq++
			mu.Lock()
			slot.session, slot.seq, slot.deadline, slot.cmd = 1, seq, int64(seq), cmd
			mu.Unlock()
		}
		baseNs = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	})
	b.Run("register", func(b *testing.B) {
		r := new(Register)
		if r.Claim(1) != 1 {
			b.Fatal("claim refused")
		}
		var seq uint64
		for b.Loop() {
			seq++
			if !r.Write(1, seq, int64(seq), &cmd, nil) {
				b.Fatal("write refused")
			}
		}
		if baseNs > 0 {
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/baseNs, "x_baseline")
		}
	})
}

// effectArm adds arm i's device to s and makes it controlled by session
// i+1, with a wall (through the workspace centre, normal +Z, 2000 N/m) and
// a damper (2 N·s/m) declared, under a zero force command and the
// service's default Globals (force clamp 10 N, slew limit 5,000 N/s), in
// the order a service does (the device runs before a session declares
// effects); and
// returns the same Set for a bare loop to render.
func effectArm(b testing.TB, s *Scheduler, i int, effects bool) (*Device, *effect.Set) {
	session := uint64(i + 1)
	c := hw.ArmWorkspaceCenterM()
	set, err := effect.NewSet(session, []effect.Spec{
		{ID: "wall", Kind: effect.Wall, Params: effect.Params{StiffnessNPerM: 2000, DampingNsPerM: 1, AxisUnit: hw.Vec3{Z: 1}, PointM: c}},
		{ID: "damper", Kind: effect.Damper, Params: effect.Params{DampingNsPerM: 2}},
	})
	if err != nil {
		b.Fatal(err)
	}
	d := NewDevice(newSimArm(i), DeviceOptions{})
	// The service's defaults (protocol's force clamp and slew limit): the
	// slew limit is a stage a controlled arm runs every tick there.
	g := DefaultGlobals()
	g.ForceClampN, g.ForceSlewNps = 10, 5000
	d.SetGlobals(g)
	s.Add(d)
	if !effects {
		set = nil
	}
	d.SetEffects(set)
	reg := d.Register()
	reg.Claim(session)
	cmd := hw.Command{Mode: hw.ModeForce}
	reg.Write(session, 1, 1<<62, &cmd, nil)
	return d, set
}

// BenchmarkEffectArmsTick is one tick of 10,000 simulated arms, each
// controlled by its own session and rendering a wall and a damper, stepped
// by a shard's pass (unpaced, on this goroutine: lease, effects, passivity
// observer, clamp, ramp, gravity, publish), beside a bare loop that steps
// the same physics (ArmCore.Step) under the same effects (an
// effect.Renderer per arm, plus the gravity feed-forward) and nothing else,
// alternating tick by tick so load on the machine hits both alike.
// capacity-ratio is bare/loop time: the share of the bare loop's arm count
// the loop holds at the same rate (issue 22 asks at least 0.8). The
// effects=false cases are the same controlled arms with no effects, so
// the difference is what the effects cost. Ticks are 1 ms give or take a
// microsecond, as a paced loop measures them (a cost that depends on the
// tick's length, an exponential recomputed for each new one, hid from
// exact 1 ms ticks), and the bare loop renders with the same lengths.
func BenchmarkEffectArmsTick(b *testing.B) {
	// 2,000 arms a shard is the service's load near its capacity with
	// effects on this 2-core machine (3,800 to 4,100 arms on 2 shards);
	// 64 arms (one block) keep everything in L2: what is left there is
	// computation, not memory.
	for _, n := range []int{64, 1000, 2000, 10000} {
		for _, fx := range []bool{false, true} {
			b.Run(fmt.Sprintf("arms=%d/effects=%v", n, fx), func(b *testing.B) { effectArmsTick(b, n, fx) })
		}
	}
}

func effectArmsTick(b *testing.B, n int, effects bool) {
	s := NewScheduler(SchedulerOptions{Shards: 1, ShardFill: n})
	// On huge pages when the shard's blocks are (HugeSlice).
	bare := HugeSlice[sim.ArmCore](n)
	sets := make([]*effect.Set, n)
	// The bare loop's renderers hold their two effects inline, side by
	// side in one slice: the layout a loop written for this alone would
	// choose (separately allocated slots cost it 2 to 6 times more).
	renderers := HugeSlice[BareEffects](n)
	for i := range n {
		_, set := effectArm(b, s, i, effects)
		sets[i] = set
		renderers[i].Init()
		newSimArm(i).MoveCore(&bare[i])
	}
	defer s.Stop()
	sh := s.shards[0]
	ff := sim.EffectiveMassKg * hw.GravityMps2
	clock := SystemClock()
	now := clock.Now()
	var cur *Device
	var stepNs, bareNs int64
	minStep, minBare := int64(1<<62), int64(1<<62)
	in := effect.Input{DtNs: int64(time.Millisecond)}
	cmd := hw.Command{Mode: hw.ModeForce}
	b.ResetTimer()
	for k := 0; k < b.N; k++ {
		dt := int64(time.Millisecond) + int64(k*7919%2001) - 1000
		now += dt
		t0 := time.Now()
		sh.mu.Lock()
		sh.pass(now, clock, &cur)
		sh.mu.Unlock()
		t1 := time.Now()
		in.NowNs, in.DtNs = now, dt
		for i := range bare {
			// With effects, as a loop written for this alone would
			// beyond the caches, and as the service's loop does for its
			// records. Without, prefetching the physics cores made this
			// loop 1 to 2 % slower: it streams them well by itself.
			if j := i + BarePrefetchAhead; effects && j < len(bare) {
				PrefetchBareArm(&bare[j], &renderers[j])
			}
			a := &bare[i]
			in.PositionM, in.VelocityMps = a.Position(), a.Velocity()
			f := renderers[i].Renderer.Render(sets[i], &in, 1)
			f.Z += ff
			cmd.ForceN = f
			_, _ = a.Step(&cmd)
		}
		t2 := time.Now()
		stepNs += t1.Sub(t0).Nanoseconds()
		bareNs += t2.Sub(t1).Nanoseconds()
		minStep, minBare = min(minStep, t1.Sub(t0).Nanoseconds()), min(minBare, t2.Sub(t1).Nanoseconds())
	}
	b.StopTimer()
	b.ReportMetric(float64(stepNs)/float64(b.N*n), "ns/step")
	b.ReportMetric(float64(bareNs)/float64(b.N*n), "bare-ns/step")
	if stepNs > 0 {
		b.ReportMetric(float64(bareNs)/float64(stepNs), "capacity-ratio")
		b.ReportMetric(float64(minBare)/float64(minStep), "capacity-ratio-min")
		// The fastest ticks per arm, the figures capacity-ratio-min
		// divides: against an older binary's ratio at the same bare
		// figure, the ns per arm-tick a change saves.
		b.ReportMetric(float64(minStep)/float64(n), "ns/step-min")
		b.ReportMetric(float64(minBare)/float64(n), "bare-ns/step-min")
	}
}

// BenchmarkEffectArmsScheduler runs the real scheduler at 1 kHz with
// 10,000 arms rendering a wall and a damper each (as
// BenchmarkEffectArmsTick), and reports the period and the overruns per
// 1000 ticks (issue 22 asks under 10).
func BenchmarkEffectArmsScheduler(b *testing.B) {
	const n = 10000
	s := NewScheduler(SchedulerOptions{PeriodNs: int64(time.Millisecond)})
	for i := range n {
		effectArm(b, s, i, true)
	}
	sh := s.shards[0]
	s.Start()
	defer s.Stop()
	hwtest.Eventually(b, 30*time.Second, "the shards to settle", func() bool { return sh.stats.period.Summary().Count >= 50 })
	for _, x := range s.shards {
		x.stats.period.Reset()
		x.stats.busy.Reset()
	}
	over0 := sh.stats.overruns.Load()
	b.ResetTimer()
	// A 1 ms shard takes b.N ms; the deadline only stops a stalled one.
	hwtest.Eventually(b, time.Duration(b.N)*10*time.Millisecond+30*time.Second, "b.N ticks of shard 0", func() bool { return sh.stats.period.Summary().Count >= uint64(b.N) })
	b.StopTimer()
	over := sh.stats.overruns.Load() - over0
	var busyNs float64
	for _, x := range s.shards {
		busyNs += float64(x.stats.busy.Summary().MeanNs)
	}
	period := sh.stats.period.Summary()
	b.ReportMetric(busyNs/float64(n), "ns/step")
	b.ReportMetric(float64(period.P99Ns)/1e3, "period-p99-us")
	b.ReportMetric(float64(over)*1000/float64(period.Count), "overruns/1k-ticks")
}

// BenchmarkEffectArmsLayout runs BenchmarkEffectArmsTick's bare loop (no
// prefetch) over two layouts of the same arms, alternating tick by tick:
// the service's own (the physics cores inside the shard block's records,
// the Renderers inside the block's effect stages, after one pass so the
// stages hold their Sets as the service's tick renders them) and the bare
// loop's arrays. svcdata-ns/step-min against bare-ns/step-min is what the
// service's layout alone costs the same code; BenchmarkEffectArmsTick's
// gap beyond it is the service's code (docs/investigations/loop-tick-cost.md,
// "Render and the physics in the service").
func BenchmarkEffectArmsLayout(b *testing.B) {
	for _, n := range []int{64, 2000, 10000} {
		b.Run(fmt.Sprintf("arms=%d", n), func(b *testing.B) { effectArmsLayout(b, n) })
	}
}

func effectArmsLayout(b *testing.B, n int) {
	s := NewScheduler(SchedulerOptions{Shards: 1, ShardFill: n})
	defer s.Stop()
	bare := HugeSlice[sim.ArmCore](n)
	renderers := HugeSlice[BareEffects](n)
	sets := make([]*effect.Set, n)
	cores := make([]*sim.ArmCore, n)
	stages := make([]*effect.Renderer, n)
	for i := range n {
		d, set := effectArm(b, s, i, true)
		sets[i] = set
		renderers[i].Init()
		newSimArm(i).MoveCore(&bare[i])
		cores[i], stages[i] = &d.slot.Load().core, &d.fx.Load().r
	}
	clock := SystemClock()
	now := clock.Now()
	var cur *Device
	sh := s.shards[0]
	sh.mu.Lock()
	sh.pass(now, clock, &cur)
	sh.mu.Unlock()
	ff := sim.EffectiveMassKg * hw.GravityMps2
	in := effect.Input{}
	cmd := hw.Command{Mode: hw.ModeForce}
	step := func(a *sim.ArmCore, r *effect.Renderer, set *effect.Set) {
		in.PositionM, in.VelocityMps = a.Position(), a.Velocity()
		f := r.Render(set, &in, 1)
		f.Z += ff
		cmd.ForceN = f
		_, _ = a.Step(&cmd)
	}
	minSvc, minBare := int64(1<<62), int64(1<<62)
	b.ResetTimer()
	for k := 0; k < b.N; k++ {
		dt := int64(time.Millisecond) + int64(k*7919%2001) - 1000
		now += dt
		in.NowNs, in.DtNs = now, dt
		t0 := time.Now()
		for i := range cores {
			step(cores[i], stages[i], sets[i])
		}
		t1 := time.Now()
		for i := range bare {
			step(&bare[i], &renderers[i].Renderer, sets[i])
		}
		t2 := time.Now()
		minSvc, minBare = min(minSvc, t1.Sub(t0).Nanoseconds()), min(minBare, t2.Sub(t1).Nanoseconds())
	}
	b.StopTimer()
	b.ReportMetric(float64(minSvc)/float64(n), "svcdata-ns/step-min")
	b.ReportMetric(float64(minBare)/float64(n), "bare-ns/step-min")
}
