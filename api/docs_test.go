package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/ejcloud/elasticjob/api"
)

// The route reference of docs/api.md is generated from api/openapi.yaml
// (itself checked against the router by TestOpenAPIDescribesEveryRoute):
// this test fails when the two differ, and -update rewrites the block.
const (
	apiDoc      = "../docs/api.md"
	routesBegin = "<!-- BEGIN ROUTES: generated from api/openapi.yaml by `go test ./api -run TestAPIDocListsEveryRoute -update`; do not edit by hand -->\n"
	routesEnd   = "<!-- END ROUTES -->\n"
)

func TestAPIDocListsEveryRoute(t *testing.T) {
	doc, err := api.OpenAPI()
	if err != nil {
		t.Fatal(err)
	}
	want, err := renderRoutes(doc)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(apiDoc)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	before, rest, ok := strings.Cut(text, routesBegin)
	if !ok {
		t.Fatalf("%s has no line %q", apiDoc, routesBegin)
	}
	got, after, ok := strings.Cut(rest, routesEnd)
	if !ok {
		t.Fatalf("%s has no line %q", apiDoc, routesEnd)
	}
	if got == want {
		return
	}
	if *update {
		if err := os.WriteFile(apiDoc, []byte(before+routesBegin+want+routesEnd+after), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("the route list in %s differs from api/openapi.yaml; run go test ./api -run TestAPIDocListsEveryRoute -update\n%s",
		apiDoc, firstDiff(got, want))
}

func firstDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := range max(len(g), len(w)) {
		var a, b string
		if i < len(g) {
			a = g[i]
		}
		if i < len(w) {
			b = w[i]
		}
		if a != b {
			return fmt.Sprintf("line %d of the block:\n  doc:     %s\n  openapi: %s", i+1, a, b)
		}
	}
	return ""
}

// operation is one method of a path, as the reference lists it.
type operation struct {
	method, path, summary string
	tags                  []string
}

// renderRoutes lists every operation under its first tag, tags and paths
// in the document's order.
func renderRoutes(doc []byte) (string, error) {
	var top struct {
		Tags []struct{ Name, Description string } `json:"tags"`
	}
	if err := json.Unmarshal(doc, &top); err != nil {
		return "", err
	}
	ops, err := operations(doc)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	listed := 0
	for _, tag := range top.Tags {
		var rows []operation
		for _, op := range ops {
			if len(op.tags) > 0 && op.tags[0] == tag.Name {
				rows = append(rows, op)
			}
		}
		if len(rows) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n### %s\n\n%s\n\n| method | path | what |\n|---|---|---|\n", tag.Name, tag.Description)
		for _, op := range rows {
			fmt.Fprintf(&b, "| `%s` | `%s` | %s |\n", strings.ToUpper(op.method), op.path, strings.ReplaceAll(op.summary, "|", `\|`))
		}
		listed += len(rows)
	}
	if listed != len(ops) {
		return "", fmt.Errorf("%d of %d operations have no tag the document lists", len(ops)-listed, len(ops))
	}
	return b.String() + "\n", nil
}

// operations reads the document's paths in their written order (the
// JSON keeps the YAML's order).
func operations(doc []byte) ([]operation, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(doc, &top); err != nil {
		return nil, err
	}
	var out []operation
	err := eachMember(top["paths"], func(path string, item json.RawMessage) error {
		return eachMember(item, func(method string, raw json.RawMessage) error {
			switch method {
			case "get", "put", "post", "delete", "head", "patch", "options":
			default:
				return nil // parameters, summary of the path item
			}
			var op struct {
				Summary string   `json:"summary"`
				Tags    []string `json:"tags"`
			}
			if err := json.Unmarshal(raw, &op); err != nil {
				return fmt.Errorf("%s %s: %w", method, path, err)
			}
			out = append(out, operation{method, path, op.Summary, op.Tags})
			return nil
		})
	})
	return out, err
}

// eachMember calls fn for each member of a JSON object, in order.
func eachMember(raw json.RawMessage, fn func(string, json.RawMessage) error) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return fmt.Errorf("not a JSON object: %v", err)
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return err
		}
		if err := fn(t.(string), v); err != nil {
			return err
		}
	}
	return nil
}
