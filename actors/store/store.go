package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hapticd/hapticd/protocol/histogram"
)

const (
	ext          = ".json"
	tempMarker   = ".tmp-"      // temp files: "." + base + ext + tempMarker + random
	corruptInfix = ".corrupt-"  // moved-aside files: base + ext + corruptInfix + unix seconds
	keptInfix    = ".rejected-" // copies of a document with rejected entries: base + ext + keptInfix + unix seconds
	maxSegment   = 200          // leaves room for ext and the temp suffix under NAME_MAX (255)
	lockStripes  = 32
)

// Store is the service's state directory. Each document is one JSON file,
// written durably. It is safe for concurrent use; writes to one name are
// serialised, and nothing waits for the I/O of another name.
type Store struct {
	// Atomics first.
	// order numbers every Save, Delete and WriteBehind.Put, so that the
	// last call wins on disk whichever path it took (see saveBytes).
	order atomic.Uint64
	// failures counts durable writes (Save, a write-behind flush) that
	// failed: GET /metrics.
	failures atomic.Uint64

	// Immutable after Open.
	dir string

	// stripes hold the per-name bookkeeping and locks (by hash). A
	// stripe's own lock is never held across I/O: a write hung on the
	// disk holds only its document's lock (nameLock), and every other
	// document, in its stripe or not, goes on.
	stripes [lockStripes]stripe

	// writes times each durable write (GET /metrics).
	writes *histogram.Histogram

	// afterWrite, when set (tests only, before use), is called after each
	// durable write with the document name.
	afterWrite func(name string)

	// rename, when set (tests only, before use), replaces os.Rename where
	// a corrupt file is moved aside: a rename refused for a moment (a
	// Windows virus scanner holding the file, an I/O error) is otherwise
	// hard to make happen.
	rename func(from, to string) error

	// syncDir, when set (tests only, before use), replaces SyncDir in the
	// store's own writes: a directory fsync that is slow or fails is
	// otherwise hard to make happen.
	syncDir func(dir string) error

	// listingDir, when set (tests only, before use), is called as List
	// enters a folder, before it reads it: a folder removed between the
	// two (a DeleteFolder at the same time) is otherwise hard to make
	// happen.
	listingDir func(path string)

	// access, when set (tests only, before use), replaces checkFolder in
	// CheckWritable: as root every folder is writable whatever its mode.
	access func(dir string) error

	// now, when set (tests only, before use), replaces time.Now in
	// CheckWritable's recheck of the folders a "/*" stands for.
	now func() time.Time

	// remove, when set (tests only, before use), replaces os.Remove of a
	// probe file: a virus scanner holding it is otherwise hard to make
	// happen.
	remove func(path string) error

	// eachMu guards each, the last pass over the folders each "/*"
	// prefix given CheckWritable stands for (checkEach), and probes, the
	// probe files whose removal failed, by folder (probe). No I/O is done
	// under it.
	eachMu sync.Mutex
	each   map[string]*eachPass
	probes map[string][]string

	// durableDirs holds the folders below the state directory whose entry
	// in their parent this process has fsynced (mkdirDurable).
	durableDirs sync.Map

	// onUnknown, when set (OnUnknown, before use), is told of a document
	// read with members its reader does not know.
	onUnknown func(path string, names []string, size int)

	// behind are the store's write-behinds (NewWriteBehind), guarded by
	// behindMu: a Delete forgets a name's order number only when none of
	// them has a write of the name queued.
	behindMu sync.Mutex
	behind   []*WriteBehind
}

// CorruptError reports a document that exists but cannot be used. Load
// has already moved the file aside (MovedTo) so that the evidence
// survives the next Save; callers log it and use defaults. When the move
// failed (MovedTo is empty) the file stays where it is and, as one Load
// could not read, is never written over: Save, Put and Delete of the name
// are refused until a Load moves it or it is gone.
type CorruptError struct {
	Name    string // document name
	Path    string // file that was read
	MovedTo string // where it is now; empty if moving it failed too
	Err     error  // what is wrong with it
}

func (e *CorruptError) Error() string {
	if e.MovedTo == "" {
		return fmt.Sprintf("store: %s is unreadable (%v); it could not be moved aside, so it is left as it is and not written over until a Load moves it or it is removed; defaults apply meanwhile", e.Path, e.Err)
	}
	return fmt.Sprintf("store: %s is unreadable (%v); moved aside to %s; defaults apply until the next save", e.Path, e.Err, e.MovedTo)
}

func (e *CorruptError) Unwrap() error { return e.Err }

// Tolerant is implemented by a document type whose decode keeps what it
// can of a document with entries it does not accept (a value a newer build
// wrote, a typo): it decodes without error, and RejectedEntries names the
// entries it left at their defaults (nil: none).
type Tolerant interface {
	RejectedEntries() error
}

// KeepsUnknown is implemented by a document type whose decode finds
// members of the document's object that it does not read (a newer build's
// entry after a downgrade, a misspelt name): UnknownMembers returns them as
// the file has them, in its order, each name once (at its last
// occurrence); nil when there are none. Load keeps them, and every later
// write of the document (Save, SaveGated, a write-behind flush) writes
// them back unchanged (but those inside an object a write replaces whole,
// Replacing), until the document is deleted (Delete,
// DeleteFolder, or by other means: a Load that finds no file) or moved
// aside as corrupt (by a Load, or by the write a corrupt file held up): a
// build that does not know an entry does not take it from the file.
type KeepsUnknown interface {
	UnknownMembers() []Member
}

// Member is one member of a document's object: its name, and its value's
// JSON text as the file has it. In names the objects it is in, outermost
// first, when it is not a member of the document's object itself but of
// an object in it that the document's writer writes (a group of settings):
// a write puts it back into that object, and is refused, changing
// nothing, when the document written has no object there.
type Member struct {
	Name  string
	Value []byte
	In    []string
}

// OnUnknown sets fn to be told, once per document and process (again only
// if they change), of the members a KeepsUnknown value read from path does
// not know, by name: the service logs it. Call it before the store is
// used; fn must not use the store.
// size is their bytes as MaxKept counts them: over it, every write of the
// document is refused until they are gone (ErrKeptTooLarge).
func (s *Store) OnUnknown(fn func(path string, names []string, size int)) { s.onUnknown = fn }

// RejectedError reports a document that Load read, into a Tolerant value,
// with entries that value did not accept: found is true and every other
// entry is in the value. The file is left in place, and a copy of its
// bytes kept at KeptAt, so that the next Save, which writes the defaults
// of those entries, does not destroy the values they had. When the copy
// could not be made (KeptAt is empty), Err says why too.
type RejectedError struct {
	Name   string // document name
	Path   string // file that was read
	KeptAt string // where a copy of the file as read is; empty if copying it failed
	Err    error  // the rejected entries' errors
}

