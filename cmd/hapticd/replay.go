package main

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/websocket"

	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/hw/replay"
	"github.com/hapticd/hapticd/hw/sim"
	"github.com/hapticd/hapticd/protocol"
	"github.com/hapticd/hapticd/protocol/mcap"
	"github.com/hapticd/hapticd/transport"
)

// loadRecording reads a recording; a file cut short (a killed service) is
// used up to its last complete chunk.
func loadRecording(path string) (*mcap.File, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	f, err := mcap.Read(b)
	if err != nil && !errors.Is(err, mcap.ErrTruncated) {
		return nil, err
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "hapticd: %s was cut short (a killed service?): using its %d complete chunks\n", path, f.Chunks)
	}
	return f, nil
}

// messagesOf returns the messages of the channels whose metadata kind is
// kind, by channel key, in log-time order.
func messagesOf(f *mcap.File, kind string) map[string][]mcap.Message {
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

// parseWithFile parses flags given before or after the one FILE argument.
func parseWithFile(fs *flag.FlagSet, args []string) (string, error) {
	if err := fs.Parse(args); err != nil {
		return "", err
	}
	if fs.NArg() == 0 {
		return "", fmt.Errorf("%s needs a recording FILE (see %s -h)", fs.Name(), fs.Name())
	}
	file := fs.Arg(0)
	if rest := fs.Args()[1:]; len(rest) > 0 {
		if err := fs.Parse(rest); err != nil {
			return "", err
		}
		if fs.NArg() > 0 {
			return "", fmt.Errorf("unexpected argument %q", fs.Arg(0))
		}
	}
	return file, nil
}

func runReplay(args []string) error {
	fs := newFlagSet("replay")
	speed := fs.Float64("speed", 1, "playback speed of the recorded timeline (2: twice as fast)")
	loopPlay := fs.Bool("loop", false, "start over at the end of the recording instead of holding the last state")
	drive := fs.String("drive", "", "instead of serving: re-send the recorded sessions' client messages to the service at this WebSocket URL (ws://127.0.0.1:10001/) and compare its frames with the recorded ones")
	tol := fs.Float64("tolerance", 0.01, "with --drive: a number in a frame may differ by this much (m, m/s, N, deg...) plus --relative-tolerance of its recorded value")
	forceTol := fs.Float64("force-tolerance", 0.1, "with --drive: --tolerance for forces (N)")
	angleTol := fs.Float64("angle-tolerance", 2, "with --drive: --tolerance for angles (deg), which move far more per tick than metres")
	ignore := fs.String("ignore", "cursor_position,cursor_velocity,angular_position,angular_velocity,body_orientation", "with --drive: frame keys not compared, comma-separated; by default the state a device integrates over ticks, which follows where each command fell between ticks (\"\" compares everything)")
	relTol := fs.Float64("relative-tolerance", 0.2, "with --drive: a number may also differ by this fraction of its recorded value (velocities follow each tick's timing)")
	window := fs.Duration("window", 20*time.Millisecond, "with --drive: a frame may match any recorded frame this close in recorded time (a command lands a tick earlier or later)")
	port := fs.Int("port", 10001, "3.x HTTP and simulation WebSocket port (0: a free port)")
	legacyPort := fs.Int("legacy-port", -1, "legacy 3.0 API port (negative: off)")
	eventsPort := fs.Int("events-port", -1, "events WebSocket port (negative: off)")
	logFormat := fs.String("log-format", "console", "console or json")
	typeNames := fs.String("type-names", "haply", "device-type names written: haply or reference")
	file, err := parseWithFile(fs, args)
	if err != nil {
		return err
	}
	if *speed <= 0 || math.IsInf(*speed, 0) || math.IsNaN(*speed) {
		return fmt.Errorf("--speed %v must be a positive number", *speed)
	}
	f, err := loadRecording(file)
	if err != nil {
		return err
	}
	if *drive != "" {
		diffs, err := driveRecording(f, *drive, tolerance{abs: *tol, force: *forceTol, angle: *angleTol, rel: *relTol, ignore: strings.Split(*ignore, ",")}, *window, os.Stdout)
		if err != nil {
			return err
		}
		if diffs > 0 {
			return fmt.Errorf("%d differences beyond tolerance", diffs)
		}
		return nil
	}
	stateDir, err := os.MkdirTemp("", "hapticd-replay-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(stateDir)
	o, err := parseFlags([]string{"--sim-arms", "0", "--sim-grips", "0", "--hw-scan-period", "0", "--state-dir", stateDir,
		"--port", strconv.Itoa(*port), "--legacy-port", strconv.Itoa(*legacyPort), "--events-port", strconv.Itoa(*eventsPort),
		"--log-format", *logFormat, "--type-names", *typeNames})
	if err != nil {
		return err
	}
	log, err := newLogger(o.logLevel, o.logFormat, os.Stderr)
	if err != nil {
		return err
	}
	drivers, err := replayDrivers(f, *speed, *loopPlay)
	if err != nil {
		return err
	}
	return serveUntilSignal(o, log, func(sv *service) error {
		for _, d := range drivers {
			if _, err := sv.svc.AddDevice(d, false); err != nil {
				return fmt.Errorf("replayed device %s: %w", d.Info().ID, err)
			}
		}
		log.Info().Str("file", file).Float64("speed", *speed).Msg("replaying")
		return nil
	})
}

// replayDrivers makes one replayed device per recorded arm and grip.
func replayDrivers(f *mcap.File, speed float64, loopPlay bool) ([]hw.Driver, error) {
	var out []hw.Driver
	states := messagesOf(f, transport.RecordKindState)
	keys := make([]string, 0, len(states))
	for k := range states {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	arms, grips := 0, 0
	for _, k := range keys {
		var samples []replay.Sample
		var first transport.RecordedState
		for i, m := range states[k] {
			var st transport.RecordedState
			if err := json.Unmarshal(m.Data, &st); err != nil {
				return nil, fmt.Errorf("replay: state of %s: %w", k, err)
			}
			if i == 0 {
				first = st
			}
			q := st.Orientation
			samples = append(samples, replay.Sample{TimeNs: int64(m.LogTime), Status: hw.Status(st.Status),
				Position:    hw.Vec3{X: st.Position[0], Y: st.Position[1], Z: st.Position[2]},
				Velocity:    hw.Vec3{X: st.Velocity[0], Y: st.Velocity[1], Z: st.Velocity[2]},
				Force:       hw.Vec3{X: st.Force[0], Y: st.Force[1], Z: st.Force[2]},
				Orientation: hw.Quat{W: q[0], X: q[1], Y: q[2], Z: q[3]},
				Buttons:     hw.Buttons(st.Buttons), Hall: st.Hall, Battery: st.Battery})
		}
		// A simulated device's identity gives the workspace, force limit
		// and mass (a grip's link too); the recorded id is what clients
		// address.
		var info hw.Info
		switch first.Type {
		case protocol.TypeArm.Key():
			info = sim.NewArm(sim.ArmOptions{Index: arms}).Info()
			arms++
		case protocol.TypeGrip.Key():
			link := hw.LinkWireless
			if first.Link == hw.LinkWired.String() {
				link = hw.LinkWired
			}
			info = sim.NewGrip(sim.GripOptions{Index: grips, Link: link}).Info()
			grips++
		default:
			continue
		}
		info.ID, info.UUID, info.Port = first.Device, "replay-"+first.Device, ""
		out = append(out, replay.New(replay.Options{Info: info, Samples: samples, Speed: speed, Loop: loopPlay}))
	}
	if len(out) == 0 {
		return nil, errors.New("replay: the recording holds no device states")
	}
	return out, nil
}

// driveRecording re-sends each recorded session's client messages to url,
// one at a time as the client did (a frame answers each) and on the
// recorded timeline, and compares every frame with the recorded one, or
// the closest recorded frame within window of it (the service's ticks do
// not fall where they fell when recording). It prints a report and
// returns the number of differences beyond tol.
func driveRecording(f *mcap.File, url string, tol tolerance, window time.Duration, out io.Writer) (int, error) {
	in, frames := messagesOf(f, transport.RecordKindClient), messagesOf(f, transport.RecordKindFrame)
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
		return 0, errors.New("replay: the recording holds no session")
	}
	total := 0
	for _, s := range sessions {
		conn, _, err := websocket.DefaultDialer.Dial(url, nil)
		if err != nil {
			return total, fmt.Errorf("replay: dial %s: %w", url, err)
		}
		var diffs []string
		fr := frames[s]
		decoded := make([]any, len(fr))
		for i, m := range fr {
			var rec transport.RecordedMessage
			if err := json.Unmarshal(m.Data, &rec); err != nil {
				return total, fmt.Errorf("replay: recorded frame: %w", err)
			}
			_ = json.Unmarshal(rec.Message, &decoded[i])
		}
		// Later frames may match the inventory's state too (a command that
		// lands a tick later than recorded): without the parts only the
		// inventory carries.
		inventoryState := stripInventory(decoded[0])
		next := func(n int) error {
			_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
			_, got, err := conn.ReadMessage()
			if err != nil {
				return fmt.Errorf("replay: session %s: read frame: %w", s, err)
			}
			var g any
			if err := json.Unmarshal(got, &g); err != nil {
				diffs = append(diffs, fmt.Sprintf("frame %d is not JSON: %s", n, got))
				return nil
			}
			if n == 0 { // the inventory answers the connection, not a tick
				compareJSON("inventory", decoded[0], g, tol, &diffs)
				return nil
			}
			var best []string
			for i := n; i >= 0 && fr[n].LogTime-fr[i].LogTime <= uint64(window); i-- {
				cand := decoded[i]
				if i == 0 {
					cand = inventoryState
				}
				var d []string
				compareJSON(fmt.Sprintf("frame %d", n), cand, g, tol, &d)
				if best == nil || len(d) < len(best) {
					best = d
				}
				if len(best) == 0 {
					return nil
				}
			}
			for i := n + 1; i < len(fr) && fr[i].LogTime-fr[n].LogTime <= uint64(window); i++ {
				var d []string
				compareJSON(fmt.Sprintf("frame %d", n), decoded[i], g, tol, &d)
				if len(d) < len(best) {
					best = d
				}
				if len(best) == 0 {
					return nil
				}
			}
			diffs = append(diffs, best...)
			return nil
		}
		err = next(0) // the inventory
		n := 1
		start, t0 := time.Now(), int64(0)
		if len(in[s]) > 0 {
			t0 = int64(in[s][0].LogTime)
		}
		for i := 0; err == nil && i < len(in[s]) && n < len(fr); i++ {
			var rec transport.RecordedMessage
			if err = json.Unmarshal(in[s][i].Data, &rec); err != nil {
				break
			}
			msg := []byte(rec.Message)
			var str string
			if json.Unmarshal(rec.Message, &str) == nil {
				msg = []byte(str) // recorded as a string: it was not JSON
			}
			// On the recorded timeline: as many ticks pass between two
			// messages as did when recording.
			if wait := time.Duration(int64(in[s][i].LogTime)-t0) - time.Since(start); wait > 0 {
				time.Sleep(wait)
			}
			if err = conn.WriteMessage(websocket.TextMessage, msg); err != nil {
				break
			}
			err = next(n)
			n++
		}
		_ = conn.Close()
		if err != nil {
			return total, err
		}
		fmt.Fprintf(out, "session %s: %d client messages re-sent, %d frames compared, %d differences beyond tolerance (%g, angles %g, + %g×value)\n", s, n-1, n, len(diffs), tol.abs, tol.angle, tol.rel)
		for i, d := range diffs {
			if i == 20 {
				fmt.Fprintf(out, "  ... and %d more\n", len(diffs)-20)
				break
			}
			fmt.Fprintf(out, "  %s\n", d)
		}
		total += len(diffs)
	}
	return total, nil
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
		if devs, ok := v.([]any); ok {
			var ds []any
			for _, d := range devs {
				dm, ok := d.(map[string]any)
				if !ok {
					ds = append(ds, d)
					continue
				}
				c := map[string]any{}
				for dk, dv := range dm {
					if dk != "config" {
						c[dk] = dv
					}
				}
				ds = append(ds, c)
			}
			v = ds
		}
		out[k] = v
	}
	return out
}

// tolerance is how far a number may be from its recorded value: abs plus
// rel times the value.
type tolerance struct {
	abs, force, angle, rel float64
	ignore                 []string
}

// compareJSON appends where got differs from want: a missing or extra
// key, another string or bool, a number off by more than tol. session_id
// differs by nature and is not compared.
func compareJSON(at string, want, got any, tol tolerance, diffs *[]string) {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			*diffs = append(*diffs, fmt.Sprintf("%s: recorded an object, got %v", at, got))
			return
		}
		for k, wv := range w {
			if k == "session_id" || slices.Contains(tol.ignore, k) {
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
			if _, ok := w[k]; !ok {
				*diffs = append(*diffs, fmt.Sprintf("%s.%s: not in the recording", at, k))
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
		abs := tol.abs
		switch {
		case strings.Contains(at, "angular"):
			abs = tol.angle
		case strings.Contains(at, "force"):
			abs = tol.force
		}
		if !ok || math.Abs(g-w) > abs+tol.rel*math.Abs(w) {
			*diffs = append(*diffs, fmt.Sprintf("%s: recorded %v, got %v", at, w, got))
		}
	default:
		if fmt.Sprint(want) != fmt.Sprint(got) {
			*diffs = append(*diffs, fmt.Sprintf("%s: recorded %v, got %v", at, want, got))
		}
	}
}

func runExport(args []string, stdout io.Writer) error {
	fs := newFlagSet("export")
	format := fs.String("format", "jsonl", "jsonl (every message, one JSON object a line) or csv (device states, one row each; a grip's orientation, buttons, hall and battery in the last columns)")
	file, err := parseWithFile(fs, args)
	if err != nil {
		return err
	}
	if *format != "jsonl" && *format != "csv" {
		return fmt.Errorf("--format %q: want csv or jsonl", *format)
	}
	f, err := loadRecording(file)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(stdout)
	if *format == "jsonl" {
		for _, m := range f.Messages {
			c := f.Channels[m.ChannelID]
			line, _ := json.Marshal(struct {
				Topic     string          `json:"topic"`
				LogTimeNs uint64          `json:"log_time_ns"`
				Sequence  uint32          `json:"sequence"`
				Data      json.RawMessage `json:"data"`
			}{c.Topic, m.LogTime, m.Sequence, m.Data})
			_, _ = w.Write(append(line, '\n'))
		}
		return w.Flush()
	}
	cw := csv.NewWriter(w)
	_ = cw.Write(strings.Split("topic,log_time_ns,device,type,tick,mode,owner,px,py,pz,vx,vy,vz,fx,fy,fz,target_x,target_y,target_z,qw,qx,qy,qz,buttons,hall,battery", ","))
	g := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	for _, m := range f.Messages {
		c := f.Channels[m.ChannelID]
		if c.Metadata["kind"] != transport.RecordKindState {
			continue
		}
		var st transport.RecordedState
		if err := json.Unmarshal(m.Data, &st); err != nil {
			return fmt.Errorf("export: %s: %w", c.Topic, err)
		}
		_ = cw.Write([]string{c.Topic, strconv.FormatUint(m.LogTime, 10), st.Device, st.Type, strconv.FormatUint(st.Tick, 10),
			strconv.Itoa(st.Mode), strconv.FormatUint(st.Owner, 10),
			g(st.Position[0]), g(st.Position[1]), g(st.Position[2]), g(st.Velocity[0]), g(st.Velocity[1]), g(st.Velocity[2]),
			g(st.Force[0]), g(st.Force[1]), g(st.Force[2]), g(st.Target[0]), g(st.Target[1]), g(st.Target[2]),
			g(st.Orientation[0]), g(st.Orientation[1]), g(st.Orientation[2]), g(st.Orientation[3]),
			strconv.Itoa(int(st.Buttons)), g(st.Hall), g(st.Battery)})
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return err
	}
	return w.Flush()
}
