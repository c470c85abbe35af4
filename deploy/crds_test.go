package deploy_test

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
)

// The CRDs' spec is the REST API's write schema (scripts/gen-crds.py writes them from
// api/openapi.yaml): the same fields, each of the same type, and nothing Kubernetes
// would default or a structural schema refuses.
func TestCRDsAreTheAPIsFields(t *testing.T) {
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]map[string]any `yaml:"properties"`
			} `yaml:"schemas"`
		} `yaml:"components"`
	}
	b, err := os.ReadFile("../api/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ file, kind, fields, name string }{
		{"cloudapps", "CloudApp", "AppFields", "appName"},
		{"cloudjobs", "CloudJob", "JobFields", "jobName"},
		{"cloudworkflows", "CloudWorkflow", "WorkflowFields", "name"},
	} {
		raw, err := os.ReadFile("kubernetes/base/crds/" + c.file + ".yaml")
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(raw), "additionalProperties: false") || strings.Contains(string(raw), "\n                default:") {
			t.Errorf("%s: additionalProperties false or a default", c.file)
		}
		var crd struct {
			Spec struct {
				Group, Scope string
				Names        struct{ Kind string }
				Versions     []struct {
					Name         string
					Subresources map[string]any
					Schema       struct {
						OpenAPIV3Schema struct {
							Properties struct {
								Spec struct {
									Properties map[string]map[string]any
								}
							}
						} `yaml:"openAPIV3Schema"`
					}
				}
			}
		}
		if err := yaml.Unmarshal(raw, &crd); err != nil {
			t.Fatal(err)
		}
		if crd.Spec.Group != "elasticjob.io" || crd.Spec.Scope != "Namespaced" || crd.Spec.Names.Kind != c.kind ||
			len(crd.Spec.Versions) != 1 || crd.Spec.Versions[0].Name != "v1" || crd.Spec.Versions[0].Subresources["status"] == nil {
			t.Errorf("%s: %+v", c.file, crd.Spec)
			continue
		}
		got := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties.Spec.Properties
		want := doc.Components.Schemas[c.fields].Properties
		var missing []string
		for f, s := range want {
			if f == c.name {
				continue // metadata.name
			}
			g, ok := got[f]
			if !ok {
				missing = append(missing, f)
				continue
			}
			if typ, ok := s["type"].(string); ok && g["type"] != typ {
				t.Errorf("%s: %s is %v, the API's %v", c.file, f, g["type"], typ)
			}
		}
		for f := range got {
			if _, ok := want[f]; !ok {
				t.Errorf("%s: spec.%s is no field of the API's %s", c.file, f, c.fields)
			}
		}
		slices.Sort(missing)
		if len(missing) > 0 {
			t.Errorf("%s: the API's fields %v are missing: run scripts/gen-crds.py", c.file, missing)
		}
	}
}
