package actors

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/hapticd/hapticd/actors/loop"
	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/hw/sim"
	"github.com/hapticd/hapticd/protocol"
)

// chanSink hands frames to the benchmark and recycles buffers as a
// connection does.
type chanSink struct {
	frames chan []byte
	free   chan []byte
}

func newChanSink() *chanSink {
	return &chanSink{frames: make(chan []byte, 4), free: make(chan []byte, 4)}
}

func (s *chanSink) Buffer() []byte {
	select {
	case b := <-s.free:
		return b[:0]
	default:
		return make([]byte, 0, 4096)
	}
}
func (s *chanSink) Send(buf []byte)            { s.frames <- buf }
func (s *chanSink) Recycle([]byte)             {}
func (s *chanSink) Close(protocol.CloseReason) {}

// splicingChanSink is a chanSink that splices as the WebSocket sink does:
// a frame's run of every arm is not copied into it, and not kept (the
// socket's writev would read it in place).
type splicingChanSink struct {
	*chanSink
	// shared is the length of the last frame's run, read by the goroutine
	// that delivered the message (SendSpliced runs on it).
	shared int
}

func (s *splicingChanSink) Send(buf []byte) { s.shared = 0; s.frames <- buf }
func (s *splicingChanSink) SendSpliced(buf []byte, _ int, shared []byte) {
	s.shared = len(shared)
	s.frames <- buf
}

// openRecycling opens a session whose frames come back on a chanSink, its
// inventory taken and recycled; the session closes with the test.
func openRecycling(tb testing.TB, svc *Service) (*Session, *chanSink) {
	tb.Helper()
	sink := newChanSink()
	return openOn(tb, svc, sink, sink), sink
}

// openSplicing is openRecycling with a sink that splices runs in.
func openSplicing(tb testing.TB, svc *Service) (*Session, *splicingChanSink) {
	tb.Helper()
	sink := &splicingChanSink{chanSink: newChanSink()}
	return openOn(tb, svc, sink, sink.chanSink), sink
}

// openOn opens a session writing to sink, whose frames come back on c.
func openOn(tb testing.TB, svc *Service, sink FrameSink, c *chanSink) *Session {
	tb.Helper()
	sess, err := svc.OpenSession(SessionOptions{Remote: "test", Codec: protocol.Codec{}, Sink: sink})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { sess.Close(protocol.CloseClientClosed) })
	c.free <- <-c.frames // the inventory
	return sess
}

// BenchmarkSessionMessage is one per-tick message through a session actor:
// the actor hop, decoding, the register write and the frame's encoding,
// with 1 and 100 simulated arms in the frame. Allocations per message are
// reported. The +configure cases re-send an unchanged configure with every
// command, as some engine plugins do every tick; the +state cases re-send
// unchanged state commands (set_transform, set_gravity_compensation,
// keep_alive), as sawHaplyService and the vendor's navigator do. The
// +subscribe case is one of issue 12's 100 clients: subscribed to its own
// arm, the last of 100, and commanding it.
func BenchmarkSessionMessage(b *testing.B) {
	for _, c := range []struct {
		arms                                 int
		configure, state, subscribe, gravity bool
	}{{1, false, false, false, false}, {100, false, false, false, false}, {1, true, false, false, false}, {100, true, false, false, false}, {1, false, true, false, false}, {100, false, false, true, false}, {1, false, false, false, true}} {
		name := fmt.Sprintf("arms=%d", c.arms)
		if c.configure {
			name += "+configure"
		}
		if c.state {
			name += "+state"
		}
		if c.subscribe {
			name += "+subscribe"
		}
		if c.gravity {
			name += "+gravity"
		}
		arms := c.arms
		b.Run(name, func(b *testing.B) {
			svc, err := Start(Options{Log: zerolog.Nop(), SimShards: 1})
			if err != nil {
				b.Fatal(err)
			}
			defer svc.Shutdown(b.Context())
			var first *Device
			for i := 0; i < arms; i++ {
				d, err := svc.AddDevice(sim.NewArm(sim.ArmOptions{Index: i, PeriodS: 0.001}), false)
				if err != nil {
					b.Fatal(err)
				}
				if first == nil || c.subscribe {
					first = d // with subscribe: the last arm
				}
			}
			sess, sink := openSplicing(b, svc)
			if c.subscribe {
				sess.Deliver([]byte(`{"session":{"configure":{"subscribe":{"devices":[{"device_type":"arm3","device_id":"`+first.ID+`"}]}}}}`), 0)
				sink.free <- <-sink.frames
			}
			configure := ""
			if c.configure {
				configure = `"configure":{"damping":{"scalar":2},"force_gate":{"gain":0.5}},`
			}
			state := ""
			if c.state {
				state = `,"set_transform":{"position":{"x":0,"y":0,"z":0}},"set_gravity_compensation":true,"keep_alive":{}`
			}
			if c.gravity { // sawHaplyService's cycle: the state commands without set_transform
				state = `,"set_gravity_compensation":true,"keep_alive":{}`
			}
			msg := []byte(`{"arm3":[{"device_id":"` + first.ID + `",` + configure + `"commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":0.5}}` + state + `}}]}`)
			var frameBytes int
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				sess.Deliver(msg, 0)
				f := <-sink.frames
				frameBytes = len(f) + sink.shared
				sink.free <- f
			}
			b.StopTimer()
			b.ReportMetric(float64(frameBytes), "frame-bytes")
		})
	}
}

