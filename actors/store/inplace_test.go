package store

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// InPlace looks for a document's file only when this process found it on
// disk or wrote it: one never stored is the defaults a restart gives, and
// a caller holding it unchanged has nothing to write (a folder standing
// where it would go included: it holds no value of the document). A
// stored one removed by hand is to be written again, and a folder in its
// place is the error; a Delete, a corrupt file moved aside, or a Load
// that finds the file gone makes the document one never stored again.
func TestInPlaceLooksOnlyForADocumentStored(t *testing.T) {
	s := openTemp(t)
	inPlace := func(step, name string, want bool, wantFolder bool) {
		t.Helper()
		there, err := s.InPlace(name)
		if there != want || errors.Is(err, ErrFolderInPlace) != wantFolder || (err != nil && !wantFolder) {
			t.Errorf("%s: InPlace(%s) = %v, %v; want %v, folder error %v", step, name, there, err, want, wantFolder)
		}
	}
	inPlace("never stored", "a", true, false)
	if err := os.MkdirAll(filepath.Join(s.Dir(), "b.json", "notes"), 0o700); err != nil {
		t.Fatal(err)
	}
	inPlace("never stored, a folder in its place", "b", true, false)

	if err := s.Save("a", keepingDoc{A: 1}); err != nil {
		t.Fatal(err)
	}
	inPlace("written", "a", true, false)
	if err := os.Remove(s.path("a")); err != nil {
		t.Fatal(err)
	}
	inPlace("written, removed by hand", "a", false, false)
	if err := os.Mkdir(s.path("a"), 0o700); err != nil {
		t.Fatal(err)
	}
	inPlace("written, a folder in its place", "a", false, true)
	if err := os.Remove(s.path("a")); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete("a"); err != nil {
		t.Fatal(err)
	}
	inPlace("deleted", "a", true, false)

	writeRaw(t, s.path("c"), []byte(`{"a": 2}`))
	if found, err := s.Load("c", new(keepingDoc)); !found || err != nil {
		t.Fatalf("Load: %v %v", found, err)
	}
	if err := os.Remove(s.path("c")); err != nil {
		t.Fatal(err)
	}
	inPlace("read, removed by hand", "c", false, false)
	if found, err := s.Load("c", new(keepingDoc)); found || err != nil {
		t.Fatalf("Load of a file removed by hand: %v %v", found, err)
	}
	// Its caller runs on the defaults now, as a restart would: nothing to
	// write for them.
	inPlace("read, removed by hand, read again", "c", true, false)

	writeRaw(t, s.path("d"), []byte(`{"a": `))
	var ce *CorruptError
	if _, err := s.Load("d", new(keepingDoc)); !errors.As(err, &ce) || ce.MovedTo == "" {
		t.Fatalf("Load of a torn file: %v, want it moved aside", err)
	}
	inPlace("corrupt, moved aside", "d", true, false)
}
