package store

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

type deviceDoc struct {
	Handedness string  `json:"handedness"`
	Scale      float64 `json:"scale"`
	Tags       []string
}

func openTemp(t *testing.T) *Store {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "state"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func writeRaw(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestOpenCreatesPrivateDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b")
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(s.Dir())
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o700 {
		t.Errorf("state directory mode %v, want 0700", info.Mode().Perm())
	}
	if !filepath.IsAbs(s.Dir()) {
		t.Errorf("Dir() = %q, want an absolute path", s.Dir())
	}
	var v deviceDoc
	if found, err := s.Load("settings", &v); found || err != nil {
		t.Errorf("Load on an empty directory = %v, %v; want not found, no error (defaults)", found, err)
	}
	if _, err := Open(""); err == nil {
		t.Errorf("Open(\"\") succeeded")
	}
	file := filepath.Join(t.TempDir(), "file")
	writeRaw(t, file, []byte("x"))
	if _, err := Open(file); err == nil || !strings.Contains(err.Error(), file) {
		t.Errorf("Open on a regular file: %v; want an error naming it", err)
	}
}

func TestSaveLoad(t *testing.T) {
	s := openTemp(t)
	tests := []struct {
		name string
		doc  deviceDoc
	}{
		{"settings", deviceDoc{Scale: 0.5}},
		{"devices/arm3-049D", deviceDoc{Handedness: "left", Scale: 1, Tags: []string{"a"}}},
		{"profiles/" + EscapeName("co.example.app:main") + "/arm3-049D", deviceDoc{Handedness: "right"}},
		{"profiles/" + EscapeName("a/b/../c") + "/session", deviceDoc{Scale: 2}},
	}
	for _, tt := range tests {
		if err := s.Save(tt.name, tt.doc); err != nil {
			t.Fatalf("Save(%q): %v", tt.name, err)
		}
	}
	// Overwrite one: the newest wins.
	tests[0].doc.Scale = 0.25
	if err := s.Save(tests[0].name, tests[0].doc); err != nil {
		t.Fatal(err)
	}
	reopened, err := Open(s.Dir())
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		var got deviceDoc
		found, err := reopened.Load(tt.name, &got)
		if err != nil || !found {
			t.Fatalf("Load(%q) = %v, %v", tt.name, found, err)
		}
		if fmt.Sprint(got) != fmt.Sprint(tt.doc) {
			t.Errorf("Load(%q) = %+v, want %+v", tt.name, got, tt.doc)
		}
		info, err := os.Stat(reopened.path(tt.name))
		if err != nil {
			t.Fatal(err)
		}
		if info.Mode().Perm() != 0o600 {
			t.Errorf("%s mode %v, want 0600", tt.name, info.Mode().Perm())
		}
	}
	if _, err := os.Stat(filepath.Join(s.Dir(), "devices", "arm3-049D.json")); err != nil {
		t.Errorf("document \"devices/arm3-049D\" is not the file devices/arm3-049D.json: %v", err)
	}
}

func TestNamesAreChecked(t *testing.T) {
	s := openTemp(t)
	bad := []string{"", "/etc/passwd", "../x", "a/../../x", "a//b", "a/", ".hidden", "a/.b", "a b", "a\\b", "a:b",
		strings.Repeat("x", 201)}
	for _, name := range bad {
		if err := s.Save(name, 1); err == nil || !strings.HasPrefix(err.Error(), "store: ") {
			t.Errorf("Save(%q) = %v, want a store: error", name, err)
		}
		if _, err := s.Load(name, new(int)); err == nil {
			t.Errorf("Load(%q) accepted a bad name", name)
		}
		if err := s.Delete(name); err == nil {
			t.Errorf("Delete(%q) accepted a bad name", name)
		}
	}
	entries, _ := os.ReadDir(filepath.Dir(s.Dir()))
	if len(entries) != 1 {
		t.Errorf("bad names wrote outside the state directory: %v", entries)
	}
}