// BenchmarkEveryArmFrames is issue 26's every-arm load inside one process:
// 100 sessions on 100 simulated arms, session i commanding arm i, each
// frame carrying every arm (the default subscription). The sessions take
// turns, one message each, so every frame is another session's and each
// session's scratch is as cold as among 100 live connections; frames of
// one publish share each arm's encoded element. ns/op is one message and
// its frame; allocations per message are reported (the cache's stores,
// one per arm and publish, amortized).
func BenchmarkEveryArmFrames(b *testing.B) {
	const n = 100
	svc, err := Start(Options{Log: zerolog.Nop(), SimShards: 1})
	if err != nil {
		b.Fatal(err)
	}
	defer svc.Shutdown(b.Context())
	type client struct {
		sess *Session
		sink *splicingChanSink
		msg  []byte
	}
	clients := make([]client, n)
	for i := range clients {
		d, err := svc.AddDevice(sim.NewArm(sim.ArmOptions{Index: i, PeriodS: 0.001}), false)
		if err != nil {
			b.Fatal(err)
		}
		clients[i].msg = []byte(`{"arm3":[{"device_id":"` + d.ID + `","commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":0.5}}}}]}`)
	}
	for i := range clients {
		clients[i].sess, clients[i].sink = openSplicing(b, svc)
	}
	var frameBytes int
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c := &clients[i%n]
		c.sess.Deliver(c.msg, 0)
		f := <-c.sink.frames
		frameBytes = len(f) + c.sink.shared
		c.sink.free <- f
	}
	b.StopTimer()
	b.ReportMetric(float64(frameBytes), "frame-bytes")
}

// BenchmarkSessionsOpen opens n sessions on n simulated arms, so each
// session attaches to every arm (its inventory lists them all): the cost
// per session and device should stay flat as n grows. With one
// copy-on-write map of sessions per device it grew with n (every attach
// copied every other session's entry).
func BenchmarkSessionsOpen(b *testing.B) {
	for _, n := range []int{100, 400} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			var perPair float64
			for range b.N {
				b.StopTimer()
				svc, err := Start(Options{Log: zerolog.Nop(), SimShards: 1})
				if err != nil {
					b.Fatal(err)
				}
				for i := range n {
					if _, err := svc.AddDevice(sim.NewArm(sim.ArmOptions{Index: i, PeriodS: 0.001}), false); err != nil {
						b.Fatal(err)
					}
				}
				sessions := make([]*Session, 0, n)
				b.StartTimer()
				start := time.Now()
				for range n {
					sink := newChanSink()
					sink.frames = make(chan []byte, 1)
					sess, err := svc.OpenSession(SessionOptions{Remote: "bench", Codec: protocol.Codec{}, Sink: sink})
					if err != nil {
						b.Fatal(err)
					}
					sessions = append(sessions, sess)
				}
				perPair += float64(time.Since(start).Nanoseconds()) / float64(n*n)
				b.StopTimer()
				for _, s := range sessions {
					s.Close(protocol.CloseClientClosed)
				}
				svc.Shutdown(b.Context())
				b.StartTimer()
			}
			b.ReportMetric(perPair/float64(b.N), "ns/session/device")
		})
	}
}

