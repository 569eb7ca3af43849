package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/hapticd/hapticd/bench/echoserver"
)

// The echo baseline runs in a process of its own, as hapticd does: a
// loopback round trip between two processes costs several times one inside
// a process (scheduling, context switches), and a baseline that skipped
// that cost would charge it to hapticd.

// ServeEcho is the child side: it serves the frames in the two files until
// stdin closes (the parent exits or closes it), after printing its URL as
// the first line on out.
func ServeEcho(inventoryFile, stateFile string, in io.Reader, out io.Writer) error {
	e, err := echoserver.StartFiles(inventoryFile, stateFile, out)
	if err != nil {
		return fmt.Errorf("bench: echo: %w", err)
	}
	defer e.Close()
	_, _ = io.Copy(io.Discard, in) // until the parent closes stdin
	return nil
}

// echoProcess is a running child echo server.
type echoProcess struct {
	url   string
	cmd   *exec.Cmd
	stdin io.WriteCloser
	// lines are the lines it printed after its URL (a bare loop's JSON).
	lines <-chan string
	dir   string
}

// startEchoProcess runs command (the hapticbench binary and its echo
// subcommand) on cpus (nil: any) with the frames in temp files and waits
// for its URL.
func startEchoProcess(ctx context.Context, command []string, frames capturedFrames, cpus []int) (*echoProcess, error) {
	dir, err := os.MkdirTemp("", "hapticbench-echo-")
	if err != nil {
		return nil, fmt.Errorf("bench: echo process: %w", err)
	}
	invFile, stateFile := filepath.Join(dir, "inventory.json"), filepath.Join(dir, "state.json")
	if err := os.WriteFile(invFile, frames.inventory, 0o600); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("bench: echo process: %w", err)
	}
	if err := os.WriteFile(stateFile, frames.state, 0o600); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("bench: echo process: %w", err)
	}
	args := append(append([]string(nil), command[1:]...), "--inventory", invFile, "--state", stateFile)
	cmd := exec.CommandContext(ctx, command[0], args...)
	cmd.Stderr = os.Stderr
	cmd.Env = childEnv() // the same GOMAXPROCS as hapticd
	stdin, err := cmd.StdinPipe()
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("bench: echo process: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("bench: echo process: %w", err)
	}
	if err := startOn(cmd, cpus); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("bench: start echo process %s: %w", command[0], err)
	}
	lines := make(chan string, 4)
	p := &echoProcess{cmd: cmd, stdin: stdin, dir: dir, lines: lines}
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			default: // nobody asked for more lines: dropped
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case url, ok := <-lines:
		if !ok || !strings.HasPrefix(url, "ws://") {
			p.close()
			return nil, fmt.Errorf("bench: echo process printed no URL (got %q)", url)
		}
		p.url = url
	case <-time.After(10 * time.Second):
		p.close()
		return nil, fmt.Errorf("bench: echo process did not start within 10 s")
	}
	return p, nil
}

// bareLoop asks an echo process that is `hapticd baseline-arms` to step
// its arms (a line on its stdin) and reads the result it prints after d.
func (p *echoProcess) bareLoop(ctx context.Context, d time.Duration) (BareLoop, error) {
	if _, err := io.WriteString(p.stdin, "go\n"); err != nil {
		return BareLoop{}, fmt.Errorf("bench: start the bare loop: %w", err)
	}
	timeout := time.NewTimer(d + 30*time.Second)
	defer timeout.Stop()
	select {
	case line, ok := <-p.lines:
		if !ok {
			return BareLoop{}, errors.New("bench: the bare loop's process ended without a result")
		}
		var b BareLoop
		if err := json.Unmarshal([]byte(line), &b); err != nil {
			return BareLoop{}, fmt.Errorf("bench: the bare loop printed no JSON object (%w): %s", err, clip([]byte(line), 200))
		}
		return b, nil
	case <-timeout.C:
		return BareLoop{}, fmt.Errorf("bench: the bare loop printed no result within %s", d+30*time.Second)
	case <-ctx.Done():
		return BareLoop{}, ctx.Err()
	}
}

func (p *echoProcess) close() {
	_ = p.stdin.Close()
	done := make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = p.cmd.Process.Kill()
		<-done
	}
	os.RemoveAll(p.dir)
}
