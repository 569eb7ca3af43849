package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A stop signal while a large simulated fleet is being added stops the
// start there: the process shuts down what it started, never logs ready
// and exits 0 promptly, instead of finishing the start (seconds for
// thousands of arms), announcing itself ready to a supervisor and only then
// stopping. The log says how far the start got, so the test knows the start
// was cut short whatever the machine's speed: a start that had finished
// would log ready and every device.
func TestStopSignalDuringStartStopsThere(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)
	const arms = 4000
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			cmd := exec.Command(bin, "serve", "--port", "0", "--legacy-port", "-1", "--events-port", "-1", "--log-format", "json",
				"--hw-scan-period", "0", "--state-dir", t.TempDir(), "--sim", fmt.Sprintf("inverse3=%d", arms))
			stderr, err := cmd.StderrPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			lines := make(chan string, 1024)
			go func() {
				sc := bufio.NewScanner(stderr)
				for sc.Scan() {
					lines <- sc.Text()
				}
				close(lines)
				exited <- cmd.Wait()
			}()
			t.Cleanup(func() {
				_ = cmd.Process.Kill()
				for range lines {
				}
				<-exited
			})
			var log []map[string]any
			next := func(deadline <-chan time.Time) (map[string]any, bool) {
				select {
				case l, ok := <-lines:
					if !ok {
						return nil, false
					}
					var m map[string]any
					if err := json.Unmarshal([]byte(l), &m); err != nil {
						t.Fatalf("log line is not JSON: %q", l)
					}
					log = append(log, m)
					return m, true
				case <-deadline:
					t.Fatalf("no log line in time; %d lines so far", len(log))
					return nil, false
				}
			}
			// The start is under way once the state directory is taken:
			// the devices are added after that line.
			for deadline := time.After(60 * time.Second); ; {
				m, ok := next(deadline)
				if !ok {
					t.Fatalf("exited before the start was under way: %v", log)
				}
				if m["message"] == "state directory" {
					break
				}
			}
			sent := time.Now()
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			for deadline := time.After(60 * time.Second); ; {
				if _, ok := next(deadline); !ok {
					break
				}
			}
			err = <-exited
			exited <- err // for the cleanup
			took := time.Since(sent)
			if err != nil {
				t.Errorf("exit after %v during the start: %v, want status 0", sig, err)
			}
			var stopping map[string]any
			stopped := false
			for _, m := range log {
				switch m["message"] {
				case "ready":
					t.Errorf("logged ready after %v during the start: %v", sig, m)
				case "shutting down before ready":
					stopping = m
				case "stopped":
					stopped = true
				}
			}
			if stopping == nil || !stopped {
				var msgs []string
				for _, m := range log {
					msgs = append(msgs, fmt.Sprint(m["message"]))
				}
				t.Fatalf("want a 'shutting down before ready' line and a 'stopped' line; logged: %q", msgs)
			}
			if stopping["signal"] != sig.String() {
				t.Errorf("shutting down line names signal %v, want %q", stopping["signal"], sig.String())
			}
			started, _ := stopping["started"].(string)
			var added, total int
			if _, err := fmt.Sscanf(started, "%d of %d", &added, &total); err != nil || total != arms || added >= arms {
				t.Errorf("the start was not cut short: started %q, want fewer than %d of %d devices", started, arms, arms)
			}
			// Generous: a stop that waited for the rest of the start would
			// still be caught by the checks above; this one catches a hang.
			if took > 30*time.Second {
				t.Errorf("exited %v after %v", took, sig)
			}
			t.Logf("%v after the start began: exited in %v, %s", sig, took.Round(time.Millisecond), strings.TrimSpace(started))
		})
	}
}
