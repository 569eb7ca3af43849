package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// The echo baseline runs in a process of its own, as hapticd does: a
// loopback round trip between two processes costs several times one inside
// a process (scheduling, context switches), and a baseline that skipped
// that cost would charge it to hapticd.

// ServeEcho is the child side: it serves the frames in the two files until
// stdin closes (the parent exits or closes it), after printing its URL as
// the first line on out.
func ServeEcho(inventoryFile, stateFile string, in io.Reader, out io.Writer) error {
	inv, err := os.ReadFile(inventoryFile)
	if err != nil {
		return fmt.Errorf("bench: echo inventory: %w", err)
	}
	state, err := os.ReadFile(stateFile)
	if err != nil {
		return fmt.Errorf("bench: echo state frame: %w", err)
	}
	e, err := startEcho(capturedFrames{inventory: inv, state: state})
	if err != nil {
		return err
	}
	defer e.close()
	if _, err := fmt.Fprintln(out, e.url); err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, in) // until the parent closes stdin
	return nil
}

// echoProcess is a running child echo server.
type echoProcess struct {
	url   string
	cmd   *exec.Cmd
	stdin io.Closer
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
	p := &echoProcess{cmd: cmd, stdin: stdin, dir: dir}
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			line <- sc.Text()
		}
		close(line)
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case url, ok := <-line:
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