func (e *RejectedError) Error() string {
	if e.KeptAt == "" {
		return fmt.Sprintf("store: %s has entries this build does not accept (%v); they take their defaults, the others are in force; no copy of the file could be kept", e.Path, e.Err)
	}
	return fmt.Sprintf("store: %s has entries this build does not accept (%v); they take their defaults, the others are in force; the file as read is kept at %s", e.Path, e.Err, e.KeptAt)
}

func (e *RejectedError) Unwrap() error { return e.Err }

// ErrFolderInPlace is wrapped by the error of a Load, Save or Delete of a
// document whose file is a folder (made by hand or by another tool): the
// store never reads it, writes into it or removes it, and every write of
// the document fails, changing nothing, until it is moved away. A Load
// that found one leaves it as an unread file is left (see Load).
var ErrFolderInPlace = errors.New("is a folder, where the document's file should be")

// folderInPlace is the error of an operation (op, on document name) that
// found a folder at p, the document's file; nil when p is not one.
func folderInPlace(op, name, p string) error {
	if fi, err := os.Stat(p); err != nil || !fi.IsDir() {
		return nil
	}
	then := "nothing was changed, and the document is not stored until the folder is moved away"
	if op == "load" {
		then = "defaults apply, and the document is not stored until the folder is moved away"
	}
	return fmt.Errorf("store: %s %s: %s %w: %s (rename or remove it: it is not the service's)", op, name, p, ErrFolderInPlace, then)
}

// Open opens the state directory dir, creating it (mode 0700) if missing:
// an empty directory means defaults. It removes temp files left by a crash
// mid-save (they were never renamed into place, so they hold nothing that
// was acknowledged) and checks that the directory is writable, so a
// misconfigured --state-dir fails at start, not at the first POST.
func Open(dir string) (*Store, error) { return open(dir, SyncDir) }

// open is Open with the fsync of a directory Open makes durable as a
// parameter, which a test replaces to see which folders it fsyncs.
func open(dir string, syncDir func(dir string) error) (*Store, error) {
	if dir == "" {
		return nil, errors.New("store: empty state directory; pass --state-dir")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("store: state directory %q: %w", dir, err)
	}
	// The folders MkdirAll makes, outermost first: each one's entry in
	// its parent is fsynced, or a power loss soon after the first
	// acknowledged write on a new state directory could take the whole
	// directory with it (a document's own fsyncs cover only what is in it).
	var made []string
	for d := abs; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil || filepath.Dir(d) == d {
			break
		}
		made = append([]string{d}, made...)
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return nil, fmt.Errorf("store: create state directory %s: %w; check the parent's permissions or pass another --state-dir", abs, err)
	}
	for _, d := range made {
		if err := syncDir(filepath.Dir(d)); err != nil {
			return nil, fmt.Errorf("store: create state directory %s: sync %s: %w", abs, filepath.Dir(d), err)
		}
	}
	s := &Store{dir: abs, writes: histogram.New(3)}
	if err := s.removeTempFiles(); err != nil {
		return nil, err
	}
	// A full disk does not stop the start: the devices are served, every
	// config write is refused (500) and /readyz answers 503 until the disk
	// has room, as when it fills later. A directory the service may not
	// write (permissions, a read-only mount) is a mistake to fix first.
	if err := s.CheckWritable(); err != nil && !NoSpace(err) {
		return nil, err
	}
	return s, nil
}

// NoSpace reports whether err is a write refused for want of room (the
// disk or the user's quota full).
func NoSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// probeSize is what CheckWritable writes: one block, about what a
// document needs. An empty file would not do: a full disk still creates
// one (an inode is free) while it refuses every Save.
const probeSize = 4096

// CheckWritable reports whether the state directory takes a document now:
// it writes a block to a temp file at its top (no fsync: the check is about
// room and permissions) and removes it (probe), then checks that the
// service may make files in each of folders that exists (checkFolder:
// faccessat(2) on unix, no write). folders are document-name prefixes, the
// folders the caller saves documents into; one ending in "/*" stands for
// each folder in it named as HashName names one (IsHashName): any other
// folder there (an operator's backup copy) is not the caller's, and is not
// checked. The folders a "/*" stands for are listed and checked at most
// once a second (foldersRecheck): within that the last pass's result is
// reused, and a caller arriving while a pass is under way reuses the last
// result too; the top and the folders named one by one are checked at
// every call. A folder not there yet is checked by its parent, where a
// Save makes it. A crash mid-check leaves a temp file that the next Open
// removes. The error names every folder refused and the fix.
func (s *Store) CheckWritable(folders ...string) error {
	const fix = "free space on its disk or fix its permissions, or pass another --state-dir"
	if err := s.probe(s.dir, probeSize); err != nil {
		return fmt.Errorf("store: state directory %s takes no document: %w; %s", s.dir, err, fix)
	}
	return s.checkFolders(folders)
}

// maxFoldersNamed bounds the folders a CheckWritable error names one by
// one (a sudo run can leave every profile's folder root's).
const maxFoldersNamed = 3

// foldersRecheck is how often CheckWritable lists and checks the folders a
// "/*" prefix stands for: each profile's, up to the 1,000 the bound keeps,
// about 7 ms a pass, where /readyz needs no login and a lab's gateway polls
// it 4 times a second. A folder made unwritable shows within it.
const foldersRecheck = time.Second

// eachPass is the last pass over the folders one "/*" prefix stands for.
type eachPass struct {
	at      time.Time // when it started
	refused refusals  // what it found; never changed once stored
	done    bool      // a pass has finished: at and refused hold
	running bool      // a pass is under way
}

// checkFolders is CheckWritable's check of the folders below the top.
func (s *Store) checkFolders(folders []string) error {
	var refused refusals
	for _, name := range folders {
		each := strings.HasSuffix(name, "/*")
		name = strings.TrimSuffix(name, "/*")
		if err := checkName(name); err != nil {
			return err
		}
		dir := filepath.Join(s.dir, filepath.FromSlash(name))
		if each {
			refused.merge(s.checkEach(name, dir))
		} else {
			s.checkOne(&refused, dir)
		}
	}
	if refused.count == 0 {
		return nil
	}
	return &foldersRefused{refusals: refused, stateDir: s.dir}
}

