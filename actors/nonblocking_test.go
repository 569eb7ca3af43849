package actors

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// The package doc promises that no actor waits inside Receive: an actor
// that blocks on a disk, a driver or another actor stalls every message
// behind it (a session's frames, a device's config, the registry's
// inventory). This file holds that promise as a test: it type-checks every
// package under actors/ from source, walks every method named Receive and
// every function of the module it calls, transitively, and fails on a call
// that blocks (blockingCalls), a channel operation that can wait (one
// outside a select with a default), or a select without a default.
//
// What a goroutine started inside runs is not walked (it may block: that
// is where blocking work goes), nor a function literal handed to another
// goroutine's runner. Calls through function values and through interfaces
// not listed below cannot be resolved statically and are not followed.

// blockingCalls are the functions a Receive must not reach, by
// types.Func.FullName, with why each blocks.
var blockingCalls = map[string]string{
	"time.Sleep":                                        "sleeps",
	"(*sync.WaitGroup).Wait":                            "waits for other goroutines",
	"(*sync.Cond).Wait":                                 "waits for a signal",
	"syscall.Fsync":                                     "fsyncs",
	"golang.org/x/sys/unix.Fsync":                       "fsyncs",
	"(*" + protoactor + ".Future).Result":               "waits on a future",
	"(*" + protoactor + ".Future).Wait":                 "waits on a future",
	"(" + module + "/hw.Driver).Close":                  "closes a driver (device I/O)",
	"(" + module + "/actors.Store).Save":                "writes a document durably (fsync)",
	"(" + module + "/actors.Store).Load":                "reads a document from disk",
	"(" + module + "/actors.Store).List":                "lists the state directory",
	"(" + module + "/actors.Store).DeleteFolder":        "removes documents from disk",
	"(*" + module + "/actors/store.Store).Save":         "writes a document durably (fsync)",
	"(*" + module + "/actors/store.Store).Load":         "reads a document from disk",
	"(*" + module + "/actors/store.Store).List":         "lists the state directory",
	"(*" + module + "/actors/store.Store).Delete":       "removes a document from disk",
	"(*" + module + "/actors/store.Store).DeleteFolder": "removes documents from disk",
	"(*" + module + "/actors/store.WriteBehind).Flush":  "writes every pending document durably",
	"(*" + module + "/actors/store.WriteBehind).Close":  "writes every pending document durably",
	"(*" + module + "/actors/loop.Scheduler).Remove":    "waits out the shard's current tick",
	module + "/actors/loop.RunLocked":                   "runs a loop until it is cancelled",
	"(*" + module + "/actors/loop.Device).Halt":         "waits for the loop's tick, and may halt the driver itself",
}

// runsElsewhere are where a function literal is handed to another
// goroutine: the calls that run their function arguments there, and the
// struct fields (type.field) whose function the actor gives to one. Their
// literals may block; like a go statement's, they are not walked.
var runsElsewhere = map[string]bool{
	"(*" + module + "/actors.offloader).run": true,
	module + "/actors.pendingIO.work":        true,
	"time.AfterFunc":                         true,
	"(*sync.WaitGroup).Go":                   true,
}

// notBlocking are functions that reach a blocking call on a path the
// actors never take, with why; the walk does not follow them.
var notBlocking = map[string]string{}

// osFileFuncs are the functions of package os that touch the file system;
// every method of *os.File blocks too.
var osFileFuncs = []string{"Open", "OpenFile", "Create", "CreateTemp", "ReadFile", "WriteFile", "ReadDir",
	"Remove", "RemoveAll", "Rename", "Mkdir", "MkdirAll", "MkdirTemp", "Stat", "Lstat", "Chmod", "Truncate", "Link", "Symlink"}

const protoactor = "github.com/asynkron/protoactor-go/actor"

// knownBlocking lists the Receive methods that still block, each with the
// change that will end it. The test fails when one of them no longer
// blocks, so the list can only shrink.
var knownBlocking = map[string]string{}

