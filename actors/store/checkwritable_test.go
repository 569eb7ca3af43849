package store

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A "/*" prefix stands for the folders in it shaped as HashName's output
// only: any other folder there (an operator's backup copy, made as root)
// is not the service's, and is neither checked nor named (review59).
func TestCheckWritableChecksOnlyHashNamedFolders(t *testing.T) {
	hash := HashName("co.example:main")
	for _, tc := range []struct {
		folder  string
		checked bool
	}{
		{hash, true},
		{HashName(""), true},
		{"backup-before-upgrade", false},
		{hash[:31], false},
		{hash + "0", false},
		{strings.ToUpper(hash), false},
		{"." + hash[1:], false},
		{hash[:31] + "g", false},
		{"0123456789abcdef0123456789abcdeF", false},
	} {
		t.Run(tc.folder, func(t *testing.T) {
			if got := IsHashName(tc.folder); got != tc.checked {
				t.Errorf("IsHashName(%q) = %v, want %v", tc.folder, got, tc.checked)
			}
			s := openTemp(t)
			dir := filepath.Join(s.dir, "profiles.v2", tc.folder)
			if err := os.MkdirAll(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			var asked []string
			s.access = func(d string) error {
				asked = append(asked, d)
				if d == dir {
					return syscall.EACCES
				}
				return nil
			}
			err := s.CheckWritable("devices", "profiles.v2", "profiles.v2/*")
			if got := slices.Contains(asked, dir); got != tc.checked {
				t.Errorf("%s checked: %v, want %v (asked %q)", tc.folder, got, tc.checked, asked)
			}
			if tc.checked && (err == nil || !strings.Contains(err.Error(), dir+" (permission denied)")) {
				t.Errorf("CheckWritable = %v; want it to name %s", err, dir)
			}
			if !tc.checked && err != nil {
				t.Errorf("CheckWritable with a folder not the service's refused = %v; want nil", err)
			}
		})
	}
}

// The folders a "/*" stands for are checked at most once a second: a call
// within that reuses the last pass's result, as does a call while a pass
// is under way; the folders named one by one are checked at every call.
func TestCheckWritableRechecksEachFolderOnceASecond(t *testing.T) {
	s := openTemp(t)
	clock := time.Unix(1e9, 0)
	s.now = func() time.Time { return clock }
	devices := filepath.Join(s.dir, "devices")
	profile := filepath.Join(s.dir, "profiles.v2", HashName("p"))
	for _, d := range []string{devices, profile} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	refuse := map[string]bool{}
	passes := 0
	var block chan struct{}
	entered := make(chan struct{}, 1)
	s.access = func(d string) error {
		if d == profile {
			passes++
			if block != nil {
				entered <- struct{}{}
				<-block
			}
		}
		if refuse[d] {
			return syscall.EACCES
		}
		return nil
	}
	folders := []string{"devices", "profiles.v2", "profiles.v2/*"}
	if err := s.CheckWritable(folders...); err != nil || passes != 1 {
		t.Fatalf("first CheckWritable = %v, %d passes", err, passes)
	}
	refuse[profile], refuse[devices] = true, true
	clock = clock.Add(foldersRecheck - time.Millisecond)
	err := s.CheckWritable(folders...)
	if err == nil || !strings.Contains(err.Error(), devices) || strings.Contains(err.Error(), profile) || passes != 1 {
		t.Errorf("CheckWritable within the second = %v after %d passes; want devices named at once, the profile's folder not yet (1 pass)", err, passes)
	}
	delete(refuse, devices)
	clock = clock.Add(time.Millisecond)
	err = s.CheckWritable(folders...)
	if err == nil || !strings.Contains(err.Error(), profile+" (permission denied)") || strings.Contains(err.Error(), devices) || passes != 2 {
		t.Errorf("CheckWritable a second on = %v after %d passes; want the profile's folder named (2 passes)", err, passes)
	}

	// A call while a pass is under way reuses the last result.
	delete(refuse, profile)
	clock = clock.Add(foldersRecheck)
	block = make(chan struct{})
	done := make(chan error)
	go func() { done <- s.CheckWritable(folders...) }()
	<-entered
	if err := s.CheckWritable(folders...); err == nil || !strings.Contains(err.Error(), profile) {
		t.Errorf("CheckWritable during a pass = %v; want the last pass's result", err)
	}
	close(block)
	if err := <-done; err != nil {
		t.Errorf("the pass = %v; want nil", err)
	}
	block = nil
	if err := s.CheckWritable(folders...); err != nil || passes != 3 {
		t.Errorf("CheckWritable after the pass = %v, %d passes; want its result, 3 passes", err, passes)
	}
}

// A folder of hashed names that cannot be listed is reported with the
// other refusals, not instead of them.
func TestCheckWritableReportsAnUnlistedFolderWithTheOthers(t *testing.T) {
	s := openTemp(t)
	devices := filepath.Join(s.dir, "devices")
	if err := os.Mkdir(devices, 0o700); err != nil {
		t.Fatal(err)
	}
	profiles := filepath.Join(s.dir, "profiles.v2")
	writeRaw(t, profiles, []byte("a file where a folder should be"))
	s.access = func(d string) error {
		if d == devices {
			return syscall.EACCES
		}
		return nil
	}
	err := s.CheckWritable("devices", "profiles.v2/*")
	if !errors.Is(err, syscall.EACCES) || !errors.Is(err, syscall.ENOTDIR) ||
		!strings.Contains(err.Error(), devices+" (permission denied)") || !strings.Contains(err.Error(), profiles+" (cannot list its folders: ") {
		t.Errorf("CheckWritable = %v; want devices and profiles.v2 both named", err)
	}
}

// A probe file whose removal fails (a virus scanner holding it) fails no
// check: it is removed at the next; one that cannot be removed then fails
// the check, and no new one is made.
func TestCheckWritableRemovesAProbeFileLeftAtTheNextCheck(t *testing.T) {
	for _, tc := range []struct {
		name      string
		failures  int // removals refused
		wantLater bool
	}{
		{"held for a moment", 1, false},
		{"held for good", 1 << 30, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := openTemp(t)
			fails := tc.failures
			s.remove = func(p string) error {
				if fails > 0 {
					fails--
					return syscall.EACCES
				}
				return os.Remove(p)
			}
			probes := func() []string {
				m, _ := filepath.Glob(filepath.Join(s.dir, ".probe"+tempMarker+"*"))
				return m
			}
			if err := s.CheckWritable(); err != nil {
				t.Fatalf("CheckWritable with the probe's removal refused = %v; want nil", err)
			}
			if p := probes(); len(p) != 1 {
				t.Fatalf("probe files %q, want the one left", p)
			}
			for i := 0; i < 3; i++ {
				err := s.CheckWritable()
				if got := err != nil; got != tc.wantLater || (got && !strings.Contains(err.Error(), "remove probe file")) {
					t.Errorf("CheckWritable %d = %v; want an error: %v", i+2, err, tc.wantLater)
				}
			}
			want := 0
			if tc.wantLater {
				want = 1
			}
			if p := probes(); len(p) != want {
				t.Errorf("probe files %q, want %d", p, want)
			}
		})
	}
}