// checkOne adds dir to r if the service may not make files in it.
func (s *Store) checkOne(r *refusals, dir string) {
	access := s.checkFolder
	if s.access != nil {
		access = s.access
	}
	err := access(dir)
	if err == nil || errors.Is(err, fs.ErrNotExist) {
		return // gone since: made again in its parent, checked too
	}
	// Removed meanwhile (a DeleteFolder; on Windows a folder whose delete
	// is pending refuses new files): gone too.
	if _, serr := os.Lstat(dir); errors.Is(serr, fs.ErrNotExist) {
		return
	}
	r.add(dir, err)
}

// checkEach checks the folders in dir (the document-name prefix name)
// shaped as HashName's output, or returns the last pass's result when it
// is under foldersRecheck old or another pass is under way. A dir that
// cannot be listed is a refusal too.
func (s *Store) checkEach(name, dir string) refusals {
	now := s.clock()
	s.eachMu.Lock()
	p := s.each[name]
	if p == nil {
		if s.each == nil {
			s.each = map[string]*eachPass{}
		}
		p = new(eachPass)
		s.each[name] = p
	}
	if p.done && (p.running || now.Sub(p.at) < foldersRecheck) {
		r := p.refused
		s.eachMu.Unlock()
		return r
	}
	p.running = true
	s.eachMu.Unlock()

	var r refusals
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		r.add(dir, fmt.Errorf("cannot list its folders: %w", err))
	}
	for _, e := range entries {
		if e.IsDir() && IsHashName(e.Name()) {
			s.checkOne(&r, filepath.Join(dir, e.Name()))
		}
	}

	s.eachMu.Lock()
	p.at, p.refused, p.done, p.running = now, r, true, false
	s.eachMu.Unlock()
	return r
}

// clock is time.Now, or the tests' now.
func (s *Store) clock() time.Time {
	if s.now != nil {
		return s.now()
	}
	return time.Now()
}

// refusals are folders the service may not write into: the first few
// (maxFoldersNamed), with why, and how many in all.
type refusals struct {
	dirs  []string
	errs  []error
	count int
}

// add counts dir, refused with err, once.
func (r *refusals) add(dir string, err error) {
	if slices.Contains(r.dirs, dir) {
		return
	}
	if r.count++; len(r.dirs) < maxFoldersNamed {
		r.dirs = append(r.dirs, dir)
		r.errs = append(r.errs, err)
	}
}

// merge adds o's refusals to r.
func (r *refusals) merge(o refusals) {
	for i, d := range o.dirs {
		r.add(d, o.errs[i])
	}
	r.count += o.count - len(o.dirs)
}

// foldersRefused is CheckWritable's error for folders below the top that
// the service may not write into: the first few, with why, and how many.
type foldersRefused struct {
	refusals
	stateDir string
}

func (e *foldersRefused) Error() string {
	var b strings.Builder
	b.WriteString("store: the service may not write into ")
	readOnly := true
	for i, d := range e.dirs {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s (%v)", d, e.errs[i])
		readOnly = readOnly && errors.Is(e.errs[i], syscall.EROFS)
	}
	if e.count > len(e.dirs) {
		fmt.Fprintf(&b, " and %d more folders", e.count-len(e.dirs))
	}
	b.WriteString(", where it saves documents: every change to be stored there is refused until it may; ")
	if readOnly {
		b.WriteString("the file system is mounted read-only: mount it read-write, or pass another --state-dir")
	} else {
		b.WriteString(ownershipFix(e.stateDir))
	}
	return b.String()
}

func (e *foldersRefused) Unwrap() []error { return e.errs }

// ownershipFix is how to fix a state directory stateDir some folder of
// which the service's user may not read or write.
func ownershipFix(stateDir string) string {
	return fmt.Sprintf("make the state directory the service's user's again (sudo chown -R %s %s: a run with sudo leaves folders owned by root) or give that user write access (chmod u+rwx on the folder), or pass another --state-dir", serviceUser(), stateDir)
}

// serviceUser names the user the service runs as, for a chown command.
func serviceUser() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	return strconv.Itoa(os.Getuid())
}

// Dir returns the state directory as an absolute path.
func (s *Store) Dir() string { return s.dir }

// removeTempFiles deletes leftovers of interrupted saves anywhere in the
// tree.
//
// A folder below the top it may not read is passed over: a run with sudo
// leaves the folders it made root's and private (0700), and a start that
// failed here said "permission denied" without the fix, where the check
// of the folders the service writes into (CheckWritable) names each and
// the fix (tourlabwarn). A folder that is not the service's is none of its
// business either.
func (s *Store) removeTempFiles() error {
	return filepath.WalkDir(s.dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if d != nil && d.IsDir() && path != s.dir && errors.Is(err, fs.ErrPermission) {
				return nil
			}
			if errors.Is(err, fs.ErrPermission) {
				return fmt.Errorf("store: scan %s for leftover temp files: %w; %s", path, err, ownershipFix(s.dir))
			}
			return fmt.Errorf("store: scan %s for leftover temp files: %w", path, err)
		}
		if !d.IsDir() && isTempFile(d.Name()) {
			if err := os.Remove(path); errors.Is(err, fs.ErrPermission) {
				return fmt.Errorf("store: remove leftover temp file %s: %w; %s", path, err, ownershipFix(s.dir))
			} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("store: remove leftover temp file %s: %w", path, err)
			}
		}
		return nil
	})
}

func isTempFile(base string) bool {
	return strings.HasPrefix(base, ".") && strings.Contains(base, tempMarker)
}

// checkName validates a document name: a relative slash path of non-empty
// segments made of [A-Za-z0-9._%-], none starting with '.' (those are
// reserved for temp files and exclude "." and "..").
func checkName(name string) error {
	const rule = "names are relative slash paths of [A-Za-z0-9._%-] segments that do not start with '.'; pass user-supplied parts through EscapeName"
	if name == "" {
		return fmt.Errorf("store: empty document name; %s", rule)
	}
	for seg := range strings.SplitSeq(name, "/") {
		switch {
		case seg == "":
			return fmt.Errorf("store: document name %q has an empty segment (leading, trailing or double '/'); %s", name, rule)
		case seg[0] == '.':
			return fmt.Errorf("store: document name %q has segment %q starting with '.'; %s", name, seg, rule)
		case len(seg) > maxSegment:
			return fmt.Errorf("store: document name %q has a segment of %d bytes, over the %d-byte limit of file names; shorten it", name, len(seg), maxSegment)
		}
		for i := 0; i < len(seg); i++ {
			if c := seg[i]; !keepByte(c) && c != '%' && !(c >= 'A' && c <= 'Z') {
				return fmt.Errorf("store: document name %q has %q in segment %q; %s", name, c, seg, rule)
			}
		}
	}
	return nil
}

