package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/websocket"
	"github.com/rs/zerolog"

	"github.com/hapticd/hapticd/actors/recording"
	"github.com/hapticd/hapticd/protocol/mcap"
)

// The replay and export subcommands: flags here, the work in
// actors/recording.

// loadRecording reads a recording, saying so when it was cut short or is
// damaged.
func loadRecording(path string) (*mcap.File, error) {
	f, cut, err := recording.Load(path)
	if err != nil {
		return nil, err
	}
	switch {
	case errors.Is(cut, mcap.ErrDamaged):
		fmt.Fprintf(os.Stderr, "hapticd: %s is damaged (%v): using the %d chunks before the damage\n", path, cut, f.Chunks)
	case cut != nil:
		fmt.Fprintf(os.Stderr, "hapticd: %s has no end (a killed service, a recording a full disk or a refused write stopped, or one still recording it): using its %d complete chunks\n", path, f.Chunks)
	}
	return f, nil
}

// parseWithFile parses flags given before or after the one FILE argument.
func parseWithFile(fs *flag.FlagSet, args []string) (string, error) {
	if err := parseFlagSet(fs, args); err != nil {
		return "", err
	}
	if fs.NArg() == 0 {
		return "", fmt.Errorf("%s needs a recording FILE (see %s -h)", fs.Name(), fs.Name())
	}
	file := fs.Arg(0)
	if rest := fs.Args()[1:]; len(rest) > 0 {
		if err := parseFlagSet(fs, rest); err != nil {
			return "", err
		}
		if fs.NArg() > 0 {
			return "", fmt.Errorf("unexpected argument %q", fs.Arg(0))
		}
	}
	return file, nil
}

// replayFlags are the flags of hapticd replay.
type replayFlags struct {
	speed      *float64
	loop       *bool
	drive      *string
	driveOld   *string
	tol        *float64
	forceTol   *float64
	angleTol   *float64
	relTol     *float64
	ignore     *string
	window     *time.Duration
	port       *int
	legacyPort *int
	eventsPort *int
	logFormat  *string
	typeNames  *string
}

// defaultDriveIgnore is what --drive leaves out unless told otherwise: an
// arm's state that it integrates over ticks (where each command fell
// between ticks moves it; so the passivity energy, and the damping its
// controller adds, which switches on that energy), and a grip's orientation, buttons, hall and
// battery: a grip has no actuator, so re-sent messages cannot reproduce
// them (a simulated grip's scripted hand, or another hand on a real one,
// moves them).
const defaultDriveIgnore = "cursor_position,cursor_velocity,angular_position,angular_velocity,body_orientation," +
	"passivity,orientation,buttons,button,hall,battery_level"

func newReplayFlags(fs *flag.FlagSet) replayFlags {
	return replayFlags{
		speed:      fs.Float64("speed", 1, "playback speed of the recorded timeline (2: twice as fast)"),
		loop:       fs.Bool("loop", false, "start over at the end of the recording instead of holding the last state"),
		drive:      fs.String("drive", "", "instead of serving: re-send the recorded sessions' client messages to the service at this WebSocket URL (ws://127.0.0.1:10001/) and compare its frames with the recorded ones"),
		driveOld:   fs.String("drive-legacy", "", "with --drive: the service's 3.0 WebSocket (ws://127.0.0.1:10000/), where the sessions recorded on the 3.0 WebSocket are re-sent"),
		tol:        fs.Float64("tolerance", 0.01, "with --drive: a number in a frame may differ by this much (m, m/s, N, deg...) plus --relative-tolerance of its recorded value"),
		forceTol:   fs.Float64("force-tolerance", 0.1, "with --drive: --tolerance for forces (N)"),
		angleTol:   fs.Float64("angle-tolerance", 2, "with --drive: --tolerance for angles (deg), which move far more per tick than metres"),
		ignore:     fs.String("ignore", defaultDriveIgnore, "with --drive: frame keys not compared, comma-separated; by default the state a device integrates over ticks, which follows where each command fell between ticks, and a grip's state, which a hand moves and no client message does (\"\" compares everything)"),
		relTol:     fs.Float64("relative-tolerance", 0.2, "with --drive: a number may also differ by this fraction of its recorded value (velocities follow each tick's timing)"),
		window:     fs.Duration("window", 20*time.Millisecond, "with --drive: a frame may match any recorded frame this close in recorded time (a command lands a tick earlier or later)"),
		port:       fs.Int("port", 10001, "3.x HTTP and simulation WebSocket port (0: a free port)"),
		legacyPort: fs.Int("legacy-port", -1, "legacy 3.0 API port (negative: off)"),
		eventsPort: fs.Int("events-port", -1, "events WebSocket port (negative: off)"),
		logFormat:  fs.String("log-format", "console", "console or json"),
		typeNames:  fs.String("type-names", "haply", "device-type names written: haply or reference"),
	}
}

func runReplay(args []string) error {
	fs := newFlagSet("replay")
	fl := newReplayFlags(fs)
	file, err := parseWithFile(fs, args)
	if err != nil {
		return err
	}
	if s := *fl.speed; s <= 0 || math.IsInf(s, 0) || math.IsNaN(s) {
		return fmt.Errorf("--speed %v must be a positive number", s)
	}
	f, err := loadRecording(file)
	if err != nil {
		return err
	}
	if *fl.drive != "" {
		return driveRecording(f, fl, os.Stdout)
	}
	return serveReplay(f, file, fl)
}

