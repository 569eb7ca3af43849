package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// probe writes size bytes to a new temp file in dir and removes it: dir
// takes such a file now. A probe file whose removal fails (on Windows a
// virus scanner opens each new file for a moment) does not fail the check,
// which the folder passed: it is removed at dir's next probe, before a new
// one is made, and by the next Open otherwise. One that still cannot be
// removed then fails the check, and no new one is made: the service may
// make files there but not remove them, as it must to replace a document.
// So a scanner's hold fails no check, and a lasting refusal leaves no more
// than one file a folder.
func (s *Store) probe(dir string, size int) error {
	remove := os.Remove
	if s.remove != nil {
		remove = s.remove
	}
	s.eachMu.Lock()
	left := s.probes[dir]
	s.eachMu.Unlock()
	for _, p := range left {
		if err := remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove probe file: %w", err)
		}
		s.forgetProbe(dir, p)
	}

	f, err := os.CreateTemp(dir, ".probe"+tempMarker+"*")
	if err != nil {
		return err
	}
	var werr error
	if size > 0 {
		_, werr = f.Write(make([]byte, size))
	}
	err = errors.Join(werr, f.Close())
	if rerr := remove(f.Name()); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
		s.eachMu.Lock()
		if s.probes == nil {
			s.probes = map[string][]string{}
		}
		s.probes[dir] = append(s.probes[dir], f.Name())
		s.eachMu.Unlock()
	}
	return err
}

// forgetProbe drops path from dir's probe files left.
func (s *Store) forgetProbe(dir, path string) {
	s.eachMu.Lock()
	defer s.eachMu.Unlock()
	left := s.probes[dir]
	for i, p := range left {
		if p == path {
			left = append(left[:i:i], left[i+1:]...)
			break
		}
	}
	if len(left) == 0 {
		delete(s.probes, dir)
	} else {
		s.probes[dir] = left
	}
}
