//go:build !(linux || darwin || freebsd || openbsd)

package discovery

import "os"

// nodeIdentity tells one device node from another at the same path as far
// as the platform shows it: whether it is there, and when it changed. A
// Windows COM name is no file, so an explicit COM port never changes
// identity: only a scanned port that leaves the list has its backoff
// reset.
type nodeIdentity struct {
	present bool
	modNs   int64
}

// identify returns the identity of the node at path; the zero identity
// when there is none.
func identify(path string) nodeIdentity {
	fi, err := os.Stat(path)
	if err != nil {
		return nodeIdentity{}
	}
	return nodeIdentity{present: true, modNs: fi.ModTime().UnixNano()}
}
