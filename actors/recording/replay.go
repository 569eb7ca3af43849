package recording

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"sort"
	"strconv"

	"github.com/hapticd/hapticd/actors"
	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/hw/replay"
	"github.com/hapticd/hapticd/hw/sim"
	"github.com/hapticd/hapticd/protocol"
	"github.com/hapticd/hapticd/protocol/mcap"
)

// Load reads a recording. A file cut short (a killed service, a recording
// a full disk stopped, one still being written) or with a damaged chunk is
// read up to the cut or the damage: f holds what came before, and cut says
// why it ends there (an error wrapping mcap.ErrTruncated or
// mcap.ErrDamaged; nil for a whole file).
func Load(path string) (f *mcap.File, cut error, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("recording: %w", err)
	}
	f, err = mcap.Read(b)
	if errors.Is(err, mcap.ErrTruncated) || errors.Is(err, mcap.ErrDamaged) {
		return f, err, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("recording: %s: %w", path, err)
	}
	return f, nil, nil
}

// MessagesOf returns the messages of the channels of kind, by channel key,
// each in log-time order.
func MessagesOf(f *mcap.File, kind string) map[string][]mcap.Message {
	out := map[string][]mcap.Message{}
	for _, m := range f.Messages {
		c := f.Channels[m.ChannelID]
		if c.Metadata["kind"] == kind {
			out[c.Metadata["key"]] = append(out[c.Metadata["key"]], m)
		}
	}
	for _, ms := range out {
		sort.SliceStable(ms, func(i, j int) bool { return ms[i].LogTime < ms[j].LogTime })
	}
	return out
}

// Replay makes one virtual device per recorded arm and grip, playing its
// recorded states at speed (1: as recorded), from the start again at the
// end when loop is set. The devices come in the order the recording lists
// them (its state channels', the service's device order when it started),
// so a client's /arm3/0/... is the same arm in the replay.
func Replay(f *mcap.File, speed float64, loop bool) ([]hw.Driver, error) {
	states := MessagesOf(f, KindState)
	keys := stateKeysInOrder(f, states)
	var out []hw.Driver
	var identities identities
	for _, k := range keys {
		first, samples, err := samplesOf(states[k])
		if err != nil {
			return nil, fmt.Errorf("recording: state of %s: %w", k, err)
		}
		info, ok := identities.next(first)
		if !ok {
			continue // a device type this build cannot replay
		}
		out = append(out, replay.New(replay.Options{Info: info, Samples: samples, Speed: speed, Loop: loop}))
	}
	if len(out) == 0 {
		return nil, errors.New("recording: the recording holds no device states")
	}
	return out, nil
}

// AddReplayed adds the drivers Replay made of f to svc, in their order,
// each arm listed with the handedness it was recorded with first (unless
// svc has device-global entries stored for it).
func AddReplayed(svc *actors.Service, f *mcap.File, drivers []hw.Driver) error {
	left := LeftHandedAtStart(f)
	for _, d := range drivers {
		defaults := protocol.DefaultDeviceConfig()
		if left[d.Info().ID] {
			defaults.Handedness = protocol.HandednessLeft
		}
		if _, err := svc.AddDeviceWithDefaults(d, false, defaults); err != nil {
			return fmt.Errorf("replayed device %s: %w", d.Info().ID, err)
		}
	}
	return nil
}

// LeftHandedAtStart is the ids of the recorded arms whose first recorded
// state was left-handed: a replay sets their handedness entry so, as the
// recorded service's read (later changes show in the replayed angles).
func LeftHandedAtStart(f *mcap.File) map[string]bool {
	out := map[string]bool{}
	for _, ms := range MessagesOf(f, KindState) {
		var st State
		if json.Unmarshal(ms[0].Data, &st) == nil && !st.IsGrip() && st.LeftHanded {
			out[st.Device] = true
		}
	}
	return out
}