// path returns the file of a valid name.
func (s *Store) path(name string) string {
	return filepath.Join(s.dir, filepath.FromSlash(name)) + ext
}

// stripe is one share of the store's bookkeeping. Its mu guards the
// maps below and nothing else: it is never held across I/O.
type stripe struct {
	mu sync.Mutex
	// names holds the lock of each name hashed here that an operation
	// holds or waits for.
	names map[string]*nameLock
	// written holds, per name hashed here, the order number of the last
	// Save or Delete that reached the disk. A deleted name's is forgotten
	// once nothing older can still be written (Store.forgetDeleted), or
	// the map would grow by every document name ever removed (soak2: a
	// client making up a new profile name each run, past the profiles'
	// bound).
	written map[string]uint64
	// unread holds, per name hashed here, why the last Load could not read
	// its file (not a corrupt one: that is moved aside). Until the file is
	// read or gone, nothing writes over it: it may hold acknowledged values
	// the service is running without. Set and cleared only under the
	// name's lock.
	unread map[string]error
	// kept holds, per name hashed here, the members of its document that
	// the last Load's KeepsUnknown value did not know: each write of the
	// name writes them back (withKept). Only names whose document has such
	// members are here; a Delete, or a Load that moves the file aside,
	// drops the name (dropKept).
	kept map[string][]Member
	// stored holds the names hashed here whose document this process
	// found on disk (a Load found its file, read or not) or wrote there,
	// and has not deleted since, nor moved aside as corrupt: the values in
	// force stand for that file, so a restart that does not find it loses
	// them (InPlace). A document never stored is not here: a restart
	// gives the defaults in force. Removed by hand, a name stays (the file
	// is expected back) until a Load finds it gone: its caller runs on
	// the defaults from then on, as a restart would.
	stored map[string]struct{}
}

// nameLock serialises what changes one document's file: Save, Delete and
// a Load that moves a bad file aside, so that the move never takes a good
// file a concurrent Save just renamed into place. It is held across their
// I/O (a hung fsync holds it) and only operations on that name wait for
// it; a Load of a good file takes it not at all (it only references it,
// for its drops).
type nameLock struct {
	mu   sync.Mutex
	refs int // holders and waiters; guarded by the stripe's mu
	// drops counts dropKept of the name while the lock is referenced
	// (guarded by the stripe's mu): a Load that references it while it
	// reads keeps what it read only if no Delete removed the file (nor a
	// Load moved it aside) meanwhile, which would have dropped them.
	drops uint64
}

func (s *Store) stripeOf(name string) *stripe {
	return &s.stripes[stripeIndex(name)]
}

func stripeIndex(name string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(name))
	return h.Sum32() % lockStripes
}

// SameStripe reports whether documents a and b share one of the store's
// lock stripes (which guard its per-name bookkeeping): a test that one
// document's hung write holds no other needs two that do.
func SameStripe(a, b string) bool { return stripeIndex(a) == stripeIndex(b) }

// lockName takes name's lock, waiting for the operation on name in
// progress; unlock gives it back.
func (s *Store) lockName(name string) (st *stripe, unlock func()) {
	st = s.stripeOf(name)
	l := st.ref(name)
	l.mu.Lock()
	return st, func() { l.mu.Unlock(); st.unref(name, l) }
}

// tryLockName is lockName, except that it answers ok false at once while
// an operation holds name's lock.
func (s *Store) tryLockName(name string) (st *stripe, unlock func(), ok bool) {
	st = s.stripeOf(name)
	l := st.ref(name)
	if !l.mu.TryLock() {
		st.unref(name, l)
		return st, nil, false
	}
	return st, func() { l.mu.Unlock(); st.unref(name, l) }, true
}

func (st *stripe) ref(name string) *nameLock {
	st.mu.Lock()
	defer st.mu.Unlock()
	l := st.names[name]
	if l == nil {
		if st.names == nil {
			st.names = make(map[string]*nameLock)
		}
		l = &nameLock{}
		st.names[name] = l
	}
	l.refs++
	return l
}

func (st *stripe) unref(name string, l *nameLock) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if l.refs--; l.refs == 0 {
		delete(st.names, name)
	}
}

// markUnread records that a Load found name's file and could not read it
// (cause): until it is read or gone, keepUnread refuses to write over it.
// The caller holds name's lock.
func (st *stripe) markUnread(name string, cause error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.unread == nil {
		st.unread = make(map[string]error)
	}
	st.unread[name] = cause
}

// clearUnread forgets that name's file could not be read. The caller holds
// name's lock.
func (st *stripe) clearUnread(name string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	delete(st.unread, name)
}

// unreadCause is why name's file could not be read, if it is marked so.
func (st *stripe) unreadCause(name string) (error, bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	cause, ok := st.unread[name]
	return cause, ok
}

// keepUnread refuses a write or a delete of name while its file is one
// that Load could not read; the refusal lifts once the file is gone, or,
// for a corrupt file Load could not move aside (a virus scanner or backup
// holding it for a moment), once a new try moves it now. The caller holds
// name's lock.
func (s *Store) keepUnread(st *stripe, name, p string) error {
	cause, ok := st.unreadCause(name)
	if !ok {
		return nil
	}
	if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) {
		st.clearUnread(name)
		st.dropKept(name)
		return nil
	}
	if errors.Is(cause, ErrFolderInPlace) {
		if fi, err := os.Stat(p); err == nil && fi.IsDir() {
			return fmt.Errorf("%s %w: it is left as it is, and the document is not stored until the folder is moved away (rename or remove it: it is not the service's)", p, ErrFolderInPlace)
		}
	}
	var corrupt *CorruptError
	if errors.As(cause, &corrupt) {
		// Moved only while it still does not read: a file someone
		// repaired meanwhile is theirs, and waits for a restart to load.
		if data, err := os.ReadFile(p); err == nil && decode(data, new(any)) != nil {
			if moved := s.moveAside(p, &CorruptError{Name: name, Path: p, Err: corrupt.Err}); moved.MovedTo != "" {
				st.clearUnread(name)
				st.dropKept(name) // the document is gone, with what it had
				st.forgetStored(name)
				return nil
			}
		}
		return fmt.Errorf("%s is corrupt and could not be moved aside (%v), so it is left as it is rather than written over: move it away, or restart to move it aside", p, corrupt.Err)
	}
	return fmt.Errorf("%s could not be read (%v), so it is left as it is rather than written over: make it readable and have it read again (a restart does), or move it away", p, cause)
}

