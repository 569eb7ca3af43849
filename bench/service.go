package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hapticd/hapticd/protocol"
)

// hapticdPackage is what `go build` builds when no binary is found.
const hapticdPackage = "github.com/hapticd/hapticd/cmd/hapticd"

// FindHapticd returns the hapticd binary to start: explicit if given, else
// `hapticd` next to the running executable, else on $PATH, else one built
// with `go build` into a temporary directory (which cleanup removes). The
// build needs the working directory inside the hapticd module.
func FindHapticd(ctx context.Context, explicit string) (path string, cleanup func(), err error) {
	nothing := func() {}
	if explicit != "" {
		if _, err := os.Stat(explicit); err != nil {
			return "", nothing, fmt.Errorf("bench: hapticd binary %s: %w", explicit, err)
		}
		return explicit, nothing, nil
	}
	if exe, err := os.Executable(); err == nil {
		next := filepath.Join(filepath.Dir(exe), "hapticd")
		if st, err := os.Stat(next); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return next, nothing, nil
		}
	}
	if p, err := exec.LookPath("hapticd"); err == nil {
		return p, nothing, nil
	}
	dir, err := os.MkdirTemp("", "hapticbench-build-")
	if err != nil {
		return "", nothing, fmt.Errorf("bench: temp dir for building hapticd: %w", err)
	}
	cleanup = func() { os.RemoveAll(dir) }
	out := filepath.Join(dir, "hapticd")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, hapticdPackage)
	if msg, err := cmd.CombinedOutput(); err != nil {
		cleanup()
		return "", nothing, fmt.Errorf("bench: no hapticd next to hapticbench or on $PATH, and `go build %s` failed (%w): %s; pass --hapticd PATH or run from the hapticd module",
			hapticdPackage, err, strings.TrimSpace(string(msg)))
	}
	return out, cleanup, nil
}

// ServiceOptions are the flags a started hapticd gets.
type ServiceOptions struct {
	Binary   string
	Arms     int
	LoopHz   float64
	Motion   string        // --sim-motion; empty: hapticd's default
	Extra    []string      // more flags (e.g. --hw-port)
	ReadyIn  time.Duration // how long to wait for "ready"; default 60 s
	LogLines int           // recent log lines kept for error messages; default 40
	CPUs     []int         // CPUs the service may run on; nil: any (Placement)
}

// service is a hapticd process this run started.
type service struct {
	cmd      *exec.Cmd
	stateDir string
	httpBase string // http://host:port
	wsURL    string // ws://host:port/
	exited   chan struct{}
	waitErr  error

	mu   sync.Mutex // guards the following
	tail []string
}

// startService starts hapticd on free ports with a fresh state directory
// and waits for its "ready" line.
func startService(ctx context.Context, o ServiceOptions) (*service, error) {
	if o.ReadyIn <= 0 {
		o.ReadyIn = 60 * time.Second
	}
	if o.LogLines <= 0 {
		o.LogLines = 40
	}
	dir, err := os.MkdirTemp("", "hapticbench-state-")
	if err != nil {
		return nil, fmt.Errorf("bench: state dir: %w", err)
	}
	args := []string{"--port", "0", "--legacy-port", "-1", "--events-port", "0",
		"--sim-arms", strconv.Itoa(o.Arms), "--sim-grips", "0",
		// hapticd takes whole hertz.
		"--loop-hz", strconv.Itoa(int(math.Round(o.LoopHz))),
		"--state-dir", dir, "--log-format", "json"}
	if o.Motion != "" {
		args = append(args, "--sim-motion", o.Motion)
	}
	args = append(args, o.Extra...)
	s := &service{stateDir: dir, exited: make(chan struct{})}
	s.cmd = exec.Command(o.Binary, args...)
	s.cmd.Env = childEnv()
	stdout, err := s.cmd.StdoutPipe()
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("bench: hapticd stdout: %w", err)
	}
	stderr, err := s.cmd.StderrPipe()
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("bench: hapticd stderr: %w", err)
	}
	if err := startOn(s.cmd, o.CPUs); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("bench: start %s: %w", o.Binary, err)
	}
	ready := make(chan struct{})
	var once sync.Once
	var pipes sync.WaitGroup
	for _, r := range []io.Reader{stdout, stderr} {
		pipes.Add(1)
		go func() {
			defer pipes.Done()
			s.readLog(r, o.LogLines, func() { once.Do(func() { close(ready) }) })
		}()
	}
	go func() {
		pipes.Wait() // Wait must not run before the pipes are drained
		s.waitErr = s.cmd.Wait()
		close(s.exited)
	}()

	timer := time.NewTimer(o.ReadyIn)
	defer timer.Stop()
	select {
	case <-ready:
	case <-s.exited:
		os.RemoveAll(dir)
		return nil, fmt.Errorf("bench: hapticd exited before ready (%v); its last log lines:\n%s", s.waitErr, s.logTail())
	case <-timer.C:
		s.stop()
		return nil, fmt.Errorf("bench: hapticd not ready within %s; its last log lines:\n%s", o.ReadyIn, s.logTail())
	case <-ctx.Done():
		s.stop()
		return nil, ctx.Err()
	}
	s.mu.Lock()
	ok := s.httpBase != ""
	s.mu.Unlock()
	if !ok {
		s.stop()
		return nil, fmt.Errorf("bench: hapticd said ready without logging its \"http\" listener address; its last log lines:\n%s", s.logTail())
	}
	return s, nil
}