// TestNoReceiveBlocks: no Receive in actors/... reaches a blocking call.
func TestNoReceiveBlocks(t *testing.T) {
	if testing.Short() {
		t.Skip("type-checks every actors package from source")
	}
	prog := loadProgram(t, module+"/actors/...")
	receives := prog.receives()
	if len(receives) < 3 {
		t.Fatalf("found %d Receive methods; expected at least the registry's, the device's and the activity actor's", len(receives))
	}
	for _, r := range receives {
		name := r.FullName()
		paths := prog.blockingPaths(r)
		why, known := knownBlocking[name]
		switch {
		case len(paths) > 0 && !known:
			t.Errorf("%s blocks; move the wait out of the actor and send its outcome back as a message:\n\t%s", name, strings.Join(paths, "\n\t"))
		case len(paths) == 0 && known:
			t.Errorf("%s no longer blocks: remove it from knownBlocking (%s)", name, why)
		case known:
			t.Logf("%s still blocks (%s):\n\t%s", name, why, strings.Join(paths, "\n\t"))
		}
	}
}

// TestBlockingCheckFindsEachKind: the check above reports every kind of
// blocking it looks for, directly and through helpers, and nothing a
// goroutine or a select with a default does.
func TestBlockingCheckFindsEachKind(t *testing.T) {
	if testing.Short() {
		t.Skip("type-checks a fixture package from source")
	}
	prog := loadProgram(t, "./testdata/blockingfixture")
	want := map[string]string{
		"sleeper":       "time.Sleep",
		"transitive":    "time.Sleep",
		"filer":         "os.WriteFile",
		"syncer":        "(*os.File).Sync",
		"waiter":        "(*sync.WaitGroup).Wait",
		"receiver":      "channel receive",
		"sender":        "channel send",
		"selector":      "select without a default",
		"ranger":        "range over a channel",
		"literal":       "time.Sleep",
		"mutual":        "time.Sleep",
		"goroutine":     "",
		"timer":         "",
		"polite":        "",
		"selectDefault": "",
	}
	seen := map[string]bool{}
	for _, r := range prog.receives() {
		recv := r.Type().(*types.Signature).Recv().Type()
		if p, ok := recv.(*types.Pointer); ok {
			recv = p.Elem()
		}
		name := recv.(*types.Named).Obj().Name()
		seen[name] = true
		w, ok := want[name]
		if !ok {
			t.Errorf("fixture %s has no expectation", name)
			continue
		}
		got := strings.Join(prog.blockingPaths(r), "; ")
		switch {
		case w == "" && got != "":
			t.Errorf("%s: reported %q; it does not block", name, got)
		case w != "" && !strings.Contains(got, w):
			t.Errorf("%s: reported %q; want a path ending in %s", name, got, w)
		}
	}
	for name := range want {
		if !seen[name] {
			t.Errorf("fixture %s not found", name)
		}
	}
}

// program is a set of packages type-checked from source, and what their
// functions' bodies are.
type program struct {
	fset  *token.FileSet
	pkgs  []*checkedPackage
	decls map[string]funcBody // by types.Func.FullName

	mu   sync.Mutex
	memo map[string][]string // blocking paths from a function; nil while being walked
}

type checkedPackage struct {
	pkg   *types.Package
	info  *types.Info
	files []*ast.File
}

type funcBody struct {
	body *ast.BlockStmt
	info *types.Info
}

type listedForCheck struct {
	ImportPath string
	Dir        string
	GoFiles    []string
	Export     string
	DepOnly    bool
	Standard   bool
	Module     *struct{ Path string }
}