// dropsOf is l's count of drops (nameLock.drops).
func (st *stripe) dropsOf(l *nameLock) uint64 {
	st.mu.Lock()
	defer st.mu.Unlock()
	return l.drops
}

// keep records members as name's unknown members (none: forgets the name),
// unless a drop of the name happened since l counted since (the file read
// is gone: what it had is not the document's). It reports whether they
// differ from those kept before. l is a reference to name's lock the
// caller holds.
func (st *stripe) keep(name string, l *nameLock, since uint64, members []Member) (changed bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if l.drops != since {
		return false
	}
	old := st.kept[name]
	changed = !slices.EqualFunc(old, members, func(a, b Member) bool {
		return a.Name == b.Name && bytes.Equal(a.Value, b.Value) && slices.Equal(a.In, b.In)
	})
	if len(members) == 0 {
		delete(st.kept, name)
		return changed
	}
	if st.kept == nil {
		st.kept = make(map[string][]Member)
	}
	st.kept[name] = members
	return changed
}

// setStored records that name's document is on disk (stripe.stored).
func (st *stripe) setStored(name string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.stored == nil {
		st.stored = make(map[string]struct{})
	}
	st.stored[name] = struct{}{}
}

// setStoredSince is setStored, unless a drop of the name happened since l
// counted since (a Delete removed the file read meanwhile). l is a
// reference to name's lock the caller holds.
func (st *stripe) setStoredSince(name string, l *nameLock, since uint64) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if l.drops != since {
		return
	}
	if st.stored == nil {
		st.stored = make(map[string]struct{})
	}
	st.stored[name] = struct{}{}
}

// forgetStored records that name's document is no longer on disk: deleted
// or moved aside as corrupt (stripe.stored).
func (st *stripe) forgetStored(name string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	delete(st.stored, name)
}

// isStored reports whether name's document is expected on disk
// (stripe.stored).
func (st *stripe) isStored(name string) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	_, ok := st.stored[name]
	return ok
}

// dropKept forgets name's unknown members: its file was deleted or moved
// aside. The caller holds name's lock.
func (st *stripe) dropKept(name string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	delete(st.kept, name)
	if l := st.names[name]; l != nil {
		l.drops++
	}
}

// keepOnly records kept as name's unknown members once a write replaced
// the others (Replacing): the file in place no longer has them. A Load
// that read the file before does not put them back (the drop is counted,
// as dropKept's). The caller holds name's lock.
func (st *stripe) keepOnly(name string, kept []Member) {
	st.mu.Lock()
	defer st.mu.Unlock()
	switch {
	case len(kept) == 0:
		delete(st.kept, name)
	case st.kept == nil:
		st.kept = map[string][]Member{name: kept}
	default:
		st.kept[name] = kept
	}
	if l := st.names[name]; l != nil {
		l.drops++
	}
}

// keptOf is name's unknown members (never written through).
func (st *stripe) keptOf(name string) []Member {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.kept[name]
}

// keepUnknown records the members a KeepsUnknown v read from p (name's
// file) does not know (stripe.keep), and tells OnUnknown's function of
// them when they are new. l is the caller's reference to name's lock,
// whose drops were since before the file was read.
func (s *Store) keepUnknown(st *stripe, name, p string, l *nameLock, since uint64, v any) {
	k, ok := v.(KeepsUnknown)
	if !ok {
		return
	}
	members := k.UnknownMembers()
	if !st.keep(name, l, since, members) || len(members) == 0 || s.onUnknown == nil {
		return
	}
	names := make([]string, len(members))
	for i, m := range members {
		names[i] = m.path()
	}
	s.onUnknown(p, names, keptSize(members))
}

// superseded reports whether a write numbered order is older than what is
// already on disk for name. It keeps a write-behind flush from putting
// back a value that a later durable Save (an HTTP POST) replaced.
func (st *stripe) superseded(name string, order uint64) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.written[name] > order
}

// supersededOnDisk reports whether the disk holds a write of name newer
// than the one numbered order. It never waits for a write in progress.
func (s *Store) supersededOnDisk(name string, order uint64) bool {
	return s.stripeOf(name).superseded(name, order)
}

// wrote records that the write numbered order reached the disk for name;
// the newest number stays.
func (st *stripe) wrote(name string, order uint64) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.written[name] > order {
		return
	}
	if st.written == nil {
		st.written = make(map[string]uint64)
	}
	st.written[name] = order
}

// Load reads document name into v (as encoding/json does). found is false
// when there is no such document: the caller uses defaults. A document
// that exists but is empty, torn, not JSON or not the shape of v is an
// error (a *CorruptError naming the file and the fault); the file has been
// moved aside to name.json.corrupt-<unix seconds>, and v may be partly
// filled, so the caller must use defaults. A document that exists but
// cannot be read at all (permissions, an I/O error, a directory in its
// place), or a corrupt one that could not be moved aside, is an error too,
// and is left where it is: Save, Put and Delete of that name are refused,
// saying why, until a Load reads or moves it or it is gone, because it may
// hold acknowledged values the caller now runs without.
// The service never stops on a bad file. A document that a Tolerant v
// reads with entries it did not accept is found, with a *RejectedError
// (see there): the file stays, a copy of it is kept beside it.
// Load never waits for a write of name in progress (one hung on the disk
// included): it answers the last document written. A bad file it finds
// while such a write is in progress is reported (an error that is not a
// *CorruptError), neither moved aside nor marked: the write replaces it.
func (s *Store) Load(name string, v any) (found bool, err error) {
	if err := checkName(name); err != nil {
		return false, err
	}
	st := s.stripeOf(name)
	p := s.path(name)
	// A reference to name's lock, not the lock: it counts the drops of the
	// name's unknown members while the file is read (keepUnknown).
	l := st.ref(name)
	defer st.unref(name, l)
	since := st.dropsOf(l)
	if _, marked := st.unreadCause(name); !marked {
		// Without name's lock: a rename replaces the file whole, so this
		// sees the last document written, never a torn one, and a Load
		// never waits for a write hung on the disk.
		data, err := os.ReadFile(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			// Removed by other means than Delete (by hand): what an
			// earlier file had is not the next document's (review59).
			st.keep(name, l, since, nil)
			s.forgetIfGone(name, p)
			return false, nil
		case err == nil && decode(data, v) == nil:
			st.setStoredSince(name, l, since)
			s.keepUnknown(st, name, p, l, since, v)
			return true, s.rejected(name, p, data, v)
		}
	}
	// A file that does not read (or did not last time): what is done
	// about it, under name's lock, must be about the file there now.
	st, unlock, ok := s.tryLockName(name)
	if !ok {
		// A write of it is in progress, and replaces it: neither moved
		// aside nor marked, and the Load does not wait (it may hang).
		return false, fmt.Errorf("store: %s does not read, and a write of it is in progress (it may be hung on the disk): defaults apply meanwhile; read it again once the write is done", p)
	}
	var unlocked sync.Once
	release := func() { unlocked.Do(unlock) }
	defer release()
	since = st.dropsOf(l) // none can happen while the lock is held
	data, err := os.ReadFile(p)
	st.clearUnread(name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		st.keep(name, l, since, nil)
		st.forgetStored(name)
		return false, nil
	case err != nil:
		// Something is there that may hold values the defaults in
		// force stand for.
		st.setStored(name)
		if ferr := folderInPlace("load", name, p); ferr != nil {
			st.markUnread(name, ferr)
			return false, ferr
		}
		st.markUnread(name, err)
		return false, fmt.Errorf("store: read %s: %w; it is left as it is and not written over until a read of it succeeds or it is removed; check the state directory's permissions", p, err)
	}
	st.setStored(name)
	fault := decode(data, v)
	if fault == nil {
		release() // the copy is a file of its own, made without the lock
		s.keepUnknown(st, name, p, l, since, v)
		return true, s.rejected(name, p, data, v)
	}
	cerr := s.moveAside(p, &CorruptError{Name: name, Path: p, Err: fault})
	if cerr.MovedTo != "" {
		st.dropKept(name) // the document is gone, with what it had
		st.forgetStored(name)
	}
	if cerr.MovedTo == "" {
		// Still in place, and maybe the only copy of values acknowledged
		// before it broke: the next write must not destroy it (unless it
		// can move it aside then, keepUnread).
		st.markUnread(name, &CorruptError{Name: name, Path: p, Err: fault})
	}
	return false, cerr
}

