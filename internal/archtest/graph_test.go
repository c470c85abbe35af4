package archtest

import (
	"errors"
	"go/build"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// graph maps each package of the module (by its path relative to the
// module root, "." for the root) to the import paths of its non-test files.
type graph struct {
	module string
	pkgs   map[string][]string
}

// loadGraph returns every package under the module root, read once for the
// test binary: a dozen tests ask for it, and reading every package of the
// tree took seconds each under the race detector. Every test shares it, so
// none may change it.
func loadGraph(t *testing.T) graph {
	t.Helper()
	root := moduleRoot(t)
	theGraph.Do(func() { theGraph.g, theGraph.err = readGraph(root) })
	if theGraph.err != nil {
		t.Fatal(theGraph.err)
	}
	return theGraph.g
}

var theGraph struct {
	sync.Once
	g   graph
	err error
}

// readGraph reads every package under root.
func readGraph(root string) (graph, error) {
	mod, err := modulePath(filepath.Join(root, "go.mod"))
	if err != nil {
		return graph{}, err
	}
	g := graph{module: mod, pkgs: map[string][]string{}}
	err = filepath.WalkDir(root, func(dir string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if name := d.Name(); dir != root && (name == "testdata" || name == "node_modules" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
			return filepath.SkipDir
		}
		p, err := build.Default.ImportDir(dir, 0)
		var none *build.NoGoError
		if errors.As(err, &none) {
			return nil
		}
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, dir)
		g.pkgs[filepath.ToSlash(rel)] = p.Imports
		return nil
	})
	return g, err
}

func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		up := filepath.Dir(dir)
		if up == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = up
	}
}

func modulePath(gomod string) (string, error) {
	b, err := os.ReadFile(gomod)
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "module "); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`), nil
		}
	}
	return "", errors.New(gomod + " has no module line")
}

// local returns the module-relative path of an import of the module, or
// false for an import from elsewhere.
func (g graph) local(imp string) (string, bool) {
	if imp == g.module {
		return ".", true
	}
	rel, ok := strings.CutPrefix(imp, g.module+"/")
	return rel, ok
}

// isStd reports whether imp is in the standard library (its first element
// has no dot, and it is not the module's).
func (g graph) isStd(imp string) bool {
	first, _, _ := strings.Cut(imp, "/")
	_, local := g.local(imp)
	return !strings.Contains(first, ".") && !local
}

// impure lists, for each package of pure, its imports that are neither the
// standard library nor another package of pure: "app imports M/registry".
func (g graph) impure(pure []string) []string {
	var out []string
	for _, p := range pure {
		imps, ok := g.pkgs[p]
		if !ok {
			out = append(out, p+" is listed as pure but is not a package of the module")
			continue
		}
		for _, imp := range imps {
			if rel, local := g.local(imp); g.isStd(imp) || local && slices.Contains(pure, rel) {
				continue
			}
			out = append(out, p+" imports "+imp)
		}
	}
	return out
}

// within reports whether package p is dir or below it.
func within(p, dir string) bool { return p == dir || strings.HasPrefix(p, dir+"/") }

// reaches lists, for each package at or below from, a chain of imports
// inside the module that ends in a package at or below to:
// "scheduler → scheduler/x → history/trace".
func (g graph) reaches(from, to string) []string {
	var out []string
	for _, p := range sortedKeys(g.pkgs) {
		if !within(p, from) {
			continue
		}
		if chain := g.path(p, to, map[string]bool{}); chain != nil {
			out = append(out, strings.Join(chain, " → "))
		}
	}
	return out
}

// path is a chain of local imports from p to a package below to, or nil.
func (g graph) path(p, to string, seen map[string]bool) []string {
	if seen[p] {
		return nil
	}
	seen[p] = true
	for _, imp := range g.pkgs[p] {
		rel, local := g.local(imp)
		if !local {
			continue
		}
		if within(rel, to) {
			return []string{p, rel}
		}
		if rest := g.path(rel, to, seen); rest != nil {
			return append([]string{p}, rest...)
		}
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
