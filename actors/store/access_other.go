//go:build !unix

package store

// checkFolder reports whether the service may make files in the folder
// dir: where there is no access(2) that tells (Windows' ACLs), an empty
// file is created in it and removed (probe: a removal a virus scanner
// holds up fails no check and leaves no file for long).
func (s *Store) checkFolder(dir string) error { return s.probe(dir, 0) }
