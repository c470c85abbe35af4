package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEveryPackageHasADocComment: every package of the module (its
// non-test files under the default build context) has a package doc
// comment: "// Package name ..." (a command's says what it does in its
// own words). A new package without one fails here, naming it.
func TestEveryPackageHasADocComment(t *testing.T) {
	root := moduleRoot(t)
	g := loadGraph(t)
	for _, rel := range sortedKeys(g.pkgs) {
		if why := packageDoc(filepath.Join(root, filepath.FromSlash(rel))); why != "" {
			t.Errorf("%s: %s", rel, why)
		}
	}
}

// TestPackageDocFindsMissingComments runs the check on made-up packages.
func TestPackageDocFindsMissingComments(t *testing.T) {
	dir := t.TempDir()
	write := func(name, src string) {
		t.Helper()
		writeFile(t, filepath.Join(dir, name), src)
	}
	write("a.go", "package a\n")
	if why := packageDoc(dir); !strings.Contains(why, "no package doc comment") {
		t.Errorf("a package without a doc comment: %q", why)
	}
	write("doc.go", "// Package a does a thing.\npackage a\n")
	if why := packageDoc(dir); why != "" {
		t.Errorf("a package with a doc comment: %q", why)
	}
	write("doc.go", "// a does a thing.\npackage a\n")
	if why := packageDoc(dir); !strings.Contains(why, "should start") {
		t.Errorf("a doc comment that does not name the package: %q", why)
	}
}

// packageDoc says what is wrong with the package doc comment of the
// package in dir ("" when nothing is).
func packageDoc(dir string) string {
	fset := token.NewFileSet()
	var files []*ast.File
	name := ""
	matches, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	for _, m := range matches {
		if strings.HasSuffix(m, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, m, nil, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			return err.Error()
		}
		files = append(files, f)
		name = f.Name.Name
	}
	bad := ""
	for _, f := range files {
		if f.Doc == nil {
			continue
		}
		text := f.Doc.Text()
		if name == "main" || strings.HasPrefix(text, "Package "+name+" ") || strings.HasPrefix(text, "Package "+name+"\n") {
			return "" // a command's doc comment says what it does in its own words
		}
		bad = "the package doc comment should start \"Package " + name + "\""
	}
	if bad != "" {
		return bad
	}
	if len(files) == 0 {
		return ""
	}
	return "no package doc comment (put one in doc.go: \"// Package " + name + " ...\")"
}

func writeFile(t *testing.T, name, src string) {
	t.Helper()
	if err := os.WriteFile(name, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestArchitectureListsEveryPackage: docs/architecture.md's package table
// names every package of the module (as `path`), so a newcomer finds each
// one there with its role and whether it is public. A new package gets a
// row there.
func TestArchitectureListsEveryPackage(t *testing.T) {
	root := moduleRoot(t)
	doc, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	g := loadGraph(t)
	for _, rel := range sortedKeys(g.pkgs) {
		if rel == "." {
			continue
		}
		if !strings.Contains(string(doc), "`"+rel+"`") {
			t.Errorf("%s: not in docs/architecture.md's package table; add a row (its role, whether it is public)", rel)
		}
	}
}