// loadProgram type-checks the packages matching pattern from source and
// every package of this module they import, using the compiler's export
// data (go list -export) for everything else.
func loadProgram(t *testing.T, pattern string) *program {
	t.Helper()
	cmd := exec.Command("go", "list", "-e", "-export", "-deps", "-json", pattern)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %s: %v\n%s", pattern, err, stderr.String())
	}
	exports := map[string]string{}
	var ours []listedForCheck
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listedForCheck
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decode go list output: %v", err)
		}
		exports[p.ImportPath] = p.Export
		inModule := p.Module != nil && p.Module.Path == module
		if !p.DepOnly || (inModule && !p.Standard) {
			ours = append(ours, p)
		}
	}
	prog := &program{fset: token.NewFileSet(), decls: map[string]funcBody{}, memo: map[string][]string{}}
	imp := importer.ForCompiler(prog.fset, "gc", func(path string) (io.ReadCloser, error) {
		f, ok := exports[path]
		if !ok || f == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(f)
	})
	for _, p := range ours {
		var files []*ast.File
		for _, name := range p.GoFiles {
			f, err := parser.ParseFile(prog.fset, filepath.Join(p.Dir, name), nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, f)
		}
		info := &types.Info{Uses: map[*ast.Ident]types.Object{}, Selections: map[*ast.SelectorExpr]*types.Selection{}, Defs: map[*ast.Ident]types.Object{}, Types: map[ast.Expr]types.TypeAndValue{}}
		conf := types.Config{Importer: imp}
		pkg, err := conf.Check(p.ImportPath, prog.fset, files, info)
		if err != nil {
			t.Fatalf("type-check %s: %v", p.ImportPath, err)
		}
		prog.pkgs = append(prog.pkgs, &checkedPackage{pkg: pkg, info: info, files: files})
		for _, f := range files {
			for _, d := range f.Decls {
				if fd, ok := d.(*ast.FuncDecl); ok && fd.Body != nil {
					if fn, ok := info.Defs[fd.Name].(*types.Func); ok {
						prog.decls[fn.FullName()] = funcBody{body: fd.Body, info: info}
					}
				}
			}
		}
	}
	return prog
}

// receives returns every method named Receive of the packages matching the
// pattern (not of the module packages loaded only because they import).
func (p *program) receives() []*types.Func {
	var out []*types.Func
	for _, cp := range p.pkgs {
		for _, f := range cp.files {
			for _, d := range f.Decls {
				if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv != nil && fd.Name.Name == "Receive" && fd.Body != nil {
					out = append(out, cp.info.Defs[fd.Name].(*types.Func))
				}
			}
		}
	}
	slices.SortFunc(out, func(a, b *types.Func) int { return strings.Compare(a.FullName(), b.FullName()) })
	return out
}

// blockingPaths lists how fn reaches a blocking operation, one path per
// operation found ("a → b → time.Sleep"); none when it does not.
func (p *program) blockingPaths(fn *types.Func) []string {
	return p.pathsFrom(fn.FullName())
}

func (p *program) pathsFrom(name string) []string {
	p.mu.Lock()
	paths, done := p.memo[name]
	if done {
		p.mu.Unlock()
		return paths // nil while being walked: a cycle adds nothing new
	}
	p.memo[name] = nil
	p.mu.Unlock()
	fb, ok := p.decls[name]
	if !ok {
		return nil
	}
	w := &blockWalker{prog: p, info: fb.info, self: shortName(name)}
	w.block(fb.body)
	p.mu.Lock()
	p.memo[name] = w.paths
	p.mu.Unlock()
	return w.paths
}

// shortName drops the module path from a function's full name.
func shortName(full string) string {
	return strings.ReplaceAll(strings.ReplaceAll(full, module+"/", ""), protoactor, "actor")
}

type blockWalker struct {
	prog  *program
	info  *types.Info
	self  string
	paths []string
}

func (w *blockWalker) report(what string) {
	if p := w.self + " → " + what; !slices.Contains(w.paths, p) {
		w.paths = append(w.paths, p)
	}
}

func (w *blockWalker) block(b *ast.BlockStmt) {
	ast.Inspect(b, w.visit)
}