// BenchmarkDevicesAdd adds n simulated arms to a service, one at a time as
// startup does: the cost per device should stay flat as n grows. Publishing
// the ids kept for local devices (an O(devices) map) on every add made it
// grow with n: 4,000 arms took 77 s to start (registryActor.holdersChanged).
func BenchmarkDevicesAdd(b *testing.B) {
	for _, n := range []int{500, 2000} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			var perDevice float64
			for range b.N {
				b.StopTimer()
				svc, err := Start(Options{Log: zerolog.Nop(), SimShards: 1})
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				start := time.Now()
				for i := range n {
					if _, err := svc.AddDevice(sim.NewArm(sim.ArmOptions{Index: i, PeriodS: 0.001}), false); err != nil {
						b.Fatal(err)
					}
				}
				perDevice += float64(time.Since(start).Nanoseconds()) / float64(n)
				b.StopTimer()
				svc.Shutdown(b.Context())
				b.StartTimer()
			}
			b.ReportMetric(perDevice/float64(b.N), "ns/device")
		})
	}
}

// TestSessionMessageDoesNotAllocate: a lock-step client's message through
// its session (delivery, decoding, the register write, the frame's
// encoding into a recycled buffer) allocates nothing, on average over many
// messages: the service's other goroutines count too. Also for a lab
// gateway's arm whose state is fresh: the frame's staleness check
// (staleStateWarnings) is a comparison.
func TestSessionMessageDoesNotAllocate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		remote int // devices the frames check for staleness
		drv    func() hw.Driver
	}{
		{"local arm", 0, func() hw.Driver { return sim.NewArm(sim.ArmOptions{Index: 0, PeriodS: 0.001}) }},
		{"lab arm, fresh state", 1, func() hw.Driver {
			return &freshRemoteArm{Arm: sim.NewArm(sim.ArmOptions{Index: 0, PeriodS: 0.001})}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc, err := Start(Options{Log: zerolog.Nop(), SimShards: 1})
			if err != nil {
				t.Fatal(err)
			}
			defer svc.Shutdown(t.Context())
			arm, err := svc.AddDevice(tc.drv(), false)
			if err != nil {
				t.Fatal(err)
			}
			if got := len(svc.Devices().remote); got != tc.remote {
				t.Fatalf("%d devices checked for staleness, want %d", got, tc.remote)
			}
			sess, sink := openRecycling(t, svc)
			msg := []byte(`{"arm3":[{"device_id":"` + arm.ID + `","commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":0.5}}}}]}`)
			exchange := func() {
				sess.Deliver(msg, 0)
				sink.free <- <-sink.frames
			}
			for range 100 {
				exchange() // warm up: the session's scratch, the device's encodings
			}
			if n := testing.AllocsPerRun(2000, exchange); n != 0 {
				t.Fatalf("a message through the session allocates %v times, want 0", n)
			}
		})
	}
}

// freshRemoteArm is a simulated arm that says, as a lab gateway's proxy
// does, how old its state is: always fresh.
type freshRemoteArm struct{ *sim.Arm }

func (*freshRemoteArm) StateStaleness() (ageNs, boundNs int64) {
	return 1, int64(100 * time.Millisecond)
}

