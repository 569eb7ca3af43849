package transport

import (
	"os"
	"os/exec"
	"testing"
)

// A client written in another language (Python, Debian's python3-websockets)
// runs a lock-step loop (at least 2000 ticks and half a second) against the
// real service.
func TestPythonLockstepClient(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a Python client")
	}
	python := pythonWithWebsockets()
	if python == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("no python3 with the websockets module; .ci/run installs python3-websockets")
		}
		t.Skip("python3-websockets not installed (apt-get install python3-websockets)")
	}
	ts := startService(t, serviceConfig{arms: 1})
	out, err := exec.Command(python, "testdata/lockstep.py", ts.wsURL(), "2000").CombinedOutput()
	if err != nil {
		t.Fatalf("python client failed: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}

// pythonWithWebsockets finds an interpreter that can import websockets: the
// one on PATH (which may be a pyenv without Debian's packages), then the
// system one that Debian's python3-websockets installs into.
func pythonWithWebsockets() string {
	for _, p := range []string{"python3", "/usr/bin/python3"} {
		if exec.Command(p, "-c", "import websockets").Run() == nil {
			return p
		}
	}
	return ""
}