func (w *blockWalker) visit(n ast.Node) bool {
	switch n := n.(type) {
	case *ast.GoStmt:
		// Its function runs on another goroutine, which may block; its
		// arguments are evaluated here.
		for _, a := range n.Call.Args {
			ast.Inspect(a, w.visit)
		}
		return false
	case *ast.SelectStmt:
		hasDefault := false
		for _, c := range n.Body.List {
			if c.(*ast.CommClause).Comm == nil {
				hasDefault = true
			}
		}
		if !hasDefault {
			w.report("select without a default")
		}
		for _, c := range n.Body.List {
			cc := c.(*ast.CommClause)
			// The communication itself is the select's: only what the
			// expressions around it call is walked.
			switch s := cc.Comm.(type) {
			case *ast.SendStmt:
				ast.Inspect(s.Value, w.visit)
			case *ast.ExprStmt:
				w.operand(s.X)
			case *ast.AssignStmt:
				for _, r := range s.Rhs {
					w.operand(r)
				}
			}
			for _, s := range cc.Body {
				ast.Inspect(s, w.visit)
			}
		}
		return false
	case *ast.CallExpr:
		if fn := w.callee(n); fn != nil && runsElsewhere[fn.Origin().FullName()] {
			ast.Inspect(n.Fun, w.visit)
			for _, a := range n.Args {
				if _, lit := ast.Unparen(a).(*ast.FuncLit); !lit {
					ast.Inspect(a, w.visit)
				}
			}
			return false
		}
		w.call(n)
	case *ast.CompositeLit:
		if t := w.info.Types[n].Type; t != nil {
			if named, ok := types.Unalias(t).(*types.Named); ok && named.Obj().Pkg() != nil {
				prefix := named.Obj().Pkg().Path() + "." + named.Obj().Name() + "."
				for _, e := range n.Elts {
					if kv, ok := e.(*ast.KeyValueExpr); ok {
						if _, lit := kv.Value.(*ast.FuncLit); lit && runsElsewhere[prefix+kv.Key.(*ast.Ident).Name] {
							continue
						}
						ast.Inspect(kv.Value, w.visit)
					} else {
						ast.Inspect(e, w.visit)
					}
				}
				return false
			}
		}
	case *ast.SendStmt:
		w.report("channel send")
	case *ast.UnaryExpr:
		if n.Op == token.ARROW {
			w.report("channel receive")
		}
	case *ast.RangeStmt:
		if t := w.info.Types[n.X].Type; t != nil {
			if _, ok := t.Underlying().(*types.Chan); ok {
				w.report("range over a channel")
			}
		}
	}
	return true
}

// operand walks the channel operand of a select case (<-x.c(), say)
// without reporting the receive itself.
func (w *blockWalker) operand(e ast.Expr) {
	if u, ok := ast.Unparen(e).(*ast.UnaryExpr); ok && u.Op == token.ARROW {
		ast.Inspect(u.X, w.visit)
		return
	}
	ast.Inspect(e, w.visit)
}

// callee is the function c calls, when it is one (not a function value).
func (w *blockWalker) callee(c *ast.CallExpr) *types.Func {
	var fn *types.Func
	switch f := ast.Unparen(c.Fun).(type) {
	case *ast.Ident:
		fn, _ = w.info.Uses[f].(*types.Func)
	case *ast.SelectorExpr:
		if sel, ok := w.info.Selections[f]; ok {
			fn, _ = sel.Obj().(*types.Func)
		} else {
			fn, _ = w.info.Uses[f.Sel].(*types.Func) // a package-qualified function
		}
	case *ast.IndexExpr: // an instantiated generic function
		if id, ok := f.X.(*ast.Ident); ok {
			fn, _ = w.info.Uses[id].(*types.Func)
		}
	}
	return fn
}

func (w *blockWalker) call(c *ast.CallExpr) {
	fn := w.callee(c)
	if fn == nil {
		return
	}
	fn = fn.Origin()
	name := fn.FullName()
	if _, ok := notBlocking[name]; ok {
		return
	}
	if why, ok := blockingCalls[name]; ok {
		w.report(shortName(name) + " (" + why + ")")
		return
	}
	if pkg := fn.Pkg(); pkg != nil && pkg.Path() == "os" {
		sig := fn.Type().(*types.Signature)
		if sig.Recv() != nil && strings.Contains(sig.Recv().Type().String(), "os.File") || sig.Recv() == nil && slices.Contains(osFileFuncs, fn.Name()) {
			w.report(name + " (file I/O)")
			return
		}
	}
	// One path per call is enough to find the wait.
	if paths := w.prog.pathsFrom(name); len(paths) > 0 {
		more := ""
		if len(paths) > 1 {
			more = fmt.Sprintf(" (and %d more paths)", len(paths)-1)
		}
		w.report(paths[0] + more)
	}
}

const module = "github.com/hapticd/hapticd"
