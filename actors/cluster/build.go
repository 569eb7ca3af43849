package cluster

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"

	"github.com/hapticd/hapticd/actors/cluster/wire"
)

// BuildOf names a build for Config.Build, from what the Go toolchain and
// the linker stamped into the binary (main passes them down: version is
// main.version, revision and modified vcs.revision and vcs.modified):
// "VERSION+REV.wire-DIGEST", with ".modified" after REV for a checkout
// with local changes, and "novcs" for REV in a binary without a VCS stamp.
// REV is the revision's first 12 hex digits, DIGEST is WireDigest.
//
// Not a digest of the executable: one lab's hosts may be of different
// architectures (a node on an ARM board, the gateway on a PC), and one
// source built on two hosts is one build there but different bytes.
// SameBuild says which two names are one build.
func BuildOf(version, revision string, modified bool) string {
	rev := "novcs"
	if revision != "" && revision != "unknown" {
		rev = revision[:min(len(revision), 12)]
		if modified {
			rev += ".modified"
		}
	}
	return version + "+" + rev + ".wire-" + WireDigest()
}

// builtFrom is a build name read back: its parts as BuildOf wrote them
// (revision "" for novcs).
type builtFrom struct{ version, revision, wire string }

// parseBuild reads a BuildOf name; false for any other string ("": a
// member older than the build check).
func parseBuild(b string) (builtFrom, bool) {
	i := strings.LastIndex(b, ".wire-")
	if i < 0 {
		return builtFrom{}, false
	}
	// The revision follows the last "+" before the schema: a version may
	// have one of its own (semver's build metadata, "1.2.3+meta").
	j := strings.LastIndex(b[:i], "+")
	if j <= 0 {
		return builtFrom{}, false
	}
	f := builtFrom{version: b[:j], wire: b[i+len(".wire-"):]}
	rev, _ := strings.CutSuffix(b[j+1:i], ".modified")
	if rev != "novcs" {
		f.revision = rev
	}
	return f, f.wire != "" && rev != ""
}

// SameBuild says whether members of builds a and b may form a lab: the
// same version and the same wire schema (what they must share to
// understand each other at all), and the same revision when both know
// theirs. A binary without a VCS stamp (built in a git worktree or a
// container without .git, from a source archive, or with
// -buildvcs=false) knows none: one source built so on one host and from a
// clone on another is one build, which the revision alone called two, and
// a lab of one commit refused itself. So a lab that mixes stamped and
// unstamped binaries of two revisions with one version and wire schema
// is not told apart; nor are two modified builds of one revision.
//
// Two equal names are one build whatever they are (tests in one process
// leave Config.Build empty on every member).
func SameBuild(a, b string) bool {
	if a == b {
		return true
	}
	x, okA := parseBuild(a)
	y, okB := parseBuild(b)
	if !okA || !okB || x.version != y.version || x.wire != y.wire {
		return false
	}
	return x.revision == "" || y.revision == "" || x.revision == y.revision
}

// WireDigest is the first 8 hex digits of the SHA-256 of the lab's wire
// schema (actors/cluster/wire's file descriptor, without its comments):
// it changes with any message or field, and with nothing else.
var WireDigest = sync.OnceValue(func() string {
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(protodesc.ToFileDescriptorProto(wire.File_hapticd_proto))
	if err != nil {
		panic(fmt.Sprintf("cluster: marshal the wire schema: %v", err)) // a descriptor always marshals
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:4])
})

// upgradeOrder is what a refusal for another build tells its operator.
const upgradeOrder = "a lab runs one build: upgrade every host to one, in docs/lab.md's order " +
	"(stop the gateway, upgrade and restart the nodes, then start the gateway); the refusal ends by itself once both run one build"

// buildName is how a refusal names a member's build ("": older than the
// field, which states none).
func buildName(b string) string {
	if b == "" {
		return "a build older than the lab's build check (it states none)"
	}
	return "build " + b
}

// buildMismatch is the reason a member of a lab refuses another of
// another build: both named, with the upgrade order.
func buildMismatch(refuser, refused string) string {
	return fmt.Sprintf("%s, %s: %s", refuser, refused, upgradeOrder)
}