// forgetIfGone forgets that name's document is stored (stripe.stored)
// once a Load found no file at p: its caller runs on the defaults, which a
// restart gives too, so an unchanged value has nothing to write (InPlace)
// until a write stores it again. Only while no write of name is in
// progress (one may have put the file back since the Load looked, and
// records it when it lands), and only if the file is still not there.
func (s *Store) forgetIfGone(name, p string) {
	st, unlock, ok := s.tryLockName(name)
	if !ok {
		return
	}
	defer unlock()
	if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) {
		st.forgetStored(name)
	}
}

// rejected reports the entries a Tolerant v did not accept in the
// document read from p (data), keeping a copy of data beside p (keepCopy);
// nil when v is not Tolerant or accepted every entry.
func (s *Store) rejected(name, p string, data []byte, v any) error {
	t, ok := v.(Tolerant)
	if !ok {
		return nil
	}
	fault := t.RejectedEntries()
	if fault == nil {
		return nil
	}
	rerr := &RejectedError{Name: name, Path: p, Err: fault}
	kept, err := s.keepCopy(p, data)
	if err != nil {
		rerr.Err = fmt.Errorf("%w (and keeping a copy of the file failed: %v)", fault, err)
		return rerr
	}
	rerr.KeptAt = kept
	return rerr
}

// keepCopy writes data beside p as p.rejected-<unix> (adding -1, -2… if
// that exists), durably, and returns its path; a copy already there with
// the same bytes is returned instead, so that a document read at every
// start is kept once. The bytes go to a temp file first (Open removes one a
// crash left), linked to the copy's name once synced, so a copy is never
// torn; the link fails rather than replace a name that exists, so it
// needs no lock.
func (s *Store) keepCopy(p string, data []byte) (string, error) {
	dir, prefix := filepath.Dir(p), filepath.Base(p)+keptInfix
	if entries, err := os.ReadDir(dir); err == nil {
		for _, e := range entries {
			if !strings.HasPrefix(e.Name(), prefix) || !e.Type().IsRegular() {
				continue
			}
			o := filepath.Join(dir, e.Name())
			if b, err := os.ReadFile(o); err == nil && bytes.Equal(b, data) {
				return o, nil
			}
		}
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(p)+tempMarker+"*")
	if err != nil {
		return "", fmt.Errorf("keep a copy of %s: %w", p, err)
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("keep a copy of %s: %w", p, err)
	}
	base := p + keptInfix + strconv.FormatInt(time.Now().Unix(), 10)
	for i := 0; i < 1000; i++ {
		target := base
		if i > 0 {
			target += "-" + strconv.Itoa(i)
		}
		err := os.Link(tmp, target)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			// A file system without hard links (FAT): a rename, which
			// would replace a copy made at this name since the check.
			if _, serr := os.Lstat(target); !errors.Is(serr, fs.ErrNotExist) {
				continue
			}
			if rerr := os.Rename(tmp, target); rerr != nil {
				return "", fmt.Errorf("keep a copy of %s: %w (link: %v)", p, rerr, err)
			}
		}
		_ = s.sync(dir) // best effort: the copy only preserves evidence
		return target, nil
	}
	return "", fmt.Errorf("keep a copy of %s: no free name beside it", p)
}

