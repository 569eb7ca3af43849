package protocol

import (
	"fmt"
	"go/ast"
	"go/importer"
	goparser "go/parser"
	"go/token"
	"go/types"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestMessageArgumentsAreCopied: messagef prints what fmt.Sprintf prints
// for each type it copies, and every errAt and warnings.add of the package
// passes only those types (another would print as an argument errAt cannot
// format: messagef may not hand it to fmt, or every caller's arguments would
// escape to the heap again).
func TestMessageArgumentsAreCopied(t *testing.T) {
	for _, tc := range []struct {
		format string
		args   []any
		want   string // "" : what fmt.Sprintf prints
	}{
		{"%s %q", []any{"gain", "gain"}, ""},
		{"%q", []any{[]byte(`a "b"`)}, ""},
		{"%s", []any{[]byte("bytes")}, ""},
		{"%v", []any{[]string{"x", "y", "z"}}, ""},
		{"%d..%d", []any{42, -7}, ""},
		{"%g %g %g", []any{0.1 + 0.2, 1e21, -3.5e-7}, ""},
		{"%s", []any{KindObject}, ""},
		{"%s", []any{KeyForceGate}, ""},
		{"%s", []any{nameList{"a", "b", "c"}}, "a, b, c"},
	} {
		want := tc.want
		if want == "" {
			want = fmt.Sprintf(tc.format, tc.args...)
		}
		if got := messagef(tc.format, tc.args); got != want {
			t.Errorf("messagef(%q, %#v) = %q, want %q", tc.format, tc.args, got, want)
		}
	}
	if got := messagef("100%% sure", nil); got != "100%% sure" {
		t.Errorf("without arguments the format is the message, as Errorf's: got %q", got)
	}

	// Every call's argument types, from the package's own source. The
	// standard library's types come from the go command (importer.Default),
	// which a test binary run elsewhere (the Windows tests under Wine) has
	// not: the check runs where the toolchain is, as in CI's Linux run.
	if _, err := exec.LookPath(filepath.Join(runtime.GOROOT(), "bin", "go")); err != nil {
		t.Skipf("no go command to type-check the package's source with: %v", err)
	}
	imp := &sourceImporter{fset: token.NewFileSet(), std: importer.Default(), done: map[string]*types.Package{}}
	info := &types.Info{Types: map[ast.Expr]types.TypeAndValue{}}
	files, err := imp.check(".", "github.com/hapticd/hapticd/protocol", info)
	if err != nil {
		t.Fatal(err)
	}
	fset := imp.fset
	copied := map[string]bool{"string": true, "[]byte": true, "[]string": true, "int": true, "float64": true,
		"github.com/hapticd/hapticd/protocol.JSONKind": true, "github.com/hapticd/hapticd/protocol.Key": true,
		"github.com/hapticd/hapticd/protocol.nameList": true}
	calls := 0
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			first := 0 // the index of the format among the arguments
			switch fn := call.Fun.(type) {
			case *ast.Ident:
				if fn.Name != "errAt" {
					return true
				}
				first = 2
			case *ast.SelectorExpr:
				if x := info.Types[fn.X].Type; fn.Sel.Name != "add" || x == nil || x.String() != "github.com/hapticd/hapticd/protocol.warnings" {
					return true
				}
				first = 2
			default:
				return true
			}
			calls++
			for _, a := range call.Args[first+1:] {
				typ := info.Types[a].Type
				if typ == nil {
					t.Errorf("%s: an argument of no type the check could resolve", fset.Position(a.Pos()))
					continue
				}
				if types.IsInterface(typ) { // a forwarded ...any: checked at its own call
					continue
				}
				if b, ok := typ.Underlying().(*types.Basic); ok && b.Info()&types.IsUntyped != 0 {
					typ = types.Default(typ)
				}
				if !copied[typ.String()] {
					t.Errorf("%s: an argument of type %s, which messagef does not copy: add it there", fset.Position(a.Pos()), typ)
				}
			}
			return true
		})
	}
	if calls < 100 {
		t.Fatalf("found %d calls of errAt and warnings.add; the package has more", calls)
	}
}

// sourceImporter type-checks the module's packages from their source and
// imports the standard library's from export data.
type sourceImporter struct {
	fset *token.FileSet
	std  types.Importer
	done map[string]*types.Package
}

const modulePath = "github.com/hapticd/hapticd/"

func (s *sourceImporter) Import(path string) (*types.Package, error) {
	if !strings.HasPrefix(path, modulePath) {
		return s.std.Import(path)
	}
	if p, ok := s.done[path]; ok {
		return p, nil
	}
	if _, err := s.check(filepath.Join("..", strings.TrimPrefix(path, modulePath)), path, nil); err != nil {
		return nil, err
	}
	return s.done[path], nil
}

// check type-checks the package in dir (its files but the tests).
func (s *sourceImporter) check(dir, path string, info *types.Info) ([]*ast.File, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	var files []*ast.File
	for _, p := range paths {
		if strings.HasSuffix(p, "_test.go") {
			continue
		}
		f, err := goparser.ParseFile(s.fset, p, nil, 0)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	conf := types.Config{Importer: s}
	pkg, err := conf.Check(path, s.fset, files, info)
	if err != nil {
		return nil, fmt.Errorf("type-checking %s: %w", path, err)
	}
	s.done[path] = pkg
	return files, nil
}
