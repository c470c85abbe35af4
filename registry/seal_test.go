package registry

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strings"
	"testing"
)

// The registry is sealed (doc.go): what it exports names intents, never
// raw store access. This test reads the package's own source and fails on
// an exported function or method that hands out the store (store.KV) or
// takes or returns raw operations (store.Op) or raw values (store.Node,
// store.Event: a listing hands out Stored), on an exported method named
// KV, Store or Commit of the Registry, on an exported field of the
// Registry or of one of its facades (settings are Options at New), and on
// an exported alias of another package's name (one name per concept).
func TestRegistryIsSealed(t *testing.T) {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi os.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	if err != nil {
		t.Fatal(err)
	}
	raw := func(e ast.Expr) bool {
		found := false
		ast.Inspect(e, func(n ast.Node) bool {
			if s, ok := n.(*ast.SelectorExpr); ok {
				if x, ok := s.X.(*ast.Ident); ok && x.Name == "store" && (s.Sel.Name == "Op" || s.Sel.Name == "KV" || s.Sel.Name == "Node" || s.Sel.Name == "Event") {
					found = true
				}
			}
			if _, ok := n.(*ast.FuncType); ok && n != e { // a callback's own signature (Barrier's commit) is not the registry's
				return false
			}
			return !found
		})
		return found
	}
	for _, p := range pkgs {
		for _, f := range p.Files {
			for _, d := range f.Decls {
				switch d := d.(type) {
				case *ast.FuncDecl:
					if !d.Name.IsExported() || (d.Recv != nil && !ast.IsExported(recvName(d))) { // the views' store.KV methods: unexported types
						continue
					}
					if d.Name.Name == "New" { // New(kv store.KV): the registry over a store
						continue
					}
					if d.Recv != nil && (d.Name.Name == "KV" || d.Name.Name == "Store" || d.Name.Name == "Commit") && recvIs(d, "Registry") {
						t.Errorf("%s: Registry.%s exposes the store", fset.Position(d.Pos()), d.Name.Name)
					}
					for _, fl := range []*ast.FieldList{d.Type.Params, d.Type.Results} {
						if fl == nil {
							continue
						}
						for _, fld := range fl.List {
							if raw(fld.Type) {
								t.Errorf("%s: %s takes or returns raw store access", fset.Position(d.Pos()), d.Name.Name)
							}
						}
					}
				case *ast.GenDecl:
					for _, s := range d.Specs {
						ts, ok := s.(*ast.TypeSpec)
						if !ok || !ts.Name.IsExported() {
							continue
						}
						if st, ok := ts.Type.(*ast.StructType); ok && sealed[ts.Name.Name] {
							for _, fld := range st.Fields.List {
								for _, n := range fld.Names {
									if n.IsExported() {
										t.Errorf("%s: %s.%s is an exported field", fset.Position(n.Pos()), ts.Name.Name, n.Name)
									}
								}
								if len(fld.Names) == 0 && ast.IsExported(typeName(fld.Type)) {
									t.Errorf("%s: %s embeds %s", fset.Position(fld.Pos()), ts.Name.Name, typeName(fld.Type))
								}
							}
						}
						if !ts.Assign.IsValid() {
							continue
						}
						if _, sel := ts.Type.(*ast.SelectorExpr); sel {
							t.Errorf("%s: type %s re-exports another package's name", fset.Position(ts.Pos()), ts.Name.Name)
						}
					}
					if d.Tok == token.CONST || d.Tok == token.VAR {
						for _, s := range d.Specs {
							vs := s.(*ast.ValueSpec)
							for i, n := range vs.Names {
								if i < len(vs.Values) && n.IsExported() {
									if sel, ok := vs.Values[i].(*ast.SelectorExpr); ok {
										if _, pkg := sel.X.(*ast.Ident); pkg {
											t.Errorf("%s: %s re-exports another package's name", fset.Position(n.Pos()), n.Name)
										}
									}
								}
							}
						}
					}
				}
			}
		}
	}
}

// sealed are the Registry and its facades: no exported fields.
var sealed = map[string]bool{"Registry": true, "Config": true, "Flows": true, "Work": true, "Schedule": true, "Tenancy": true, "Term": true}

func typeName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.StarExpr:
		return typeName(e.X)
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return e.Sel.Name
	}
	return ""
}

func recvIs(d *ast.FuncDecl, typ string) bool { return recvName(d) == typ }

func recvName(d *ast.FuncDecl) string {
	e := d.Recv.List[0].Type
	if s, ok := e.(*ast.StarExpr); ok {
		e = s.X
	}
	if id, ok := e.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}
