package archtest

import (
	"errors"
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// mayWriteTheStore are the packages (with what is below them) whose
// non-test code may build store writes (store.Create, Put, Set, Delete,
// an Op literal or a write kind): the stores themselves and the registry,
// which turns every other package's intents into writes behind the
// leader's fence. Everything else says what it means to the registry.
// Tests are not held to it: they set up, and corrupt, the stores they own.
var mayWriteTheStore = map[string]string{
	"store":    "the stores and their front (cache, txn, chains)",
	"registry": "the sealed registry: every write is an intent behind the fence",
	// The election precedes the fence: a candidate makes its directory and
	// keys itself, as the ZooKeeper election does on its own connection.
	"election/etcd": "the election on etcd, which writes its own directory and keys",
}

// storeWrites are the names of package store that make a write.
var storeWrites = map[string]bool{"Create": true, "Put": true, "Set": true, "Delete": true,
	"OpCreate": true, "OpPut": true, "OpSet": true, "OpDelete": true}

// TestStoreWritesOnlyInStoreAndRegistry: a package outside store/ and
// registry/ that builds a store write (kv.Commit(ctx, store.Put(...)))
// fails here, naming the file and the write.
func TestStoreWritesOnlyInStoreAndRegistry(t *testing.T) {
	eachFileOutside(t, mayWriteTheStore, func(fset *token.FileSet, f *ast.File, storePath string) {
		for _, w := range storeWritesIn(fset, f, storePath) {
			t.Errorf("%s: only %s may write the store; say it to the registry", w, allowedList())
		}
	})
}

// eachFileOutside parses every non-test Go file of the module outside the
// packages allowed names (and what is below them), and calls fn with the
// import path of package store.
func eachFileOutside(t *testing.T, allowed map[string]string, fn func(fset *token.FileSet, f *ast.File, storePath string)) {
	t.Helper()
	root := moduleRoot(t)
	mod, err := modulePath(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	files := 0
	err = filepath.WalkDir(root, func(dir string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if name := d.Name(); dir != root && (name == "testdata" || name == "node_modules" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
			return filepath.SkipDir
		}
		rel, _ := filepath.Rel(root, dir)
		rel = filepath.ToSlash(rel)
		for a := range allowed {
			if within(rel, a) {
				return filepath.SkipDir
			}
		}
		p, err := build.Default.ImportDir(dir, 0)
		var none *build.NoGoError
		if errors.As(err, &none) {
			return nil
		}
		if err != nil {
			return err
		}
		for _, name := range p.GoFiles {
			files++
			fset := token.NewFileSet()
			src, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				return err
			}
			f, err := parser.ParseFile(fset, rel+"/"+name, src, 0)
			if err != nil {
				return err
			}
			fn(fset, f, mod+"/store")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("read %d files: the test looks at the wrong tree", files)
	}
}

func allowedList() string {
	var out []string
	for p := range mayWriteTheStore {
		out = append(out, p+"/")
	}
	if len(out) == 2 && out[0] > out[1] {
		out[0], out[1] = out[1], out[0]
	}
	return strings.Join(out, " and ")
}

// storeWritesIn lists the store writes a file builds: a selector of a
// write's name on the package store (whatever the file calls it), or an
// Op literal.
func storeWritesIn(fset *token.FileSet, f *ast.File, storePath string) []string {
	local := importName(f, storePath, "store")
	if local == "" || local == "_" {
		return nil
	}
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		x, ok := sel.X.(*ast.Ident)
		if !ok || x.Name != local || x.Obj != nil { // x.Obj: a local variable of that name
			return true
		}
		if storeWrites[sel.Sel.Name] {
			out = append(out, fset.Position(sel.Pos()).String()+" store."+sel.Sel.Name)
		}
		return true
	})
	ast.Inspect(f, func(n ast.Node) bool {
		if cl, ok := n.(*ast.CompositeLit); ok {
			if sel, ok := cl.Type.(*ast.SelectorExpr); ok {
				if x, ok := sel.X.(*ast.Ident); ok && x.Name == local && sel.Sel.Name == "Op" {
					out = append(out, fset.Position(cl.Pos()).String()+" store.Op{…}")
				}
			}
		}
		return true
	})
	return out
}

func TestStoreWriteCheckFindsWrites(t *testing.T) {
	const src = `package x

import (
	kvs "example.com/mod/store"
	"example.com/mod/registry"
)

func f(kv kvs.KV, r *registry.Registry) {
	_ = kv.Commit(ctx, kvs.Put("/a", nil), kvs.Check("/b", kvs.AnyVersion))
	_ = []kvs.Op{{Kind: kvs.OpDelete}}
	_ = kvs.Op{Path: "/c"}
	_, _ = kv.Get(ctx, "/a")
}
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "x.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := storeWritesIn(fset, f, "example.com/mod/store")
	want := []string{"x.go:9:21 store.Put", "x.go:10:22 store.OpDelete", "x.go:11:6 store.Op{…}"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("writes = %q\nwant %q", got, want)
	}
	if w := storeWritesIn(fset, f, "example.com/other/store"); w != nil {
		t.Errorf("another package's names counted: %q", w)
	}
}

// importName is what file f calls the package at path: its import's
// name, else def; "" when f does not import it.
func importName(f *ast.File, path, def string) string {
	for _, imp := range f.Imports {
		if p, _ := strconv.Unquote(imp.Path.Value); p == path {
			if imp.Name != nil {
				return imp.Name.Name
			}
			return def
		}
	}
	return ""
}
