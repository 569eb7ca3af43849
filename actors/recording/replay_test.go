package recording

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/hapticd/hapticd/actors"
	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/hw/hwtest"
	"github.com/hapticd/hapticd/hw/replay"
	"github.com/hapticd/hapticd/hw/sim"
	"github.com/hapticd/hapticd/protocol"
	"github.com/hapticd/hapticd/protocol/mcap"
)

// recordedFile is a recording of the given states, one channel per device
// in the order given (as the writer adds them: on first use), each with
// two states 1 ms apart. The states must decode.
func recordedFile(states ...string) *mcap.File {
	f := &mcap.File{Channels: map[uint16]mcap.Channel{}}
	for i, data := range states {
		var st State
		if err := json.Unmarshal([]byte(data), &st); err != nil {
			panic(err)
		}
		key := st.Type + "-" + st.Device // as the pump keys a device
		ch := uint16(i + 1)
		f.Channels[ch] = mcap.Channel{ID: ch, Topic: topic(KindState, key), MessageEncoding: messageEncoding,
			Metadata: map[string]string{"kind": KindState, "key": key}}
	}
	for tick := range uint64(2) {
		for i, st := range states {
			f.Messages = append(f.Messages, mcap.Message{ChannelID: uint16(i + 1), LogTime: 1e9 + tick*1e6, Data: []byte(st)})
		}
	}
	return f
}

// A replay serves the devices in the order they were recorded (not sorted
// by id), a left-handed arm with its left-handed angles, and an arm whose
// recorded model is out of a device type number's range as an Inverse3
// (the whole file was refused); a file from before handedness was kept
// replays right-handed, as then.
func TestReplayKeepsOrderHandednessAndOddModels(t *testing.T) {
	const pos = `"position":[0.03,0.15,0.1],"velocity":[0,0,0],"force":[0,0,0]`
	f := recordedFile(
		`{"device":"FFFF","type":"arm3","model":300,`+pos+`}`,
		`{"device":"0001","type":"arm3","model":6,"left_handed":true,`+pos+`}`,
		`{"device":"0002","type":"arm3",`+pos+`}`,
		`{"device":"5","type":"grip","link":"wired","position":[0,0,0],"velocity":[0,0,0],"force":[0,0,0]}`,
	)
	drivers, err := Replay(f, 1, false)
	if err != nil {
		t.Fatalf("Replay: %v", err)
	}
	var ids []string
	for _, d := range drivers {
		ids = append(ids, d.Info().ID)
	}
	if got := strings.Join(ids, ","); got != "FFFF,0001,0002,5" {
		t.Fatalf("replayed devices in the order %s, want the recorded FFFF,0001,0002,5", got)
	}
	if m := drivers[0].Info().Model; m != sim.ModelInverse3 {
		t.Errorf("model 300 replays as device type %d, want an Inverse3's %d", m, sim.ModelInverse3)
	}
	if m := drivers[1].Info().Model; m != sim.ModelMinverse {
		t.Errorf("model 6 replays as device type %d, want a Minverse's", m)
	}
	for i, left := range map[int]bool{1: true, 2: false} {
		want := hw.State{PositionM: hw.Vec3{X: 0.03, Y: 0.15, Z: 0.1}}
		sim.DeriveArmState(&want, left)
		got := drivers[i].(*replay.Device).At(time.Hour)
		if d := got.AnglesDeg.A0 - want.AnglesDeg.A0; d > 1e-9 || d < -1e-9 {
			t.Errorf("%s (left-handed %v): replayed A0 %g°, want %g°", ids[i], left, got.AnglesDeg.A0, want.AnglesDeg.A0)
		}
	}
}

// gatedDriver is a replayed arm whose first Exchange waits for open: its
// loop publishes no state until then, as an arm whose first reply is late.
type gatedDriver struct {
	*replay.Device
	open   chan struct{}
	opened bool
}

func (g *gatedDriver) Exchange(cmd *hw.Command, st *hw.State) error {
	if !g.opened {
		<-g.open
		g.opened = true
	}
	return g.Device.Exchange(cmd, st)
}

