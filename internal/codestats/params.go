package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
)

// UnusedParams lists the named parameters that the body of a plain
// function (not a method: a method may keep a parameter to satisfy an
// interface) never mentions, as "file:line: func p". A parameter named _ is
// unused on purpose and left out; so are functions whose value is taken
// (passed as a func value), which must keep their signature: those are
// found by name anywhere in the package, so a listed one may still be a
// value somewhere — read before deleting.
func UnusedParams(root string) ([]string, error) {
	fset := token.NewFileSet()
	type fn struct {
		decl *ast.FuncDecl
		file string
	}
	pkgs := map[string][]*ast.File{} // dir → files (test files too: they use the functions)
	var fns []fn
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); p != root && (n == "testdata" || n == "node_modules" || strings.HasPrefix(n, ".") || strings.HasPrefix(n, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return fmt.Errorf("parse %s: %w", p, err)
		}
		pkgs[filepath.Dir(p)] = append(pkgs[filepath.Dir(p)], f)
		if strings.HasSuffix(p, "_test.go") {
			return nil
		}
		for _, decl := range f.Decls {
			if d, ok := decl.(*ast.FuncDecl); ok && d.Recv == nil && d.Body != nil {
				fns = append(fns, fn{d, p})
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, f := range fns {
		used := mentioned(f.decl.Body)
		var unused []string
		for _, field := range f.decl.Type.Params.List {
			for _, name := range field.Names {
				if name.Name != "_" && !used[name.Name] {
					unused = append(unused, name.Name)
				}
			}
		}
		if len(unused) == 0 || takenAsValue(pkgs[filepath.Dir(f.file)], f.decl.Name.Name) {
			continue
		}
		pos := fset.Position(f.decl.Pos())
		rel, _ := filepath.Rel(root, pos.Filename)
		out = append(out, fmt.Sprintf("%s:%d: %s %s", filepath.ToSlash(rel), pos.Line, f.decl.Name.Name, strings.Join(unused, ", ")))
	}
	return out, nil
}

// mentioned is the set of identifiers in n that may name a variable: not
// a selector's field or method name (x.name), not a struct literal's key.
func mentioned(n ast.Node) map[string]bool {
	m := map[string]bool{}
	skip := map[*ast.Ident]bool{}
	ast.Inspect(n, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.SelectorExpr:
			skip[x.Sel] = true
		case *ast.KeyValueExpr:
			if id, ok := x.Key.(*ast.Ident); ok {
				skip[id] = true
			}
		case *ast.Ident:
			if !skip[x] {
				m[x.Name] = true
			}
		}
		return true
	})
	return m
}

// takenAsValue reports whether name appears in files other than as the
// function of a call or its own declaration.
func takenAsValue(files []*ast.File, name string) bool {
	found := false
	for _, f := range files {
		calls := map[*ast.Ident]bool{}
		ast.Inspect(f, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.CallExpr:
				if id, ok := x.Fun.(*ast.Ident); ok {
					calls[id] = true
				}
			case *ast.FuncDecl:
				calls[x.Name] = true
			}
			return true
		})
		ast.Inspect(f, func(n ast.Node) bool {
			if id, ok := n.(*ast.Ident); ok && id.Name == name && !calls[id] {
				found = true
			}
			return !found
		})
	}
	return found
}
