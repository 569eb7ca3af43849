package hwtest

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestProcess is the test binary run again as another process for one
// test: the other side of a test that needs a second process (a second
// service holding a port, clients whose memory must not be counted). The
// test it runs talks to its parent by lines on its stdin and stdout, and
// ends when its stdin closes.
type TestProcess struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string // its stdout, closed when it ends
}

// StartTestProcess runs the test named test (matched exactly) of this test
// binary in another process, with env added to this one's environment.
// When t ends its stdin is closed and t waits for it to exit.
func StartTestProcess(t testing.TB, test string, env ...string) *TestProcess {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &TestProcess{cmd: cmd, stdin: stdin, lines: make(chan string, 16)}
	go func() {
		defer close(p.lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			p.lines <- strings.TrimSpace(sc.Text())
		}
	}()
	t.Cleanup(func() {
		_ = stdin.Close()
		p.wait()
	})
	return p
}

// Expect fails t unless the process's next line is want, said within the
// given time (a Windows test binary under Wine takes seconds to start).
func (p *TestProcess) Expect(t testing.TB, want string, within time.Duration) {
	t.Helper()
	select {
	case line, ok := <-p.lines:
		if !ok {
			t.Fatalf("the test process ended before saying %q", want)
		}
		if line != want {
			t.Fatalf("the test process said %q; want %q", line, want)
		}
	case <-time.After(within):
		t.Fatalf("the test process did not say %q within %v", want, within)
	}
}

// Send writes line to the process's stdin.
func (p *TestProcess) Send(t testing.TB, line string) {
	t.Helper()
	if _, err := io.WriteString(p.stdin, line+"\n"); err != nil {
		t.Fatal(err)
	}
}

// Lines is the process's stdout, a line at a time, for a test that reads
// more than Expect does; closed when the process ends.
func (p *TestProcess) Lines() <-chan string { return p.lines }

// Signal sends sig to the process: SIGSTOP and SIGCONT stop it and let it
// go on, as a paused VM or a starved host would.
func (p *TestProcess) Signal(sig os.Signal) error { return p.cmd.Process.Signal(sig) }

// Kill ends the process at once, as a crash would, and waits for it to be
// gone.
func (p *TestProcess) Kill(t testing.TB) {
	t.Helper()
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	p.wait()
}

// wait reads the process's output to its end, then reaps it.
func (p *TestProcess) wait() {
	for range p.lines {
	}
	_ = p.cmd.Wait()
}
