package main

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Figures are the counts one run reports.
type Figures struct {
	Files, Lines     int
	BigFiles         int            // files over 300 lines
	LongFuncs        int            // functions over 60 lines
	Methods          map[string]int // "pkg/dir.Type" → method count
	FileOver, FuncOv int            // the thresholds used
}

func main() {
	tests := flag.Bool("tests", false, "count _test.go files instead of the non-test files")
	params := flag.Bool("params", false, "list plain functions' parameters their bodies never use")
	flag.Parse()
	root := "."
	if flag.NArg() > 0 {
		root = flag.Arg(0)
	}
	if *params {
		list, err := UnusedParams(root)
		if err != nil {
			fmt.Fprintln(os.Stderr, "codestats:", err)
			os.Exit(1)
		}
		for _, l := range list {
			fmt.Println(l)
		}
		return
	}
	f, err := Collect(root, *tests)
	if err != nil {
		fmt.Fprintln(os.Stderr, "codestats:", err)
		os.Exit(1)
	}
	f.Print(os.Stdout, 40)
}

// Collect walks root and counts every Go file (test files when tests is set,
// the others when not), skipping testdata, hidden and underscore folders and
// generated files.
func Collect(root string, tests bool) (Figures, error) {
	f := Figures{Methods: map[string]int{}, FileOver: 300, FuncOv: 60}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if p != root && (name == "testdata" || name == "node_modules" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") != tests {
			return nil
		}
		file, err := parser.ParseFile(fset, p, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return fmt.Errorf("parse %s: %w", p, err)
		}
		if ast.IsGenerated(file) {
			return nil
		}
		lines := fset.File(file.Pos()).LineCount()
		f.Files++
		f.Lines += lines
		if lines > f.FileOver {
			f.BigFiles++
		}
		dir, _ := filepath.Rel(root, filepath.Dir(p))
		for _, decl := range file.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok {
				continue
			}
			if fn.Body != nil && fset.Position(fn.End()).Line-fset.Position(fn.Pos()).Line+1 > f.FuncOv {
				f.LongFuncs++
			}
			if fn.Recv != nil && len(fn.Recv.List) == 1 {
				f.Methods[filepath.ToSlash(dir)+"."+recvName(fn.Recv.List[0].Type)]++
			}
		}
		return nil
	})
	return f, err
}

// recvName is the type name of a receiver expression (T, *T, T[K], *T[K]).
func recvName(e ast.Expr) string {
	for {
		switch t := e.(type) {
		case *ast.StarExpr:
			e = t.X
		case *ast.IndexExpr:
			e = t.X
		case *ast.IndexListExpr:
			e = t.X
		case *ast.Ident:
			return t.Name
		default:
			return "?"
		}
	}
}

// Print writes the figures, listing the types with more than max methods,
// the largest first.
func (f Figures) Print(w io.Writer, max int) {
	fmt.Fprintf(w, "files %d\nlines %d\nfiles over %d lines %d\nfunctions over %d lines %d\n",
		f.Files, f.Lines, f.FileOver, f.BigFiles, f.FuncOv, f.LongFuncs)
	var big []string
	for t, n := range f.Methods {
		if n > max {
			big = append(big, t)
		}
	}
	sort.Slice(big, func(i, j int) bool {
		if f.Methods[big[i]] != f.Methods[big[j]] {
			return f.Methods[big[i]] > f.Methods[big[j]]
		}
		return big[i] < big[j]
	})
	fmt.Fprintf(w, "types over %d methods %d\n", max, len(big))
	for _, t := range big {
		fmt.Fprintf(w, "  %-40s %d\n", t, f.Methods[t])
	}
}