// decode checks data is one whole JSON value before decoding it into v, so
// that a torn file is named as such rather than as a type mismatch.
func decode(data []byte, v any) error {
	if len(bytes.TrimSpace(data)) == 0 {
		return fmt.Errorf("the file is empty (%d bytes): a write was cut short", len(data))
	}
	if !json.Valid(data) {
		var syntax *json.SyntaxError
		err := json.Unmarshal(data, new(any))
		if errors.As(err, &syntax) {
			return fmt.Errorf("not valid JSON at byte %d of %d: %w", syntax.Offset, len(data), err)
		}
		return fmt.Errorf("not valid JSON: %w", err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("JSON of the wrong shape: %w", err)
	}
	return nil
}

// moveAside renames a bad file to name.json.corrupt-<unix>, adding
// -1, -2… if that exists, and makes the rename durable. It returns cerr
// with MovedTo set, or with the rename's failure added to Err. The caller
// holds the document's lock.
func (s *Store) moveAside(p string, cerr *CorruptError) *CorruptError {
	base := p + corruptInfix + strconv.FormatInt(time.Now().Unix(), 10)
	// A free name, never one that is there: renaming onto it would destroy
	// earlier evidence. An Lstat that fails otherwise than "not there" (a
	// name too long for the file system) fails for every suffix, so it
	// ends the search, as does a thousand names taken.
	target, err := "", error(nil)
	for i := 0; i < 1000 && target == "" && err == nil; i++ {
		name := base
		if i > 0 {
			name += "-" + strconv.Itoa(i)
		}
		if _, lerr := os.Lstat(name); errors.Is(lerr, fs.ErrNotExist) {
			target = name
		} else if lerr != nil {
			err = lerr
		}
	}
	if target == "" && err == nil {
		err = errors.New("no free name beside it")
	}
	if err == nil {
		rename := os.Rename
		if s.rename != nil {
			rename = s.rename
		}
		err = rename(p, target)
	}
	if err != nil {
		cerr.Err = fmt.Errorf("%w (and moving it aside failed: %v)", cerr.Err, err)
		return cerr
	}
	s.sync(filepath.Dir(p)) // best effort: the move only preserves evidence
	cerr.MovedTo = target
	return cerr
}

// InPlace reports whether document name's values in force are stored, as
// far as the file goes, for a caller that holds them as stored and does
// not write them again (they have not changed): true when its file is
// there, as a file, or when this process never found it on disk nor wrote
// it (or deleted it since): the values in force are then the defaults, the
// ones a restart gives, and nothing needs writing (a DELETE of a setting at
// its default writes no settings.json that would pin every other one).
// false, nil: the file this process read or wrote is gone (removed by
// hand; a Load since that found it gone made it one never stored), and a
// write makes it again; an error wrapping ErrFolderInPlace,
// as a Save's would, when a folder stands there, which every write is
// refused for. A file it cannot look at (a folder it may not search) is
// false, nil too: the write that follows says why it fails. It is one stat
// of the file at most: it never waits for a write of name in progress.
func (s *Store) InPlace(name string) (bool, error) {
	if err := checkName(name); err != nil {
		return false, err
	}
	if !s.stripeOf(name).isStored(name) {
		return true, nil
	}
	p := s.path(name)
	fi, err := os.Stat(p)
	switch {
	case err != nil:
		return false, nil
	case fi.IsDir():
		return false, folderInPlace("save", name, p)
	}
	return true, nil
}

// Save writes v as document name, durably: when Save returns nil the
// document survives a crash of the process or the machine. It writes a temp
// file in the same directory, fsyncs it, renames it over the target and
// fsyncs the directory, so a reader sees the old document or the new one,
// never a torn one. A Load sees the new one from the rename on, before the
// directory's fsync: when that fsync fails, Save returns its error
// ("sync directory") with the new document in place, not known durable.
func (s *Store) Save(name string, v any) error {
	data, err := encodeDocument(name, v)
	if err != nil {
		return err
	}
	return s.saveBytes(name, pendingDoc{data: data, order: s.order.Add(1), replaces: replacedObjects(v)})
}

// ErrNotCommitted is SaveGated's answer when its commit function refused:
// the document was left as it was, and this write will never reach it.
var ErrNotCommitted = errors.New("store: the write was called off before it took effect; the document is unchanged")

// SaveGated is Save with a commit point: once the new document is written
// and fsynced beside the old one, and before it replaces it (the rename),
// commit is called; if it answers false the new file is removed, the
// document stays as it was, and SaveGated returns ErrNotCommitted. A
// caller that stops waiting for a write hung on the disk (an fsync that
// does not return) claims the commit point first, and can then answer that
// the value was not stored and never will be. commit is called once at
// most, under the document's lock: it must neither block nor use the store.
// Past the commit point only the directory's fsync is left. A write a newer
// one superseded on disk returns nil without calling it.
func (s *Store) SaveGated(name string, v any, commit func() bool) error {
	data, err := encodeDocument(name, v)
	if err != nil {
		return err
	}
	err = s.writeBytes(name, pendingDoc{data: data, order: s.order.Add(1), replaces: replacedObjects(v)}, commit)
	if err != nil && !errors.Is(err, ErrNotCommitted) {
		s.failures.Add(1)
	}
	return err
}

// saveBytes is Save for a checked name and encoded value. doc.order is
// the number the value got when the caller handed it over; a value older
// than the one on disk is dropped (reported as written), so the last call
// wins.
func (s *Store) saveBytes(name string, doc pendingDoc) error {
	err := s.writeBytes(name, doc, nil)
	if err != nil {
		s.failures.Add(1)
	}
	return err
}

// writeBytes is saveBytes without the count of failures; commit, if set,
// is SaveGated's.
func (s *Store) writeBytes(name string, doc pendingDoc, commit func() bool) error {
	data, order := doc.data, doc.order
	st, unlock := s.lockName(name)
	defer unlock()
	if st.superseded(name, order) {
		return nil
	}
	start := time.Now()
	p := s.path(name)
	if err := s.keepUnread(st, name, p); err != nil {
		return fmt.Errorf("store: save %s: %w", name, err)
	}
	kept := st.keptOf(name)
	if len(kept) > 0 {
		// Removed by other means than Delete (by hand) since it was read:
		// what that file had is not the next document's, as for a Load
		// that finds it gone (a file over MaxKept removed so included).
		if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) {
			st.dropKept(name)
			kept = nil
		}
	}
	// What this write replaces whole goes, and what writes of name queued
	// before it replaced: they are older, so this one supersedes them
	// (they will not be written), and its value has their changes.
	kept, dropped := withoutReplaced(kept, s.replacedUpTo(name, doc))
	if err := keptTooLarge(p, kept); err != nil {
		return fmt.Errorf("store: save %s: %w", name, err)
	}
	data, err := withKept(data, kept)
	if err != nil {
		return fmt.Errorf("store: save %s: %w", name, err)
	}
	dir := filepath.Dir(p)
	if err := s.mkdirDurable(dir); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(p)+tempMarker+"*")
	if err != nil {
		return fmt.Errorf("store: save %s: create temp file: %w; check free space and permissions of %s", name, err, dir)
	}
	tmp := f.Name()
	_, werr := f.Write(data)
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil && commit != nil && !commit() {
		os.Remove(tmp)
		return fmt.Errorf("store: save %s: %w", name, ErrNotCommitted)
	}
	if werr == nil {
		werr = os.Rename(tmp, p)
	}
	if werr == nil {
		st.setStored(name)
		if dropped {
			st.keepOnly(name, kept)
		}
	}
	if werr != nil {
		os.Remove(tmp)
		if ferr := folderInPlace("save", name, p); ferr != nil {
			return ferr
		}
		return fmt.Errorf("store: save %s: %w; check free space and permissions of %s", name, werr, dir)
	}
	if err := s.sync(dir); err != nil {
		return fmt.Errorf("store: save %s: sync directory %s: %w", name, dir, err)
	}
	st.wrote(name, order)
	s.writes.Record(int64(time.Since(start)))
	if s.afterWrite != nil {
		s.afterWrite(name)
	}
	return nil
}

