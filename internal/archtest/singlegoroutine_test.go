package archtest

import (
	"bufio"
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// singleGoroutineList is the list of packages make test runs without the
// race detector (scripts/test.sh reads it).
const singleGoroutineList = "scripts/single-goroutine.txt"

// startsGoroutines are the standard library's packages that start
// goroutines of their own for their callers (servers, a child's pipes,
// signal delivery).
var startsGoroutines = []string{"net", "net/http", "os/exec", "os/signal"}

// TestSingleGoroutinePackages: every package make test runs without the
// race detector runs its tests in one goroutine, so the detector would
// have no two goroutines to find a race between. Neither the package (its
// tests included) nor any package of the module it imports has a go
// statement, calls an AfterFunc (time's and context's run their function
// on a goroutine of its own), calls Parallel (a parallel test runs beside
// others), or imports what starts goroutines on its own: net, net/http,
// os/exec, os/signal, or anything outside the module and the standard
// library.
func TestSingleGoroutinePackages(t *testing.T) {
	root := moduleRoot(t)
	mod, err := modulePath(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	listed := readList(t, filepath.Join(root, singleGoroutineList))
	if len(listed) == 0 {
		t.Fatalf("%s lists no package", singleGoroutineList)
	}
	for _, rel := range listed {
		checked := map[string]bool{}
		var check func(rel string, tests bool)
		check = func(rel string, tests bool) {
			if checked[rel] {
				return
			}
			checked[rel] = true
			p, err := build.Default.ImportDir(filepath.Join(root, rel), 0)
			if err != nil {
				t.Errorf("%s (for %s): %v", rel, listed, err)
				return
			}
			files, imports := p.GoFiles, p.Imports
			if tests {
				if len(p.TestGoFiles)+len(p.XTestGoFiles) == 0 {
					t.Errorf("%s, in %s, has no tests", rel, singleGoroutineList)
				}
				files = slices.Concat(files, p.TestGoFiles, p.XTestGoFiles)
				imports = slices.Concat(imports, p.TestImports, p.XTestImports)
			}
			for _, f := range files {
				for _, why := range goroutinesIn(t, filepath.Join(root, rel, f)) {
					t.Errorf("%s/%s %s: %s cannot run without the race detector (%s)", rel, f, why, listedBy(rel, listed), singleGoroutineList)
				}
			}
			for _, imp := range imports {
				switch {
				case imp == mod || strings.HasPrefix(imp, mod+"/"):
					check(strings.TrimPrefix(strings.TrimPrefix(imp, mod), "/"), false)
				case slices.Contains(startsGoroutines, imp):
					t.Errorf("%s imports %s, which starts goroutines: %s cannot run without the race detector", rel, imp, listedBy(rel, listed))
				case strings.Contains(strings.SplitN(imp, "/", 2)[0], "."):
					t.Errorf("%s imports %s, outside the module and the standard library: %s cannot run without the race detector", rel, imp, listedBy(rel, listed))
				}
			}
		}
		check(rel, true)
	}
}

func listedBy(rel string, listed []string) string {
	if slices.Contains(listed, rel) {
		return rel
	}
	return "what imports " + rel
}

// readList reads a list of package directories, one per line, # comments.
func readList(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); line != "" && !strings.HasPrefix(line, "#") {
			out = append(out, line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// goroutinesIn says where file starts, or lets run, a second goroutine.
func goroutinesIn(t *testing.T, file string) []string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	at := func(n ast.Node, what string) {
		found = append(found, "line "+strconv.Itoa(fset.Position(n.Pos()).Line)+": "+what)
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.GoStmt:
			at(n, "a go statement")
		case *ast.SelectorExpr:
			if n.Sel.Name == "AfterFunc" || n.Sel.Name == "Parallel" {
				at(n, n.Sel.Name)
			}
		}
		return true
	})
	return found
}