func TestEscapeName(t *testing.T) {
	tests := []struct{ in, want string }{
		{"co.example.app:main", "co.example.app%3Amain"},
		{"a/b", "a%2Fb"},
		{"..", "%2E."},
		{".", "%2E"},
		{"", "%"},
		{"%", "%25"},
		{"App", "%41pp"},
		{"日本", "%E6%97%A5%E6%9C%AC"},
		{"plain-name_1.2", "plain-name_1.2"},
	}
	for _, tt := range tests {
		if got := EscapeName(tt.in); got != tt.want {
			t.Errorf("EscapeName(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	r := rand.New(rand.NewSource(1))
	seen := map[string]string{}
	for i := range 2000 {
		b := make([]byte, r.Intn(12))
		for j := range b {
			b[j] = byte(r.Intn(256))
			if i%2 == 0 {
				b[j] = "aA.:/%-_zZ0"[r.Intn(11)]
			}
		}
		in := string(b)
		esc := EscapeName(in)
		if err := checkName(esc); err != nil {
			t.Fatalf("EscapeName(%q) = %q is not a valid segment: %v", in, esc, err)
		}
		back, err := UnescapeName(esc)
		if err != nil || back != in {
			t.Fatalf("UnescapeName(EscapeName(%q)) = %q, %v", in, back, err)
		}
		// Case-insensitive file systems must still see distinct names.
		if prev, ok := seen[strings.ToLower(esc)]; ok && prev != in {
			t.Fatalf("%q and %q escape to names equal but for case", prev, in)
		}
		seen[strings.ToLower(esc)] = in
	}
	for _, bad := range []string{"a%", "a%4", "%zz", "%4a"} {
		if _, err := UnescapeName(bad); err == nil {
			t.Errorf("UnescapeName(%q) accepted a name EscapeName never makes", bad)
		}
	}
}

func TestCorruptFilesAreReportedAndMovedAside(t *testing.T) {
	tests := []struct {
		name    string
		content string
		mention string
	}{
		{"empty", "", "empty"},
		{"whitespace", " \n", "empty"},
		{"torn", `{"handedness": "le`, "not valid JSON"},
		{"garbage", "\x00\x01\xffPK", "not valid JSON"},
		{"trailing", `{"scale": 1} {"scale": 2}`, "not valid JSON"},
		{"wrong shape", `{"scale": "high"}`, "wrong shape"},
		{"not an object", `[1,2,3]`, "wrong shape"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := openTemp(t)
			const name = "devices/arm3-049D"
			path := s.path(name)
			writeRaw(t, path, []byte(tt.content))

			var got deviceDoc
			found, err := s.Load(name, &got)
			if found || err == nil {
				t.Fatalf("Load = %v, %v; want an error", found, err)
			}
			var cerr *CorruptError
			if !errors.As(err, &cerr) {
				t.Fatalf("error %T %v, want *CorruptError", err, err)
			}
			msg := err.Error()
			if !strings.Contains(msg, path) || !strings.Contains(msg, tt.mention) || !strings.HasPrefix(msg, "store: ") {
				t.Errorf("error %q: want the file %s and %q", msg, path, tt.mention)
			}
			if cerr.MovedTo == "" || !strings.HasPrefix(cerr.MovedTo, path+".corrupt-") {
				t.Fatalf("MovedTo = %q, want %s.corrupt-<unix>", cerr.MovedTo, path)
			}
			kept, err := os.ReadFile(cerr.MovedTo)
			if err != nil || string(kept) != tt.content {
				t.Errorf("evidence %s = %q, %v; want the bad bytes kept", cerr.MovedTo, kept, err)
			}
			// Next load: defaults, silently. Next save: a good file, and
			// the evidence still there.
			if found, err := s.Load(name, &got); found || err != nil {
				t.Errorf("Load after move-aside = %v, %v; want not found", found, err)
			}
			if err := s.Save(name, deviceDoc{Scale: 1}); err != nil {
				t.Fatal(err)
			}
			if found, err := s.Load(name, &got); !found || err != nil || got.Scale != 1 {
				t.Errorf("Load after Save = %v, %v, %+v", found, err, got)
			}
			if _, err := os.Stat(cerr.MovedTo); err != nil {
				t.Errorf("Save destroyed the evidence: %v", err)
			}
			names, err := s.List("")
			if err != nil || len(names) != 1 || names[0] != name {
				t.Errorf("List = %v, %v; want only %s (evidence is not a document)", names, err, name)
			}
		})
	}
}

func TestCorruptTwiceKeepsBothFiles(t *testing.T) {
	s := openTemp(t)
	for i := range 2 {
		writeRaw(t, s.path("settings"), []byte("bad"+strconv.Itoa(i)))
		if _, err := s.Load("settings", new(deviceDoc)); err == nil {
			t.Fatal("want an error")
		}
	}
	matches, _ := filepath.Glob(s.path("settings") + ".corrupt-*")
	if len(matches) != 2 {
		t.Errorf("evidence files %v, want 2 (one per bad file)", matches)
	}
}

func TestLeftoverTempFilesAreIgnoredAndCleaned(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Save("devices/arm3-049D", deviceDoc{Scale: 0.5}); err != nil {
		t.Fatal(err)
	}
	// What a crash between create and rename leaves behind: a half-written
	// temp file next to the good document.
	leftovers := []string{
		filepath.Join(dir, "devices", ".arm3-049D.json"+tempMarker+"12345"),
		filepath.Join(dir, ".settings.json"+tempMarker+"999"),
	}
	for _, p := range leftovers {
		writeRaw(t, p, []byte(`{"scale": 9`))
	}
	var got deviceDoc
	if found, err := s.Load("devices/arm3-049D", &got); !found || err != nil || got.Scale != 0.5 {
		t.Errorf("Load with a leftover temp file = %v, %v, %+v; want the saved document", found, err, got)
	}
	if found, err := s.Load("settings", &got); found || err != nil {
		t.Errorf("a temp file of a never-saved document was read: %v, %v", found, err)
	}
	if names, _ := s.List(""); len(names) != 1 {
		t.Errorf("List = %v; temp files are not documents", names)
	}
	if _, err := Open(dir); err != nil {
		t.Fatal(err)
	}
	for _, p := range leftovers {
		if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Open left %s behind (%v)", p, err)
		}
	}
}

func TestDeleteAndList(t *testing.T) {
	s := openTemp(t)
	docs := []string{"settings", "devices/arm3-049D", "devices/grip-61548",
		"profiles/" + EscapeName("co.example.app:main") + "/arm3-049D",
		"profiles/" + EscapeName("co.example.app:main") + "/session",
		"profiles/other/session"}
	for _, n := range docs {
		if err := s.Save(n, 1); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		prefix string
		want   []string
	}{
		{"", []string{"devices/arm3-049D", "devices/grip-61548", "profiles/co.example.app%3Amain/arm3-049D",
			"profiles/co.example.app%3Amain/session", "profiles/other/session", "settings"}},
		{"devices", []string{"devices/arm3-049D", "devices/grip-61548"}},
		{"devices/", []string{"devices/arm3-049D", "devices/grip-61548"}},
		{"profiles/other", []string{"profiles/other/session"}},
		{"nothing", nil},
	}
	for _, tt := range tests {
		got, err := s.List(tt.prefix)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(got, ",") != strings.Join(tt.want, ",") {
			t.Errorf("List(%q) = %v, want %v", tt.prefix, got, tt.want)
		}
	}
	if _, err := s.List("../etc"); err == nil {
		t.Errorf("List accepted an escaping prefix")
	}
	if err := s.Delete("devices/arm3-049D"); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete("devices/arm3-049D"); err != nil {
		t.Errorf("second Delete = %v, want nil (idempotent)", err)
	}
	if found, err := s.Load("devices/arm3-049D", new(int)); found || err != nil {
		t.Errorf("Load after Delete = %v, %v", found, err)
	}
	if got, _ := s.List("devices"); len(got) != 1 {
		t.Errorf("List after Delete = %v", got)
	}
}

// Readers racing writers on the same names always see a whole document.
func TestConcurrentSaveLoad(t *testing.T) {
	s := openTemp(t)
	names := []string{"a", "b/c", "profiles/p/arm3-0001"}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for w := range 4 {
		wg.Go(func() {
			for i := range 40 {
				name := names[(w+i)%len(names)]
				doc := deviceDoc{Scale: float64(i), Tags: make([]string, i%7)}
				if err := s.Save(name, doc); err != nil {
					errs <- err
					return
				}
				var got deviceDoc
				if _, err := s.Load(names[i%len(names)], &got); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if evidence, _ := filepath.Glob(filepath.Join(s.Dir(), "*", "*.corrupt-*")); len(evidence) > 0 {
		t.Errorf("a good file was moved aside: %v", evidence)
	}
}

// crashDoc carries its own check so that any torn write is detected even if
// it happened to be valid JSON.
type crashDoc struct {
	Seq     int    `json:"seq"`
	Payload string `json:"payload"`
	Len     int    `json:"len"`
}

const crashEnv = "HAPTICD_STORE_CRASH_DIR"

// TestCrashChild is the child side of TestCrashLeavesNoTornFile: it saves in
// a loop until killed, reporting progress on stdout.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv(crashEnv)
	if dir == "" {
		t.Skip("run by TestCrashLeavesNoTornFile")
	}
	s, err := Open(dir)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	docName := func(i int) string {
		if i%6 == 5 {
			return "profiles/" + EscapeName("co.example.app:main") + "/session"
		}
		return fmt.Sprintf("devices/arm3-%04X", i%6)
	}
	docAt := func(i int) crashDoc {
		n := (i * 7919) % 20000
		return crashDoc{Seq: i, Payload: strings.Repeat(string(rune('a'+i%26)), n), Len: n}
	}
	// Every document is saved once before any progress is reported, so all
	// six are acknowledged whenever the kill lands and all six must survive
	// it, whichever writer the scheduler happened to favour.
	for i := range 6 {
		if err := s.Save(docName(i), docAt(i)); err != nil {
			fmt.Println("error", err)
			os.Exit(2)
		}
	}
	// Several writers, so that whenever the parent's kill lands (it
	// follows a progress line from one of them), others are mid-write.
	var saved atomic.Int64
	for w := range 3 {
		go func() {
			for i := 6 + w; ; i += 3 {
				if err := s.Save(docName(i), docAt(i)); err != nil {
					fmt.Println("error", err)
					os.Exit(2)
				}
				saved.Add(1)
			}
		}()
	}
	for last := int64(0); ; {
		if n := saved.Load(); n != last {
			fmt.Println("saved", n)
			last = n
		}
		runtime.Gosched()
	}
}

func TestCrashLeavesNoTornFile(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns a child process")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "state")
	for round := range 5 {
		cmd := exec.Command(exe, "-test.run=^TestCrashChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), crashEnv+"="+dir)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Let it get well into its loop (a different point each round),
		// then kill it without warning.
		target := 30 + round*40
		lines := bufio.NewScanner(out)
		saved := 0
		for saved < target && lines.Scan() {
			line := lines.Text()
			if strings.HasPrefix(line, "error") {
				t.Fatalf("child: %s", line)
			}
			if n, ok := strings.CutPrefix(line, "saved "); ok {
				saved, _ = strconv.Atoi(n)
			}
		}
		if err := cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		cmd.Wait()
		if saved < target {
			t.Fatalf("round %d: child stopped after %d saves", round, saved)
		}

		// Every document file in the directory parses and checks out,
		// before and after Open's cleanup.
		checkAll := func() {
			walkErr := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
				if err != nil || d.IsDir() || !strings.HasSuffix(path, ext) || strings.HasPrefix(d.Name(), ".") {
					return err
				}
				data, err := os.ReadFile(path)
				if err != nil {
					return err
				}
				var doc crashDoc
				if err := json.Unmarshal(data, &doc); err != nil {
					t.Errorf("round %d: %s is torn: %v", round, path, err)
				} else if len(doc.Payload) != doc.Len {
					t.Errorf("round %d: %s payload %d bytes, says %d", round, path, len(doc.Payload), doc.Len)
				}
				return nil
			})
			if walkErr != nil {
				t.Fatal(walkErr)
			}
		}
		checkAll()
		s, err := Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		names, err := s.List("")
		if err != nil {
			t.Fatal(err)
		}
		if len(names) != 6 {
			t.Errorf("round %d: %d documents %v, want 6", round, len(names), names)
		}
		for _, n := range names {
			var doc crashDoc
			if found, err := s.Load(n, &doc); !found || err != nil {
				t.Errorf("round %d: Load(%s) = %v, %v", round, n, found, err)
			}
		}
		temps := 0
		filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err == nil && isTempFile(d.Name()) {
				temps++
			}
			return nil
		})
		if temps != 0 {
			t.Errorf("round %d: %d temp files survive Open", round, temps)
		}
	}
}

// TestHashNameFitsEveryName stores documents under the hash of names whose
// escaped form no file system takes, and keeps distinct names apart.
func TestHashNameFitsEveryName(t *testing.T) {
	s := openTemp(t)
	names := []string{"", "a", "A", strings.Repeat("é", 34), strings.Repeat("😀", 64), strings.Repeat("/..", 300)}
	seen := map[string]string{}
	for i, n := range names {
		h := HashName(n)
		if prev, dup := seen[h]; dup {
			t.Fatalf("HashName(%q) = HashName(%q)", n, prev)
		}
		seen[h] = n
		if err := s.Save("profiles/"+h+"/session", deviceDoc{Scale: float64(i)}); err != nil {
			t.Fatalf("save under HashName(%q): %v", n, err)
		}
	}
	for i, n := range names {
		var d deviceDoc
		if found, err := s.Load("profiles/"+HashName(n)+"/session", &d); !found || err != nil || d.Scale != float64(i) {
			t.Fatalf("load under HashName(%q): found %v, %v, %+v", n, found, err, d)
		}
	}
}

func TestDeleteFolder(t *testing.T) {
	s := openTemp(t)
	for _, n := range []string{"profiles/a/session", "profiles/a/arm3-049D", "profiles/b/session"} {
		if err := s.Save(n, deviceDoc{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.DeleteFolder("profiles/a"); err != nil {
		t.Fatal(err)
	}
	got, err := s.List("profiles")
	if err != nil || len(got) != 1 || got[0] != "profiles/b/session" {
		t.Fatalf("after DeleteFolder(profiles/a): %v, %v", got, err)
	}
	if _, err := os.Stat(filepath.Join(s.Dir(), "profiles", "a")); !os.IsNotExist(err) {
		t.Fatalf("the emptied folder is still there: %v", err)
	}
}

// A directory where a document should be is read as an error, not as
// defaults to write over; writes and deletes of the name are refused,
// saying a folder stands where the document's file should be (not "check
// free space and permissions", nor "make it readable") and changing
// nothing, until the directory is gone, then work as ever.
func TestDirectoryInPlaceOfDocument(t *testing.T) {
	s := openTemp(t)
	const name = "devices/arm3-049D"
	p := s.path(name)
	if err := os.MkdirAll(filepath.Join(p, "kept"), 0o700); err != nil {
		t.Fatal(err)
	}
	var got deviceDoc
	found, err := s.Load(name, &got)
	if found || !errors.Is(err, ErrFolderInPlace) || !strings.Contains(err.Error(), p) {
		t.Fatalf("Load = %v, %v; want ErrFolderInPlace naming %s", found, err, p)
	}
	for op, do := range map[string]func() error{
		"Save":       func() error { return s.Save(name, deviceDoc{Scale: 1}) },
		"SaveGated":  func() error { return s.SaveGated(name, deviceDoc{Scale: 1}, func() bool { return true }) },
		"Delete":     func() error { return s.Delete(name) },
		"write-back": func() error { w := s.NewWriteBehind(time.Hour); w.Put(name, deviceDoc{Scale: 1}); return w.Close() },
	} {
		err := do()
		if !errors.Is(err, ErrFolderInPlace) || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "moved away") || strings.Contains(err.Error(), "free space") {
			t.Errorf("%s = %v; want ErrFolderInPlace naming %s, saying to move it away", op, err, p)
		}
	}
	if _, err := os.Stat(filepath.Join(p, "kept")); err != nil {
		t.Errorf("the directory in the document's place was touched: %v", err)
	}
	// An empty one too is not the store's to remove.
	if err := os.Remove(filepath.Join(p, "kept")); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(name); !errors.Is(err, ErrFolderInPlace) {
		t.Errorf("Delete with an empty folder in place = %v; want ErrFolderInPlace", err)
	}
	if fi, err := os.Stat(p); err != nil || !fi.IsDir() {
		t.Errorf("the empty folder in the document's place after a Delete: %v; want it left", err)
	}
	if err := os.RemoveAll(p); err != nil {
		t.Fatal(err)
	}
	if err := s.Save(name, deviceDoc{Scale: 1}); err != nil {
		t.Fatalf("Save once the directory is gone: %v", err)
	}
	if found, err := s.Load(name, &got); !found || err != nil || got.Scale != 1 {
		t.Errorf("Load after Save = %v, %v, %+v", found, err, got)
	}
}

// CheckWritable names each folder it was asked about that the service may
// not write into (a prefix ending in "/*" is each folder in it), a few of
// them then how many more, with the fix; folders not made yet pass (their
// parent is checked).
func TestCheckWritableNamesTheFoldersRefused(t *testing.T) {
	s := openTemp(t)
	clock := time.Unix(1e9, 0)
	s.now = func() time.Time { clock = clock.Add(foldersRecheck); return clock } // no reuse
	a, b, c, d := HashName("a"), HashName("b"), HashName("c"), HashName("d")
	for _, d := range []string{"devices", "profiles.v2/" + a, "profiles.v2/" + b, "profiles.v2/" + c, "profiles.v2/" + d, "other"} {
		if err := os.MkdirAll(filepath.Join(s.dir, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	folders := []string{"devices", "profiles.v2", "profiles.v2/*", "missing", "missing/*"}
	if err := s.CheckWritable(folders...); err != nil {
		t.Fatalf("CheckWritable of writable folders: %v", err)
	}
	var asked []string
	refuse := map[string]bool{}
	s.access = func(dir string) error {
		asked = append(asked, dir)
		if refuse[dir] {
			return syscall.EACCES
		}
		return s.checkFolder(dir)
	}
	refuse[filepath.Join(s.dir, "devices")] = true
	err := s.CheckWritable(folders...)
	devices := filepath.Join(s.dir, "devices")
	if !errors.Is(err, syscall.EACCES) || !strings.Contains(err.Error(), devices+" (permission denied)") || !strings.Contains(err.Error(), "chown -R ") || strings.Contains(err.Error(), "more") {
		t.Errorf("CheckWritable with devices refused = %v; want EACCES naming %s and chown", err, devices)
	}
	want := []string{"devices", "missing", "profiles.v2", "profiles.v2/" + a, "profiles.v2/" + b, "profiles.v2/" + c, "profiles.v2/" + d}
	slices.Sort(asked)
	for i, w := range want {
		want[i] = filepath.Join(s.dir, filepath.FromSlash(w))
	}
	slices.Sort(want)
	if !slices.Equal(asked, want) {
		t.Errorf("folders checked %q, want %q", asked, want)
	}
	for _, d := range []string{a, b, c, d} {
		refuse[filepath.Join(s.dir, "profiles.v2", d)] = true
	}
	err = s.CheckWritable(folders...)
	if err == nil || !strings.Contains(err.Error(), "and 2 more folders") {
		t.Errorf("CheckWritable with five folders refused = %v; want three named and 2 more", err)
	}
	s.access = func(string) error { return syscall.EROFS }
	if err := s.CheckWritable(folders...); err == nil || !strings.Contains(err.Error(), "mounted read-only") || strings.Contains(err.Error(), "chown") {
		t.Errorf("CheckWritable on a read-only mount = %v; want it to say so, not chown", err)
	}
}

// The directory lock is held until released: a second holder is refused,
// told the first's pid, and gets it once it is released.
func TestLockIsExclusive(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	first, err := Lock(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Lock(dir)
	if err == nil || !strings.Contains(err.Error(), "in use by process "+strconv.Itoa(os.Getpid())) || !strings.Contains(err.Error(), dir) {
		t.Fatalf("a second Lock = %v; want it refused, naming %s and pid %d", err, dir, os.Getpid())
	}
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if names, err := s.List(""); err != nil || len(names) != 0 {
		t.Errorf("List = %v, %v; the lock file is not a document", names, err)
	}
	if err := first.Release(); err != nil {
		t.Fatal(err)
	}
	second, err := Lock(dir)
	if err != nil {
		t.Fatalf("Lock once released: %v", err)
	}
	if err := second.Release(); err != nil {
		t.Fatal(err)
	}
}

// A file system that takes no lock (some network and FUSE mounts) does
// not stop the start: Lock answers an empty DirLock with
// ErrLockUnsupported, for the caller to warn and run on; any other
// failure of the lock call is an error with no lock.
func TestLockOnAFileSystemWithoutLocks(t *testing.T) {
	tests := []struct {
		name        string
		lockErr     error
		unsupported bool
	}{
		{"no locks here", fmt.Errorf("%w: %w", errLockUnsupported, errors.New("operation not supported")), true},
		{"another failure", errors.New("input/output error"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := lockDir(filepath.Join(t.TempDir(), "state"), func(*os.File) error { return tt.lockErr })
			if errors.Is(err, ErrLockUnsupported) != tt.unsupported || err == nil {
				t.Fatalf("Lock = %v; want an error, ErrLockUnsupported %v", err, tt.unsupported)
			}
			if (l != nil) != tt.unsupported {
				t.Fatalf("Lock gave %v with %v; want a DirLock only when the file system takes no lock", l, err)
			}
			if err := l.Release(); err != nil {
				t.Errorf("Release of an empty DirLock: %v", err)
			}
		})
	}
}

// A corrupt document that cannot be moved aside (a rename refused for a
// moment: a virus scanner holding the file on Windows, an I/O error) is
// still the only copy of what was acknowledged before it broke: the next
// Save, write-behind flush or Delete must refuse it, saying so, as for a
// file that cannot be read at all, and leave its bytes as they are.
func TestCorruptFileNotMovedAsideIsNeverOverwritten(t *testing.T) {
	const torn = `{"handedness": "le`
	for _, write := range []struct {
		name string
		do   func(s *Store, name string) error
	}{
		{"Save", func(s *Store, name string) error { return s.Save(name, deviceDoc{Scale: 1}) }},
		{"WriteBehind", func(s *Store, name string) error {
			w := s.NewWriteBehind(time.Hour)
			w.Put(name, deviceDoc{Scale: 1})
			return w.Close()
		}},
		{"Delete", func(s *Store, name string) error { return s.Delete(name) }},
	} {
		t.Run(write.name, func(t *testing.T) {
			s := openTemp(t)
			const name = "devices/arm3-049D"
			path := s.path(name)
			writeRaw(t, path, []byte(torn))
			refused := errors.New("rename refused (test)")
			s.rename = func(from, to string) error {
				if strings.Contains(to, corruptInfix) {
					return refused
				}
				return os.Rename(from, to)
			}
			var got deviceDoc
			_, err := s.Load(name, &got)
			var cerr *CorruptError
			if !errors.As(err, &cerr) || cerr.MovedTo != "" {
				t.Fatalf("Load = %v; want a *CorruptError that could not move the file", err)
			}
			if strings.Contains(err.Error(), "defaults apply until the next save") {
				t.Errorf("Load = %q; it promises the next save writes over a file it left in place", err)
			}
			if err := write.do(s, name); err == nil || !strings.Contains(err.Error(), "left as it is") {
				t.Errorf("%s over the corrupt file it could not move = %v; want a refusal saying it is left as it is", write.name, err)
			}
			if kept, err := os.ReadFile(path); err != nil || string(kept) != torn {
				t.Fatalf("%s = %q, %v; want the corrupt bytes left as they were, %q", path, kept, err, torn)
			}
			// Once a Load can move it, the name is the caller's again.
			s.rename = nil
			if _, err := s.Load(name, &got); !errors.As(err, &cerr) || cerr.MovedTo == "" {
				t.Fatalf("Load with renames working = %v; want the file moved aside", err)
			}
			if err := s.Save(name, deviceDoc{Scale: 2}); err != nil {
				t.Errorf("Save once the corrupt file is moved aside: %v", err)
			}
		})
	}
}

// TestCorruptFileMovedAsideOnceItCanBe: a corrupt file that a Load could
// not move aside for a moment (a virus scanner or a backup holding it) is
// moved at the next write, which then goes on: the document is not
// refused until a restart once the file can be moved. The corrupt bytes
// are kept beside it.
func TestCorruptFileMovedAsideOnceItCanBe(t *testing.T) {
	const torn = `{"scale": 0.`
	s, name, path, letGo := corruptFileHeldAtLoad(t, torn)
	letGo() // the scanner lets go
	if err := s.Save(name, deviceDoc{Scale: 0.5}); err != nil {
		t.Fatalf("Save once the corrupt file can be moved = %v; want it moved aside and the document written", err)
	}
	var got deviceDoc
	if _, err := s.Load(name, &got); err != nil || got.Scale != 0.5 {
		t.Fatalf("Load after the save = %+v, %v; want scale 0.5", got, err)
	}
	aside, _ := filepath.Glob(path + corruptInfix + "*")
	if len(aside) != 1 {
		t.Fatalf("files moved aside: %v; want the corrupt one", aside)
	}
	if kept, err := os.ReadFile(aside[0]); err != nil || string(kept) != torn {
		t.Errorf("%s = %q, %v; want the corrupt bytes %q", aside[0], kept, err, torn)
	}
}

// TestRepairedFileIsNotMovedAside: a corrupt file Load could not move
// aside, which someone repaired by hand before the next write, is theirs:
// the write is refused (a restart loads it), and it is neither moved aside
// nor written over.
func TestRepairedFileIsNotMovedAside(t *testing.T) {
	s, name, path, letGo := corruptFileHeldAtLoad(t, `{"scale": 0.`)
	const repaired = `{"scale": 0.25}`
	writeRaw(t, path, []byte(repaired))
	letGo()
	if err := s.Save(name, deviceDoc{Scale: 0.5}); err == nil {
		t.Error("Save over a repaired file the service never loaded succeeded")
	}
	if kept, err := os.ReadFile(path); err != nil || string(kept) != repaired {
		t.Errorf("%s = %q, %v; want the repaired bytes %q", path, kept, err, repaired)
	}
	if aside, _ := filepath.Glob(path + corruptInfix + "*"); len(aside) != 0 {
		t.Errorf("files moved aside: %v; want none", aside)
	}
}

// corruptFileHeldAtLoad writes torn as document name's file and Loads it
// while its move aside fails (a virus scanner holding the file), so the
// store keeps it unread; letGo lets later moves succeed.
func corruptFileHeldAtLoad(t *testing.T, torn string) (s *Store, name, path string, letGo func()) {
	t.Helper()
	s = openTemp(t)
	name = "settings"
	path = s.path(name)
	writeRaw(t, path, []byte(torn))
	held := true
	s.rename = func(from, to string) error {
		if held && strings.Contains(to, corruptInfix) {
			return errors.New("the file is in use by another process (test)")
		}
		return os.Rename(from, to)
	}
	var got deviceDoc
	if _, err := s.Load(name, &got); err == nil {
		t.Fatal("Load of a corrupt file succeeded")
	}
	return s, name, path, func() { held = false }
}

// SaveGated replaces the document only if its commit function agrees at
// the commit point; refused, the document is left as it was, no temp file
// stays behind, and a later write goes through.
func TestSaveGatedCommitPoint(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Save("doc", map[string]int{"v": 1}); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		commit bool
		want   int
	}{{false, 1}, {true, 3}} {
		calls := 0
		err := s.SaveGated("doc", map[string]int{"v": tt.want | 2}, func() bool { calls++; return tt.commit })
		if calls != 1 {
			t.Fatalf("commit %v: called %d times, want once", tt.commit, calls)
		}
		if tt.commit != (err == nil) || !tt.commit && !errors.Is(err, ErrNotCommitted) {
			t.Fatalf("commit %v: SaveGated answered %v", tt.commit, err)
		}
		var got map[string]int
		if _, err := s.Load("doc", &got); err != nil || got["v"] != tt.want {
			t.Fatalf("commit %v: the document holds %v (%v), want v=%d", tt.commit, got, err, tt.want)
		}
		entries, err := os.ReadDir(s.Dir())
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if isTempFile(e.Name()) {
				t.Fatalf("commit %v: temp file %s left behind", tt.commit, e.Name())
			}
		}
	}
	if n := s.WriteFailures(); n != 0 {
		t.Fatalf("%d write failures counted for a write called off", n)
	}
}

// While a write hangs on the disk (an fsync that does not return), the
// store answers every other operation: a Load, Save or Delete of a
// document that shares the hung one's lock stripe, and a Load of the hung
// document itself, which answers the last value written. They waited
// behind the hung write, without bound.
func TestOperationsNotHeldBehindAHungWrite(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	const hung = "devices/hung"
	neighbour := ""
	for i := 0; neighbour == ""; i++ {
		if n := fmt.Sprintf("devices/n%d", i); SameStripe(n, hung) {
			neighbour = n
		}
	}
	for _, name := range []string{hung, neighbour} {
		if err := s.Save(name, map[string]int{"v": 1}); err != nil {
			t.Fatal(err)
		}
	}
	entered, release := make(chan struct{}), make(chan struct{})
	wrote := make(chan error, 1)
	go func() {
		wrote <- s.SaveGated(hung, map[string]int{"v": 2}, func() bool { close(entered); <-release; return true })
	}()
	released := false
	defer func() {
		if !released {
			close(release)
		}
	}()
	<-entered
	for _, op := range []struct {
		what string
		do   func() error
	}{
		{"Load of a document in the hung one's stripe", func() error {
			var got map[string]int
			if found, err := s.Load(neighbour, &got); !found || err != nil || got["v"] != 1 {
				return fmt.Errorf("found %v, %v, %v; want v=1", found, got, err)
			}
			return nil
		}},
		{"Save of a document in the hung one's stripe", func() error { return s.Save(neighbour, map[string]int{"v": 3}) }},
		{"Delete of a document in the hung one's stripe", func() error { return s.Delete(neighbour) }},
		{"Load of the hung document", func() error {
			var got map[string]int
			if found, err := s.Load(hung, &got); !found || err != nil || got["v"] != 1 {
				return fmt.Errorf("found %v, %v, %v; want the last value written, v=1", found, got, err)
			}
			return nil
		}},
	} {
		done := make(chan error, 1)
		go func() { done <- op.do() }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("%s while a write hangs: %v", op.what, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s still waiting 10 s behind a hung write", op.what)
		}
	}
	close(release)
	released = true
	if err := <-wrote; err != nil {
		t.Fatalf("the hung write, released: %v", err)
	}
	var got map[string]int
	if _, err := s.Load(hung, &got); err != nil || got["v"] != 2 {
		t.Fatalf("after the hung write: %v (%v), want v=2", got, err)
	}
}

// A Load that finds a corrupt file while a write of it hangs answers an
// error at once, and leaves the file for the write to replace: neither
// moved aside nor refused to the write, which, released, lands.
func TestLoadOfACorruptFileBeingWrittenDoesNotWait(t *testing.T) {
	s := openTemp(t)
	const name = "devices/torn"
	writeRaw(t, s.path(name), []byte(`{"v":`))
	entered, release := make(chan struct{}), make(chan struct{})
	wrote := make(chan error, 1)
	go func() {
		wrote <- s.SaveGated(name, map[string]int{"v": 2}, func() bool { close(entered); <-release; return true })
	}()
	<-entered
	loaded := make(chan error, 1)
	go func() { _, err := s.Load(name, new(map[string]int)); loaded <- err }()
	select {
	case err := <-loaded:
		var corrupt *CorruptError
		if err == nil || errors.As(err, &corrupt) {
			t.Errorf("Load of a corrupt file being written answered %v, want an error that is not a *CorruptError (nothing moved aside)", err)
		}
	case <-time.After(10 * time.Second):
		t.Error("Load of a corrupt file still waiting 10 s behind a hung write of it")
	}
	close(release)
	if err := <-wrote; err != nil {
		t.Fatalf("the write, released: %v", err)
	}
	var got map[string]int
	if _, err := s.Load(name, &got); err != nil || got["v"] != 2 {
		t.Fatalf("after the write: %v (%v), want v=2", got, err)
	}
	if matches, _ := filepath.Glob(s.path(name) + corruptInfix + "*"); len(matches) != 0 {
		t.Errorf("moved aside %v: the write replaced the file anyway", matches)
	}
}

// A folder removed while List walks (another DeleteFolder at the same
// time: two passes of the profiles' bound) is left out, as if removed
// before the List, and the rest is listed: List failed with "no such file
// or directory", and the bound's pass then removed nothing (soak2).
func TestListLeavesOutAFolderRemovedWhileItWalks(t *testing.T) {
	s := openTemp(t)
	for _, name := range []string{"profiles/a/session", "profiles/b/session", "profiles/b/arm3-0001", "profiles/c/session"} {
		if err := s.Save(name, deviceDoc{Scale: 1}); err != nil {
			t.Fatal(err)
		}
	}
	gone := filepath.Join(s.dir, "profiles", "b")
	s.listingDir = func(path string) {
		if path == gone {
			if err := os.RemoveAll(path); err != nil {
				t.Error(err)
			}
		}
	}
	names, err := s.List("profiles")
	if err != nil {
		t.Fatalf("List while a folder is removed: %v", err)
	}
	if want := []string{"profiles/a/session", "profiles/c/session"}; !slices.Equal(names, want) {
		t.Fatalf("List = %v, want %v", names, want)
	}
}

// writtenNames counts the names whose order number the store keeps.
func writtenNames(s *Store) int {
	n := 0
	for i := range s.stripes {
		st := &s.stripes[i]
		st.mu.Lock()
		n += len(st.written)
		st.mu.Unlock()
	}
	return n
}

// The store forgets the order number of a deleted document once nothing
// older can be written back over the delete: it kept one per document name
// ever written, and a service whose clients made up a new profile name
// each run grew by it for good (soak2: about 280 bytes a removed profile).
// A value queued behind when the delete comes keeps its number, so the
// flush still finds that value superseded and never writes it back.
func TestDeleteForgetsTheOrderOfADeletedDocument(t *testing.T) {
	s := openTemp(t)
	w := s.NewWriteBehind(time.Hour)
	defer w.Close()
	for i := range 50 {
		name := fmt.Sprintf("profiles/p%d/session", i)
		if err := s.Save(name, deviceDoc{Scale: 1}); err != nil {
			t.Fatal(err)
		}
		if err := s.DeleteFolder(fmt.Sprintf("profiles/p%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if n := writtenNames(s); n != 0 {
		t.Fatalf("after 50 documents saved and deleted the store keeps %d order numbers, want 0", n)
	}
	// Queued behind, then deleted: the number stays until the flush.
	if err := w.Put("profiles/q/session", deviceDoc{Scale: 2}); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete("profiles/q/session"); err != nil {
		t.Fatal(err)
	}
	if n := writtenNames(s); n != 1 {
		t.Fatalf("with a value of the deleted document queued the store keeps %d order numbers, want 1", n)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	var got deviceDoc
	if found, err := s.Load("profiles/q/session", &got); err != nil || found {
		t.Fatalf("the value queued before the delete was written after it: found %v (%+v, %v)", found, got, err)
	}
}