// BenchmarkArmRunPerTick is what framing every arm costs per loop tick
// beside the frames: 100 arms pushed against their limits (as under the
// 100-client benchmark, each commanded a force along z, again every
// tick) each publish once per op; then two sessions of the default views frame them, the first
// building the next run, the second copying it. "steps" is the arms'
// ticks alone, the same ops without the frames: the frames cost the
// difference.
func BenchmarkArmRunPerTick(b *testing.B) {
	for _, framed := range []bool{false, true} {
		name := "steps"
		if framed {
			name = "steps+frame"
		}
		b.Run(name, func(b *testing.B) {
			const n = 100
			sessions := []uint64{1, 2}
			devs := &DeviceSet{runs: new(armRuns)}
			epoch := new(atomic.Uint64)
			now := loop.SystemClock().Now()
			for i := range n {
				d, core := simArmCore()
				d.framesEpoch = epoch
				devs = devs.with(d)
				for _, s := range sessions {
					core.attach(nil, &attachSession{session: s, basis: protocol.Basis{Permutation: protocol.IdentityBasis}})
				}
				force := &hw.Command{Mode: hw.ModeForce, ForceN: hw.Vec3{X: float64(i%7) * 0.05, Z: 0.5}}
				if d.Register().Claim(100) != 100 || !d.Register().Write(100, 1, now+int64(time.Hour), force, nil) {
					b.Fatal("could not command an arm")
				}
			}
			// Each tick every arm's client writes its command again, as
			// the lock-step clients do, and the arm publishes.
			var seq uint64
			step := func() {
				now += int64(time.Millisecond)
				seq++
				for i, d := range devs.arms {
					force := &hw.Command{Mode: hw.ModeForce, ForceN: hw.Vec3{X: float64(i%7) * 0.05, Z: 0.5}}
					if !d.Register().Write(100, seq, now+int64(time.Hour), force, nil) {
						b.Fatal("could not command an arm")
					}
					d.rt.Step(now)
				}
			}
			for range 3000 { // to the limits
				step()
			}
			memos := []*viewMemo{new(viewMemo), new(viewMemo)}
			f := new(protocol.Frame)
			var snap loop.Snapshot
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				step()
				for i, s := range sessions {
					if framed {
						f.Arms = f.Arms[:0]
						fillFrame(devs, s, f, &snap, false, nil, protocol.Codec{}, nil, memos[i], 0)
						memos[i].run.release()
					}
				}
			}
		})
	}
}

// BenchmarkSessionMessageCommands is one message of a load-test client
// that drives many arms from one session: a service of 1000 simulated
// arms, one message with a command entry for each of the first n, and its
// frame with every arm. ns/arm is the message's cost per commanded arm: at
// n=1000 the whole message must stay far under the lease (100 ms), or the
// client cannot hold its arms. The +rotated case starts each message at
// another arm (a client that names its arms in no fixed order), the
// +lowercase case writes the ids in lower case (NamesDeviceID): each
// entry's device is then found without the session's hint.
func BenchmarkSessionMessageCommands(b *testing.B) {
	const fleet = 1000
	svc, err := Start(Options{Log: zerolog.Nop(), SimShards: 1})
	if err != nil {
		b.Fatal(err)
	}
	defer svc.Shutdown(b.Context())
	ids := make([]string, fleet)
	for i := range ids {
		d, err := svc.AddDevice(sim.NewArm(sim.ArmOptions{Index: i, PeriodS: 0.001}), false)
		if err != nil {
			b.Fatal(err)
		}
		ids[i] = d.ID
	}
	for _, c := range []struct {
		arms           int
		rotated, lower bool
	}{{1, false, false}, {10, false, false}, {100, false, false}, {1000, false, false}, {1000, true, false}, {1000, false, true}} {
		name := fmt.Sprintf("arms=%d", c.arms)
		if c.rotated {
			name += "+rotated"
		}
		if c.lower {
			name += "+lowercase"
		}
		b.Run(name, func(b *testing.B) {
			// Seven messages, each starting seven arms further on.
			msgs := make([][]byte, 7)
			for m := range msgs {
				msg := []byte(`{"arm3":[`)
				for i := range c.arms {
					id := ids[i]
					if c.rotated {
						id = ids[(i+7*m)%c.arms]
					}
					if c.lower {
						id = strings.ToLower(id)
					}
					if i > 0 {
						msg = append(msg, ',')
					}
					msg = append(msg, `{"device_id":"`+id+`","commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":0.5}}}}`...)
				}
				msgs[m] = append(msg, "]}"...)
			}
			sess, sink := openSplicing(b, svc)
			var frameBytes int
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				sess.Deliver(msgs[i%len(msgs)], 0)
				f := <-sink.frames
				frameBytes = len(f) + sink.shared
				sink.free <- f
			}
			b.StopTimer()
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(c.arms), "ns/arm")
			b.ReportMetric(float64(frameBytes), "frame-bytes")
		})
	}
}
