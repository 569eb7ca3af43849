//go:build linux

package bench

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// allowedList reads a task's Cpus_allowed_list from /proc.
func allowedList(t *testing.T, statusPath string) string {
	t.Helper()
	b, err := os.ReadFile(statusPath)
	if err != nil {
		t.Fatalf("read %s: %v", statusPath, err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatalf("%s has no Cpus_allowed_list", statusPath)
	return ""
}

func twoCPUs(t *testing.T) []int {
	t.Helper()
	cpus, err := allowedCPUs()
	if err != nil {
		t.Fatal(err)
	}
	if len(cpus) < 2 {
		t.Skipf("this process may use only CPUs %v: placement cannot be told from none", cpus)
	}
	return cpus
}

// TestStartOnLimitsTheChildAndNotTheParent: a server started on a CPU
// runs on it alone, and the thread that started it gets its own CPUs back.
func TestStartOnLimitsTheChildAndNotTheParent(t *testing.T) {
	cpus := twoCPUs(t)
	before := allowedList(t, "/proc/thread-self/status")
	last := cpus[len(cpus)-1]
	cmd := exec.Command("sleep", "30")
	if err := startOn(cmd, []int{last}); err != nil {
		t.Fatalf("startOn: %v", err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	if got, want := allowedList(t, fmt.Sprintf("/proc/%d/status", cmd.Process.Pid)), fmt.Sprint(last); got != want {
		t.Errorf("child's CPUs = %s, want %s", got, want)
	}
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		t.Fatal(err)
	}
	if set.Count() != len(cpus) {
		t.Errorf("after startOn this thread may use %d CPUs, want its %d back (was %s)", set.Count(), len(cpus), before)
	}
}

// TestPinSelfLimitsEveryThreadAndRestores: the clients' side is every
// thread of this process, and restore gives each its CPUs back.
func TestPinSelfLimitsEveryThreadAndRestores(t *testing.T) {
	cpus := twoCPUs(t)
	restore, err := pinSelf(cpus[:1])
	if err != nil {
		t.Fatalf("pinSelf: %v", err)
	}
	tasks, _ := filepath.Glob("/proc/self/task/*/status")
	for _, st := range tasks {
		if got := allowedList(t, st); got != fmt.Sprint(cpus[0]) {
			t.Errorf("%s: CPUs %s after pinSelf, want %d", st, got, cpus[0])
		}
	}
	restore()
	tasks, _ = filepath.Glob("/proc/self/task/*/status")
	for _, st := range tasks {
		if got := allowedList(t, st); got == fmt.Sprint(cpus[0]) {
			t.Errorf("%s: still limited to CPU %s after restore", st, got)
		}
	}
}

// TestStartOnGivesAPinnedChildOnePPerCPU: a server limited to fewer CPUs
// than this process's GOMAXPROCS runs with one P per CPU it may use (as Go
// would choose under taskset), hapticd and the echo alike; an unlimited
// child keeps this process's GOMAXPROCS.
func TestStartOnGivesAPinnedChildOnePPerCPU(t *testing.T) {
	cpus := twoCPUs(t)
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("GOMAXPROCS is 1 here: one CPU cannot get fewer")
	}
	for _, tc := range []struct {
		name string
		cpus []int
		want string
	}{
		{"one CPU", cpus[:1], "1"},
		{"not limited", nil, strconv.Itoa(runtime.GOMAXPROCS(0))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out strings.Builder
			cmd := exec.Command("sh", "-c", `echo "$GOMAXPROCS"`)
			cmd.Env = childEnv()
			cmd.Stdout = &out
			if err := startOn(cmd, tc.cpus); err != nil {
				t.Fatalf("startOn: %v", err)
			}
			if err := cmd.Wait(); err != nil {
				t.Fatalf("child: %v", err)
			}
			if got := strings.TrimSpace(out.String()); got != tc.want {
				t.Errorf("child's GOMAXPROCS = %q, want %q", got, tc.want)
			}
		})
	}
}
