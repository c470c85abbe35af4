package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"testing"
)

// mayReadRawNodes are the packages (with what is below them) whose
// non-test code may name the store's raw values, store.Node and
// store.Event: the stores, and the registry, which hands out typed
// records instead (its reads, its watches, registry.Stored for a reader
// that decodes only what changed). No exception above them: the catalog,
// the deadline watcher and the backfills read registry.Stored. Tests are
// not held to it: they set up, watch and corrupt the stores they own, and
// wrap a store.KV to inject a fault (scheduler's quorumlessKV).
var mayReadRawNodes = map[string]string{
	"store":    "the stores and their front (cache, txn, chains)",
	"registry": "the sealed registry: it decodes what it reads",
}

// rawNodeTypes are the names of package store that carry raw values.
var rawNodeTypes = map[string]bool{"Node": true, "Event": true}

// TestRawNodesOnlyInStoreAndRegistry: a package outside store/ and
// registry/ whose code names store.Node or store.Event (to decode a
// stored value itself) fails here, naming the file and the name.
func TestRawNodesOnlyInStoreAndRegistry(t *testing.T) {
	eachFileOutside(t, mayReadRawNodes, func(fset *token.FileSet, f *ast.File, storePath string) {
		for _, u := range rawNodesIn(fset, f, storePath) {
			t.Errorf("%s: only store/ and registry/ handle raw stored values; read a typed record from the registry (registry.Stored)", u)
		}
	})
}

// rawNodesIn lists the places a file names store.Node or store.Event
// (whatever the file calls package store).
func rawNodesIn(fset *token.FileSet, f *ast.File, storePath string) []string {
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
		if x, ok := sel.X.(*ast.Ident); ok && x.Name == local && x.Obj == nil && rawNodeTypes[sel.Sel.Name] {
			out = append(out, fset.Position(sel.Pos()).String()+" store."+sel.Sel.Name)
		}
		return true
	})
	return out
}

func TestRawNodeCheckFindsNames(t *testing.T) {
	const src = `package x

import kvs "example.com/mod/store"

func f(kv kvs.KV) ([]kvs.Node, <-chan kvs.Event) {
	var n kvs.Node
	_ = n
	return nil, nil
}
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "x.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := rawNodesIn(fset, f, "example.com/mod/store")
	want := []string{"x.go:5:22 store.Node", "x.go:5:39 store.Event", "x.go:6:8 store.Node"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("names = %q\nwant %q", got, want)
	}
	if u := rawNodesIn(fset, f, "example.com/other/store"); u != nil {
		t.Errorf("another package's names counted: %q", u)
	}
}