// stateKeysInOrder is the keys of states in the recording's device order:
// by their channels' "order" metadata (the device's place when the
// recorder attached to it), then, for channels without (files from before
// it was kept), by channel id (the writer numbers channels as it first
// writes to them).
func stateKeysInOrder(f *mcap.File, states map[string][]mcap.Message) []string {
	keys := make([]string, 0, len(states))
	channel := make(map[string]uint16, len(states))
	for k, ms := range states {
		keys = append(keys, k)
		channel[k] = ms[0].ChannelID
	}
	for id, c := range f.Channels {
		if k := c.Metadata["key"]; c.Metadata["kind"] == KindState && channel[k] > id {
			channel[k] = id // one key on two channels: its first
		}
	}
	const unplaced = math.MaxInt
	place := make(map[string]int, len(keys))
	for _, k := range keys {
		place[k] = unplaced
		if n, err := strconv.Atoi(f.Channels[channel[k]].Metadata["order"]); err == nil && n >= 0 {
			place[k] = n
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		switch {
		case place[a] != place[b]:
			return place[a] < place[b]
		case channel[a] != channel[b]:
			return channel[a] < channel[b]
		}
		return a < b
	})
	return keys
}

// samplesOf decodes one device's recorded states.
func samplesOf(ms []mcap.Message) (first State, samples []replay.Sample, err error) {
	samples = make([]replay.Sample, 0, len(ms))
	for i, m := range ms {
		var st State
		if err := json.Unmarshal(m.Data, &st); err != nil {
			return State{}, nil, err
		}
		if i == 0 {
			first = st
		}
		samples = append(samples, sample(int64(m.LogTime), &st))
	}
	return first, samples, nil
}

// sample is the replayed form of a recorded state. An arm's joint angles,
// joint speeds and body turn are not recorded: they are derived from the
// position and velocity as the simulated arm derives them, with the
// recorded handedness (right-handed in a file from before it was kept),
// so that a replayed arm's pose matches where it was.
func sample(timeNs int64, st *State) replay.Sample {
	vec := func(v [3]float64) hw.Vec3 { return hw.Vec3{X: v[0], Y: v[1], Z: v[2]} }
	q := st.Orientation
	smp := replay.Sample{TimeNs: timeNs, Status: hw.Status(st.Status),
		Position: vec(st.Position), Velocity: vec(st.Velocity), Force: vec(st.Force),
		Orientation: hw.Quat{W: q[0], X: q[1], Y: q[2], Z: q[3]},
		Buttons:     hw.Buttons(st.Buttons), Hall: st.Hall, Battery: st.Battery}
	if !st.IsGrip() {
		pose := hw.State{PositionM: smp.Position, VelocityMps: smp.Velocity}
		sim.DeriveArmState(&pose, st.LeftHanded)
		smp.AnglesDeg, smp.AngularVelocityDps, smp.BodyOrientation = pose.AnglesDeg, pose.AngularVelocityDps, pose.BodyOrientation
	}
	return smp
}

// identities numbers the replayed arms and grips as the simulation would.
type identities struct{ arms, grips int }

// next is the identity of a replayed device: a simulated device's gives
// the workspace, force limit and mass (a grip's link too); the recorded id
// is what clients address.
func (n *identities) next(first State) (hw.Info, bool) {
	var info hw.Info
	switch first.Type {
	case protocol.TypeArm.Key():
		// The recorded device type number names the family (a recording
		// from before it was kept has none: an Inverse3, as then).
		fam, err := sim.ParseFamily(protocol.FamilyOf(protocol.TypeArm, protocol.LinkAny, int(first.Model)).Name)
		if err != nil {
			fam = sim.FamilyInverse3
		}
		info = sim.NewDevice(fam, n.arms, sim.ArmOptions{}).Info()
		n.arms++
	case protocol.TypeGrip.Key():
		link := hw.LinkWireless
		if first.Link == hw.LinkWired.String() {
			link = hw.LinkWired
		}
		info = sim.NewGrip(sim.GripOptions{Index: n.grips, Link: link}).Info()
		n.grips++
	default:
		return hw.Info{}, false
	}
	info.ID, info.UUID, info.Port = first.Device, "replay-"+first.Device, ""
	// A replay has no physics for the loop to hold up: the recorded force
	// is what clients saw, without the feed-forward, and the loop would take
	// the simulated arm's feed-forward off it once more (-1.96 N in z).
	info.HostGravityCompensation = false
	return info, true
}