// recordOf records svc until enough states of every id in ids are in the
// file, doing meanwhile what during says, and returns the file.
func recordOf(t *testing.T, svc *actors.Service, name string, during func(rs *Recorder)) *mcap.File {
	t.Helper()
	rs := New(Config{Service: svc, Dir: t.TempDir(), Log: zerolog.Nop()})
	info, err := rs.Start(Options{Name: name})
	if err != nil {
		t.Fatal(err)
	}
	during(rs)
	stopped, ok := rs.Stop(info.ID)
	if !ok || stopped.Error != "" {
		t.Fatalf("Stop: %+v, %v", stopped, ok)
	}
	f, _, err := Load(stopped.Path)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// A replay serves the devices in the service's order when the recording
// started, also when the first device's loop had published nothing by the
// recorder's first drain (a late first reply): its state channel was made
// after the others', and the replay listed it after them, so a client's
// /arm3/0 was another arm.
func TestReplayOrderIsTheServicesWhateverStatesCameFirst(t *testing.T) {
	svc := startBareService(t)
	late := &gatedDriver{open: make(chan struct{})}
	var openOnce sync.Once
	open := func() { openOnce.Do(func() { close(late.open) }) }
	t.Cleanup(open) // before the shutdown, should the test fail
	var want []string
	for i, id := range []string{"FFFF", "0001"} {
		info := sim.NewArm(sim.ArmOptions{Index: i}).Info()
		info.ID, info.UUID = id, "order-"+id
		d := replay.New(replay.Options{Info: info, Samples: []replay.Sample{{Position: hw.Vec3{X: 0.01 * float64(i)}}}})
		var drv hw.Driver = d
		if i == 0 {
			late.Device = d
			drv = late
		}
		if _, err := svc.AddDevice(drv, i == 0); err != nil {
			t.Fatal(err)
		}
		want = append(want, id)
	}
	f := recordOf(t, svc, "order", func(rs *Recorder) {
		hwtest.Eventually(t, 30*time.Second, "states of the arm that answers", func() bool { return rs.List()[0].Messages >= 50 })
		open()
		n := rs.List()[0].Messages
		hwtest.Eventually(t, 30*time.Second, "states of the late arm too", func() bool { return rs.List()[0].Messages >= n+50 })
	})
	drivers, err := Replay(f, 1, false)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range drivers {
		got = append(got, d.Info().ID)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("replayed in the order %v, want the service's %v", got, want)
	}
}

// handedDriver is an arm whose reported position says which handedness
// its firmware was set to at each exchange (y 0.1 m when left-handed), as
// a real arm's joint angles do.
type handedDriver struct {
	*replay.Device
	left      bool
	exchanges atomic.Int64
	leftNow   atomic.Bool
}

func (h *handedDriver) Configure(s hw.Settings) error {
	h.left = s.LeftHanded
	return nil
}

func (h *handedDriver) Exchange(cmd *hw.Command, st *hw.State) error {
	if err := h.Device.Exchange(cmd, st); err != nil {
		return err
	}
	st.PositionM.Y = 0
	if h.left {
		st.PositionM.Y = 0.1
	}
	h.leftNow.Store(h.left)
	h.exchanges.Add(1)
	return nil
}

// Each recorded state says the handedness in force when the loop read it,
// not the one in force when the recorder drained it (up to a drain period
// later, and more when the ring was full): the states before a change of
// handedness were recorded with the new one, and a replay derived their
// angles with it.
func TestRecordedHandednessIsTheTicks(t *testing.T) {
	svc := startBareService(t)
	info := sim.NewArm(sim.ArmOptions{}).Info()
	info.ID, info.UUID = "0A0A", "handed"
	drv := &handedDriver{Device: replay.New(replay.Options{Info: info, Samples: []replay.Sample{{Position: hw.Vec3{X: 0.01}}}})}
	dev, err := svc.AddDevice(drv, false)
	if err != nil {
		t.Fatal(err)
	}
	const toggles = 40
	f := recordOf(t, svc, "handed", func(rs *Recorder) {
		for i := range toggles {
			h, left := protocol.HandednessRight, i%2 == 0
			if left {
				h = protocol.HandednessLeft
			}
			if _, err := svc.SetEntry(dev, 0, h); err != nil {
				t.Fatal(err)
			}
			hwtest.Eventually(t, 30*time.Second, "the arm set to the new handedness", func() bool { return drv.leftNow.Load() == left })
			n := drv.exchanges.Load()
			hwtest.Eventually(t, 30*time.Second, "a few exchanges more", func() bool { return drv.exchanges.Load() >= n+3 })
		}
	})
	var states, wrong int
	for _, m := range MessagesOf(f, KindState)[dev.Name+"-"+dev.ID] {
		var st State
		if err := json.Unmarshal(m.Data, &st); err != nil {
			t.Fatal(err)
		}
		states++
		if leftThen := st.Position[1] > 0.05; st.LeftHanded != leftThen {
			wrong++
		}
	}
	if states < toggles*3 || wrong > 0 {
		t.Fatalf("%d of %d recorded states say another handedness than the arm had then (want 0 of at least %d)", wrong, states, toggles*3)
	}
}

// A replayed arm recorded left-handed is left-handed from the moment it is
// listed: it was listed right-handed and set left-handed after, so that a
// client listing the devices, or framing the arm, at once saw it
// right-handed first.
func TestReplayedArmListedWithItsHandedness(t *testing.T) {
	svc, err := actors.Start(actors.Options{Log: zerolog.Nop(), SimShards: 1, StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = svc.Shutdown(ctx)
	})
	const pos = `"position":[0.03,0.15,0.1],"velocity":[0,0,0],"force":[0,0,0]`
	f := recordedFile(
		`{"device":"0002","type":"arm3",`+pos+`}`,
		`{"device":"0001","type":"arm3","left_handed":true,`+pos+`}`,
	)
	drivers, err := Replay(f, 1, false)
	if err != nil {
		t.Fatal(err)
	}
	added := make(chan error, 1)
	go func() { added <- AddReplayed(svc, f, drivers) }()
	var first protocol.Handedness
	hwtest.Eventually(t, 30*time.Second, "the left-handed arm listed", func() bool {
		dev := svc.Devices().Find(protocol.TypeArm, "0001")
		if dev == nil {
			return false
		}
		first = dev.ViewFor(0).Config.Device.Handedness
		return true
	})
	if err := <-added; err != nil {
		t.Fatal(err)
	}
	if first != protocol.HandednessLeft {
		t.Fatalf("the arm recorded left-handed was listed %s-handed", first)
	}
	dev := svc.Devices().Find(protocol.TypeArm, "0001")
	if e, err := svc.Entry(dev, 0, protocol.KeyHandedness); err != nil || e != protocol.HandednessLeft {
		t.Fatalf("its handedness entry: %v (%v), want left", e, err)
	}
	if got := svc.Devices().Find(protocol.TypeArm, "0002").ViewFor(0).Config.Device.Handedness; got != protocol.HandednessRight {
		t.Fatalf("the arm recorded right-handed is %s-handed", got)
	}
}
