package recording

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/hw/replay"
	"github.com/hapticd/hapticd/hw/sim"
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