// readLog scans JSON log lines for listener addresses and "ready".
func (s *service) readLog(r io.Reader, keep int, onReady func()) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var entry struct {
			Listener string `json:"listener"`
			Addr     string `json:"addr"`
			Message  string `json:"message"`
		}
		s.mu.Lock()
		if len(s.tail) >= keep {
			s.tail = s.tail[1:]
		}
		s.tail = append(s.tail, string(line))
		if json.Unmarshal(bytes.TrimSpace(line), &entry) == nil {
			if entry.Listener == "http" && entry.Addr != "" && s.httpBase == "" {
				addr := strings.TrimPrefix(strings.TrimPrefix(entry.Addr, "http://"), "ws://")
				addr = strings.TrimSuffix(addr, "/")
				s.httpBase = "http://" + addr
				s.wsURL = "ws://" + addr + "/"
			}
		}
		s.mu.Unlock()
		if entry.Message == "ready" {
			onReady()
		}
	}
}

func (s *service) logTail() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.tail, "\n")
}

// stop asks hapticd to shut down, kills it if it has not exited within
// 15 s, and removes its state directory.
func (s *service) stop() error {
	defer os.RemoveAll(s.stateDir)
	select {
	case <-s.exited:
		return fmt.Errorf("bench: hapticd had already exited (%v); its last log lines:\n%s", s.waitErr, s.logTail())
	default:
	}
	_ = s.cmd.Process.Signal(os.Interrupt)
	timer := time.NewTimer(15 * time.Second)
	defer timer.Stop()
	select {
	case <-s.exited:
		return nil
	case <-timer.C:
		_ = s.cmd.Process.Kill()
		<-s.exited
		return errors.New("bench: hapticd did not exit within 15 s of SIGINT and was killed")
	}
}

// BareLoop is the output of `hapticd baseline-arms`: the same simulated
// arms stepped in one paced loop with no service around them.
type BareLoop = protocol.BaselineArms

// runBareLoop runs `hapticd baseline-arms` and reads its JSON.
// With effects (its --effects, e.g. "wall,damper") every arm renders them.
func runBareLoop(ctx context.Context, binary string, arms int, loopHz float64, d time.Duration, motion, effects string) (BareLoop, error) {
	return runBareLoopOn(ctx, nil, binary, arms, loopHz, d, motion, effects)
}

// runBareLoopOn is runBareLoop on cpus (nil: any).
func runBareLoopOn(ctx context.Context, cpus []int, binary string, arms int, loopHz float64, d time.Duration, motion, effects string) (BareLoop, error) {
	args := []string{"baseline-arms", "--arms", strconv.Itoa(arms),
		"--loop-hz", strconv.FormatFloat(loopHz, 'f', -1, 64), "--duration", d.String(), "--json"}
	if motion != "" {
		args = append(args, "--motion", motion)
	}
	if effects != "" {
		args = append(args, "--effects", effects)
	}
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env = childEnv()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := startOn(cmd, cpus)
	if err == nil {
		err = cmd.Wait()
	}
	out := stdout.Bytes()
	if err != nil {
		return BareLoop{}, fmt.Errorf("bench: %s baseline-arms: %w: %s", binary, err, strings.TrimSpace(stderr.String()))
	}
	var b BareLoop
	if err := json.Unmarshal(bytes.TrimSpace(out), &b); err != nil {
		return BareLoop{}, fmt.Errorf("bench: %s baseline-arms printed no JSON object (%w): %s", binary, err, clip(out, 200))
	}
	return b, nil
}

// childEnv is this process's environment with GOMAXPROCS pinned to this
// process's value, so hapticd, the echo baseline and the bare loop all run
// with the same number of Ps whatever the machine's default.
func childEnv() []string {
	return append(os.Environ(), "GOMAXPROCS="+strconv.Itoa(runtime.GOMAXPROCS(0)))
}
