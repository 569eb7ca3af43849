//go:build !(linux || darwin || freebsd || openbsd)

package discovery

import "os"

// nodeIdentity is only whether a port's path is there: this platform
// shows no node identity the watcher can trust not to move with use.
type nodeIdentity struct {
	present bool
}

// identify says whether path is there.
func identify(path string) nodeIdentity {
	_, err := os.Stat(path)
	return nodeIdentity{present: err == nil}
}

// nodeReplacementSeen: a node replaced between two scans, present at both,
// is not seen as a replug here (one gone for a scan is).
const nodeReplacementSeen = false