// driveRecording re-sends the recording's sessions to --drive and fails
// when a frame differs beyond tolerance.
func driveRecording(f *mcap.File, fl replayFlags, out io.Writer) error {
	url := *fl.drive
	d := recording.Drive{
		Dial: func() (recording.FrameConn, error) { return dialFrames(url) },
		Tolerance: recording.Tolerance{Abs: *fl.tol, Force: *fl.forceTol, Angle: *fl.angleTol, Rel: *fl.relTol,
			Ignore: strings.Split(*fl.ignore, ",")},
		Window: *fl.window,
		Report: out,
	}
	if legacy := *fl.driveOld; legacy != "" {
		d.DialLegacy = func() (recording.FrameConn, error) { return dialFrames(legacy) }
	}
	diffs, err := d.Run(f)
	if err != nil {
		return err
	}
	if diffs > 0 {
		return fmt.Errorf("%d differences beyond tolerance", diffs)
	}
	return nil
}

// serveReplay runs a service whose only devices are the recording's.
func serveReplay(f *mcap.File, file string, fl replayFlags) error {
	drivers, err := recording.Replay(f, *fl.speed, *fl.loop)
	if err != nil {
		return err
	}
	stateDir, err := os.MkdirTemp("", "hapticd-replay-")
	if err != nil {
		return err
	}
	var log zerolog.Logger
	defer func() {
		if kept := removeReplayState(stateDir); kept != "" {
			log.Warn().Str("dir", kept).Msg("replay: the recordings made during the replay are kept here; move them before this temporary directory is cleared")
		}
	}()
	o, err := parseFlags([]string{"--sim-arms", "0", "--sim-grips", "0", "--hw-scan-period", "0", "--state-dir", stateDir,
		"--port", strconv.Itoa(*fl.port), "--legacy-port", strconv.Itoa(*fl.legacyPort), "--events-port", strconv.Itoa(*fl.eventsPort),
		"--log-format", *fl.logFormat, "--type-names", *fl.typeNames})
	if err != nil {
		return err
	}
	if log, err = newLogger(o.logLevel, o.logFormat, os.Stderr); err != nil {
		return err
	}
	return serveUntilSignal(o, log, func(sv *service) error {
		if err := recording.AddReplayed(sv.svc, f, drivers); err != nil {
			return err
		}
		log.Info().Str("file", file).Float64("speed", *fl.speed).Msg("replaying")
		return nil
	})
}

// removeReplayState removes a replay's throw-away state directory, but not
// the recordings a client made on the replayed service (POST /recordings
// writes them into its recordings/): the service never removes a
// recording's file (docs/recording.md). It returns the directory kept for
// them, "" when none was made.
func removeReplayState(stateDir string) (kept string) {
	recs := filepath.Join(stateDir, "recordings")
	if entries, err := os.ReadDir(recs); err == nil && len(entries) > 0 {
		all, _ := os.ReadDir(stateDir)
		for _, e := range all {
			if e.Name() != "recordings" {
				_ = os.RemoveAll(filepath.Join(stateDir, e.Name()))
			}
		}
		return recs
	}
	_ = os.RemoveAll(stateDir)
	return ""
}

// wsFrames is a WebSocket client as recording.Drive uses it.
type wsFrames struct{ conn *websocket.Conn }

func dialFrames(url string) (recording.FrameConn, error) {
	conn, _, err := websocket.DefaultDialer.Dial(url, nil)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", url, err)
	}
	return wsFrames{conn}, nil
}

func (w wsFrames) Send(msg []byte) error { return w.conn.WriteMessage(websocket.TextMessage, msg) }

func (w wsFrames) Receive(timeout time.Duration) ([]byte, error) {
	_ = w.conn.SetReadDeadline(time.Now().Add(timeout))
	_, b, err := w.conn.ReadMessage()
	return b, err
}

// Close ends the session as a client that means to: a close frame, then
// the service's close in answer (what is still in flight before it is
// read and dropped), at most a second each, then the connection. Closing
// the connection alone, the re-driven session ended as a dropped client
// (read_error, 1001) in the service's closed sessions and events, and in a
// recording made of the re-drive. Closing twice costs nothing more.
func (w wsFrames) Close() error {
	deadline := time.Now().Add(time.Second)
	if err := w.conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), deadline); err == nil {
		_ = w.conn.SetReadDeadline(deadline.Add(time.Second))
		for {
			if _, _, err := w.conn.ReadMessage(); err != nil {
				break
			}
		}
	}
	return w.conn.Close()
}

func runExport(args []string, stdout io.Writer) error {
	fs := newFlagSet("export")
	format := fs.String("format", "jsonl", "jsonl (every message, one JSON object a line) or csv (device states, one row each; a grip's orientation, buttons, hall and battery in the last columns)")
	file, err := parseWithFile(fs, args)
	if err != nil {
		return err
	}
	export := map[string]func(*mcap.File, io.Writer) error{"jsonl": recording.ExportJSONL, "csv": recording.ExportCSV}[*format]
	if export == nil {
		return fmt.Errorf("--format %q: want csv or jsonl", *format)
	}
	f, err := loadRecording(file)
	if err != nil {
		return err
	}
	return export(f, stdout)
}
