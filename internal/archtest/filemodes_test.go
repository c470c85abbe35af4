package archtest

import (
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// tenantsFiles are files of the scheduler's processes (cmd/scheduler,
// cmd/mesos-local) that may be created open to group or others, with why:
// each is a tenant's own, in its sandbox, which the tenant's uid owns.
var tenantsFiles = map[string]string{
	"engine/mesos/embedded/process.go": "an executor's stdout and stderr in its sandbox: the tenant's own logs, chowned to its uid",
}

// notTheSchedulers are packages the scheduler's processes link whose files
// are the tenant's: the executor's side, run as the namespace's user in
// its sandbox and app cache.
func notTheSchedulers(p string) bool { return within(p, "executor") }

// TestSchedulerFilesAre0600: every file the scheduler or its embedded
// agent creates (os.WriteFile, os.OpenFile, an os.Root's OpenFile with a
// literal mode; os.Create, whose mode is 0666) is readable by its owner
// alone, unless tenantsFiles names it: an agent id, a lock, a checkpoint
// left 0644 is one more file a task on the host may read.
func TestSchedulerFilesAre0600(t *testing.T) {
	g := loadGraph(t)
	root := moduleRoot(t)
	linked := map[string]bool{}
	var visit func(p string)
	visit = func(p string) {
		if linked[p] {
			return
		}
		linked[p] = true
		for _, imp := range g.pkgs[p] {
			if rel, ok := g.local(imp); ok {
				visit(rel)
			}
		}
	}
	visit("cmd/scheduler")
	visit("cmd/mesos-local")
	checked := 0
	for _, p := range sortedKeys(g.pkgs) {
		if !linked[p] || notTheSchedulers(p) {
			continue
		}
		bp, err := build.Default.ImportDir(filepath.Join(root, p), 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range bp.GoFiles {
			rel := p + "/" + name
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, filepath.Join(root, rel), nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			checked++
			for _, bad := range openModes(fset, f) {
				if _, ok := tenantsFiles[rel]; ok {
					continue
				}
				t.Errorf("%s: %s: a file the scheduler writes must be 0600 (or named in tenantsFiles, with why)", rel, bad)
			}
		}
	}
	if checked < 100 {
		t.Fatalf("only %d files checked: the scheduler's packages were not found", checked)
	}
	for rel := range tenantsFiles {
		if !slices.ContainsFunc(sortedKeys(g.pkgs), func(p string) bool { return strings.HasPrefix(rel, p+"/") && linked[p] }) {
			t.Errorf("tenantsFiles names %s, which the scheduler does not link", rel)
		}
	}
}

// openModes lists the calls in f that create a file open to group or
// others: "line 12: os.WriteFile(…, 0644)".
func openModes(fset *token.FileSet, f *ast.File) []string {
	osName := ""
	for _, imp := range f.Imports {
		if path, _ := strconv.Unquote(imp.Path.Value); path == "os" {
			osName = "os"
			if imp.Name != nil {
				osName = imp.Name.Name
			}
		}
	}
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		x, _ := sel.X.(*ast.Ident)
		fromOS := x != nil && x.Name == osName && osName != ""
		at := fset.Position(call.Pos()).Line
		switch {
		case fromOS && sel.Sel.Name == "Create":
			out = append(out, "line "+strconv.Itoa(at)+": os.Create (mode 0666)")
		case (fromOS && sel.Sel.Name == "WriteFile" || sel.Sel.Name == "OpenFile") && len(call.Args) == 3:
			lit, ok := call.Args[2].(*ast.BasicLit)
			if !ok || lit.Kind != token.INT {
				return true // a mode passed on: its source is checked where it is written
			}
			mode, err := strconv.ParseUint(strings.ReplaceAll(lit.Value, "o", ""), 0, 32)
			if err == nil && mode&0o077 != 0 {
				out = append(out, "line "+strconv.Itoa(at)+": "+sel.Sel.Name+" with mode "+lit.Value)
			}
		}
		return true
	})
	return out
}
