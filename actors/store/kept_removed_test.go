package store

import (
	"errors"
	"os"
	"strings"
	"testing"
)

// A file removed by hand, found gone by InPlace (an unchanged POST's
// check), is written again without the members the removed file had that
// this build did not know, as after a Load that finds it gone: they went
// with the file. They came back with it before.
func TestFileRemovedByHandIsWrittenWithoutItsKept(t *testing.T) {
	const name = "settings"
	s := openTemp(t)
	writeRaw(t, s.path(name), []byte(`{"future": 1, "a": 1}`))
	if found, err := s.Load(name, new(keepingDoc)); !found || err != nil {
		t.Fatalf("Load: %v %v", found, err)
	}
	if err := os.Remove(s.path(name)); err != nil {
		t.Fatal(err)
	}
	if there, err := s.InPlace(name); there || err != nil {
		t.Fatalf("InPlace: %v %v", there, err)
	}
	// What confirmThen / changeSetting do next: write the value again.
	if err := s.Save(name, keepingDoc{A: 1}); err != nil {
		t.Fatal(err)
	}
	if got := fileMembers(t, s.path(name)); strings.Contains(got, "future") {
		t.Errorf("the file removed by hand is written again with its unknown members: %s", got)
	}
}

// Over MaxKept, removing the file (the simplest way out of the refusal)
// lifts the refusal at once: the next write is stored. Every write was
// refused before, naming a file that is not there, until a restart.
func TestOverCapFileRemovedByHandIsWrittenAgain(t *testing.T) {
	const name = "settings"
	s := openTemp(t)
	big := strings.Repeat("x", MaxKept+1)
	writeRaw(t, s.path(name), []byte(`{"future": "`+big+`", "a": 1}`))
	if found, err := s.Load(name, new(keepingDoc)); !found || err != nil {
		t.Fatalf("Load: %v %v", found, err)
	}
	if err := os.Remove(s.path(name)); err != nil {
		t.Fatal(err)
	}
	s.InPlace(name)
	if err := s.Save(name, keepingDoc{A: 1}); errors.Is(err, ErrKeptTooLarge) {
		t.Errorf("the file is gone, yet its write is refused: %v", err)
	}
}
