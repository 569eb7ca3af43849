package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// fakeSystem puts stand-ins for the account, udev and systemd tools first
// on PATH: each appends its command line to calls.log, and getent knows
// only the users and groups given. The maintainer scripts then run for real
// without touching this machine.
func fakeSystem(t *testing.T, known ...string) (env []string, calls func() []string) {
	t.Helper()
	dir := t.TempDir()
	log := filepath.Join(dir, "calls.log")
	record := "#!/bin/sh\necho \"$(basename \"$0\") $*\" >> " + log + "\n"
	for _, tool := range []string{"groupadd", "useradd", "usermod", "userdel", "groupdel", "install", "rm", "udevadm", "systemctl"} {
		if err := os.WriteFile(filepath.Join(dir, tool), []byte(record), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	getent := record + "case \" " + strings.Join(known, " ") + " \" in *\" $1:$2 \"*) exit 0;; esac\nexit 2\n"
	if err := os.WriteFile(filepath.Join(dir, "getent"), []byte(getent), 0o755); err != nil {
		t.Fatal(err)
	}
	env = append(os.Environ(), "PATH="+dir+":/usr/bin:/bin")
	return env, func() []string {
		b, err := os.ReadFile(log)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		return strings.Split(strings.TrimSpace(string(b)), "\n")
	}
}

func runScript(t *testing.T, env []string, name string, args ...string) {
	t.Helper()
	cmd := exec.Command("/bin/sh", append([]string{filepath.Join("..", "..", "packaging", "linux", name)}, args...)...)
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", name, err, out)
	}
}

func contains(calls []string, want string) bool {
	for _, c := range calls {
		if c == want {
			return true
		}
	}
	return false
}

// On a fresh system the post-install script creates the hapticd group and
// system user, puts the user in the groups the udev rules grant the devices
// to (creating plugdev where the distribution has none), and gives it the
// state directory.
func TestPostinstallCreatesTheServiceAccount(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the maintainer scripts are Linux shell scripts")
	}
	env, calls := fakeSystem(t, "group:dialout")
	runScript(t, env, "postinstall.sh", "configure")
	got := calls()
	for _, want := range []string{
		"groupadd --system hapticd",
		"useradd --system --gid hapticd --home-dir /var/lib/hapticd --no-create-home --shell /usr/sbin/nologin --comment hapticd haptic device service hapticd",
		"usermod --append --groups dialout hapticd",
		"groupadd --system plugdev",
		"usermod --append --groups plugdev hapticd",
		"install -d -o hapticd -g hapticd -m 0750 /var/lib/hapticd",
	} {
		if !contains(got, want) {
			t.Errorf("postinstall did not run %q; it ran:\n%s", want, strings.Join(got, "\n"))
		}
	}
	if contains(got, "groupadd --system dialout") {
		t.Error("postinstall re-created the existing dialout group")
	}
}

// An upgrade finds the account in place and creates nothing twice.
func TestPostinstallOnUpgradeCreatesNothing(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the maintainer scripts are Linux shell scripts")
	}
	env, calls := fakeSystem(t, "group:hapticd", "passwd:hapticd", "group:dialout", "group:plugdev")
	runScript(t, env, "postinstall.sh", "configure", "0.1.0-1")
	for _, c := range calls() {
		if strings.HasPrefix(c, "groupadd") || strings.HasPrefix(c, "useradd") {
			t.Errorf("upgrade ran %q", c)
		}
	}
}

// Removing the package keeps the lab's configuration and account; a purge
// removes both.
func TestPostremoveKeepsStateUnlessPurged(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the maintainer scripts are Linux shell scripts")
	}
	env, calls := fakeSystem(t, "group:hapticd", "passwd:hapticd")
	runScript(t, env, "postremove.sh", "remove")
	if got := calls(); contains(got, "userdel hapticd") {
		t.Errorf("remove deleted the user: %q", got)
	}
	runScript(t, env, "postremove.sh", "purge")
	if got := calls(); !contains(got, "userdel hapticd") || !contains(got, "groupdel hapticd") || !contains(got, "rm -rf /var/lib/hapticd") {
		t.Errorf("purge kept the account: %q", got)
	}
}

// Where systemd does not run (a container, a chroot) the post-install
// script says the service was not started and how to run it, instead of
// nothing (tourinst: apt printed "Setting up hapticd" and the service was
// silently not there).
func TestPostinstallWithoutSystemdSaysSo(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the maintainer scripts are Linux shell scripts")
	}
	if _, err := os.Stat("/run/systemd/system"); err == nil {
		t.Skip("systemd runs here: the script takes its other branch")
	}
	env, calls := fakeSystem(t, "group:hapticd", "passwd:hapticd", "group:dialout", "group:plugdev")
	cmd := exec.Command("/bin/sh", filepath.Join("..", "..", "packaging", "linux", "postinstall.sh"), "configure")
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("postinstall: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "neither enabled nor started") || !strings.Contains(string(out), "/usr/bin/hapticd --state-dir=/var/lib/hapticd") {
		t.Errorf("postinstall without systemd printed %q; want that the service was not started and how to run it", out)
	}
	for _, c := range calls() {
		if strings.HasPrefix(c, "systemctl") {
			t.Errorf("postinstall ran %q without systemd", c)
		}
	}
}