// WriteFailures counts the durable writes (Save, a write-behind flush or
// retry) that failed since Open.
func (s *Store) WriteFailures() uint64 { return s.failures.Load() }

// WriteLatency is the histogram of durable writes (temp file, fsync,
// rename, directory fsync), in nanoseconds.
func (s *Store) WriteLatency() *histogram.Histogram { return s.writes }

// mkdirDurable creates dir and any missing parents below the state
// directory, fsyncing each entry's parent so the path survives a crash
// along with the file saved into it. A folder that is there is not enough:
// another Save may have just made it, its parent's fsync still under way
// (each Save holds only its own document's lock), or a process killed
// between its mkdir and that fsync left it, in the page cache only. So a
// folder counts as durable only once this process fsynced its parent after
// it was there (durableDirs): one fsync per folder per process, then a
// Stat.
func (s *Store) mkdirDurable(dir string) error {
	if dir == s.dir || !strings.HasPrefix(dir, s.dir+string(filepath.Separator)) {
		if _, err := os.Stat(dir); err == nil {
			return nil
		}
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("store: create %s: %w; check the permissions of the state directory", dir, err)
		}
		return nil
	}
	if _, ok := s.durableDirs.Load(dir); ok {
		if _, err := os.Stat(dir); err == nil {
			return nil
		}
		s.durableDirs.Delete(dir) // removed since (DeleteFolder)
	}
	parent := filepath.Dir(dir)
	if err := s.mkdirDurable(parent); err != nil {
		return err
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("store: create %s: %w; check the permissions of the state directory", dir, err)
	}
	if err := s.sync(parent); err != nil {
		return fmt.Errorf("store: sync directory %s: %w", parent, err)
	}
	s.durableDirs.Store(dir, struct{}{})
	return nil
}

// Delete removes document name durably. Deleting a missing document is not
// an error.
func (s *Store) Delete(name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	order := s.order.Add(1)
	st, unlock := s.lockName(name)
	defer unlock()
	// Like a save, a delete overtaken by a newer write must not undo it.
	if st.superseded(name, order) {
		return nil
	}
	p := s.path(name)
	if err := s.keepUnread(st, name, p); err != nil {
		return fmt.Errorf("store: delete %s: %w", name, err)
	}
	if err := folderInPlace("delete", name, p); err != nil {
		return err
	}
	if err := os.Remove(p); errors.Is(err, fs.ErrNotExist) {
		st.dropKept(name)
		st.forgetStored(name)
		st.wrote(name, order)
		s.forgetDeleted(st, name, order)
		return nil
	} else if err != nil {
		return fmt.Errorf("store: delete %s: %w; check the permissions of %s", name, err, filepath.Dir(p))
	}
	// Gone, whatever the sync says: so are its unknown members (a reset).
	st.dropKept(name)
	st.forgetStored(name)
	if err := s.sync(filepath.Dir(p)); err != nil {
		return fmt.Errorf("store: delete %s: sync directory: %w", name, err)
	}
	st.wrote(name, order)
	s.forgetDeleted(st, name, order)
	return nil
}

// forgetDeleted drops the order number of name, deleted by the Delete
// numbered order (its caller, holding the name's lock), when no
// write-behind has a write of name queued: what keeps an older value from
// being written back over the delete is that number, and only a value
// queued before the delete can be older. A Save or Put called while the
// Delete ran may still land after it: the calls overlapped, so either
// order is theirs.
func (s *Store) forgetDeleted(st *stripe, name string, order uint64) {
	s.behindMu.Lock()
	behind := s.behind
	s.behindMu.Unlock()
	for _, w := range behind {
		if w.Queued(name) {
			return
		}
	}
	st.mu.Lock()
	if st.written[name] == order {
		delete(st.written, name)
	}
	st.mu.Unlock()
}

// DeleteFolder removes every document under prefix (a document name taken
// as a folder, as List takes it), durably, then the folder itself when it is
// left empty.
func (s *Store) DeleteFolder(prefix string) error {
	names, err := s.List(prefix)
	if err != nil {
		return err
	}
	for _, n := range names {
		if err := s.Delete(n); err != nil {
			return err
		}
	}
	dir := filepath.Join(s.dir, filepath.FromSlash(strings.TrimSuffix(prefix, "/")))
	// Not empty (a temp or moved-aside file, a write since List) is fine:
	// the documents are gone, which is what callers rely on. Forgotten as
	// durable first: a Save into it from now on makes it again.
	s.durableDirs.Delete(dir)
	if err := os.Remove(dir); err == nil {
		if err := s.sync(filepath.Dir(dir)); err != nil {
			return fmt.Errorf("store: delete folder %s: sync directory: %w", prefix, err)
		}
	}
	return nil
}

// List returns the names of the documents under prefix, sorted. prefix is
// a document name taken as a folder ("profiles" or "profiles/" lists
// everything below profiles/); "" lists everything. Temp and moved-aside
// files are not documents and are never listed. A folder or document
// removed while List walks (a DeleteFolder at the same time) is left out,
// as if removed before: it is not an error.
func (s *Store) List(prefix string) ([]string, error) {
	prefix = strings.TrimSuffix(prefix, "/")
	root := s.dir
	if prefix != "" {
		if err := checkName(prefix); err != nil {
			return nil, err
		}
		root = filepath.Join(s.dir, filepath.FromSlash(prefix))
	}
	var names []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			switch {
			case !errors.Is(err, fs.ErrNotExist):
				return err
			case path == root:
				return fs.SkipAll
			case d != nil && d.IsDir():
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() && s.listingDir != nil {
			s.listingDir(path)
		}
		base := d.Name()
		if d.IsDir() || strings.HasPrefix(base, ".") || !strings.HasSuffix(base, ext) {
			return nil
		}
		rel, err := filepath.Rel(s.dir, path)
		if err != nil {
			return err
		}
		name := strings.TrimSuffix(filepath.ToSlash(rel), ext)
		if checkName(name) == nil {
			names = append(names, name)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: list %q: %w", prefix, err)
	}
	sort.Strings(names)
	return names, nil
}

// sync is SyncDir, or the test hook that replaces it.
func (s *Store) sync(dir string) error {
	if s.syncDir != nil {
		return s.syncDir(dir)
	}
	return SyncDir(dir)
}

// SyncDir fsyncs a directory so that the entries just created, renamed or
// removed in it are durable.
func SyncDir(dir string) error {
	if runtime.GOOS == "windows" {
		// Windows cannot fsync a directory handle; NTFS journals the
		// rename itself.
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
