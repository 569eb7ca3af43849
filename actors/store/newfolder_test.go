package store

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// A Save into a folder is durable only once the folder's own entry in its
// parent is: a power loss can otherwise take the folder, and the document
// acknowledged in it, with it. Two Saves of different documents into one
// new folder (a profile's session document and its entries on a device, a
// second device's entries) run at once, each under its own name's lock:
// the second must not be answered while the first's fsync of the parent,
// which makes the folder durable, has not completed. Neither must a Save
// into a folder a killed process created and never fsynced into its
// parent (the folder is there after a SIGKILL: the page cache survives).
func TestSaveIntoAFolderNotYetDurableWaitsForItsParentsSync(t *testing.T) {
	s := openTemp(t)
	parent := filepath.Join(s.Dir(), "profiles.v2")
	folder := filepath.Join(parent, "h")

	var mu sync.Mutex
	held := make(chan struct{})
	release := make(chan struct{})
	first := true
	parentSynced := false // a fsync of parent, begun once folder existed, completed
	s.syncDir = func(dir string) error {
		if dir != parent {
			return SyncDir(dir)
		}
		_, statErr := os.Stat(folder)
		mu.Lock()
		hold := first
		first = false
		mu.Unlock()
		if hold {
			close(held)
			<-release // the first Save's fsync of the parent: a slow disk
		}
		err := SyncDir(dir)
		if err == nil && statErr == nil {
			mu.Lock()
			parentSynced = true
			mu.Unlock()
		}
		return err
	}

	firstDone := make(chan error, 1)
	go func() { firstDone <- s.Save("profiles.v2/h/session", deviceDoc{Handedness: "left"}) }()
	select {
	case <-held:
	case <-time.After(10 * time.Second):
		t.Fatal("the first Save never fsynced the new folder's parent")
	}
	secondDone := make(chan error, 1)
	go func() { secondDone <- s.Save("profiles.v2/h/arm3-0001", deviceDoc{Scale: 2}) }()
	var secondErr error
	answered := false
	select {
	case secondErr = <-secondDone:
		answered = true
		err := secondErr
		mu.Lock()
		synced := parentSynced
		mu.Unlock()
		if err == nil && !synced {
			t.Errorf("the second Save into %s was answered durable while the folder's entry in %s was not fsynced yet (the first Save's fsync of it still under way): a power loss now can lose the folder with the acknowledged document", folder, parent)
		}
	case <-time.After(2 * time.Second):
		// Waiting on the first Save's fsync is durable too.
	}
	close(release)
	if err := <-firstDone; err != nil {
		t.Fatal(err)
	}
	if !answered {
		secondErr = <-secondDone
	}
	if secondErr != nil {
		t.Fatal(secondErr)
	}

	// A folder left by a process killed between its mkdir and the fsync of
	// its parent.
	s2 := openTemp(t)
	left := filepath.Join(s2.Dir(), "devices")
	if err := os.Mkdir(left, 0o700); err != nil {
		t.Fatal(err)
	}
	var syncedRoot bool
	s2.syncDir = func(dir string) error {
		if dir == s2.Dir() {
			syncedRoot = true
		}
		return SyncDir(dir)
	}
	if err := s2.Save("devices/arm3-0001", deviceDoc{Scale: 1}); err != nil {
		t.Fatal(err)
	}
	if !syncedRoot {
		t.Errorf("a Save into %s, a folder this process did not make durable, returned without fsyncing %s, which holds its entry", left, s2.Dir())
	}
}

// Open makes a state directory that is not there yet durable: the entry of
// each folder it creates is fsynced in its parent, so that the documents
// acknowledged in it do not vanish with it at a power loss.
func TestOpenMakesANewStateDirectoryDurable(t *testing.T) {
	base := t.TempDir()
	var synced []string
	syncDir := func(dir string) error {
		synced = append(synced, dir)
		return SyncDir(dir)
	}
	if _, err := open(filepath.Join(base, "a", "state"), syncDir); err != nil {
		t.Fatal(err)
	}
	want := []string{base, filepath.Join(base, "a")}
	if fmt.Sprint(synced) != fmt.Sprint(want) {
		t.Errorf("Open of a new state directory fsynced %v, want the parents of the folders it made, %v", synced, want)
	}
	synced = nil
	if _, err := open(filepath.Join(base, "a", "state"), syncDir); err != nil {
		t.Fatal(err)
	}
	if len(synced) != 0 {
		t.Errorf("Open of a state directory that is there fsynced %v, want nothing", synced)
	}
}
