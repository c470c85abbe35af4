package api_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/ejcloud/elasticjob/api"
	"github.com/gin-gonic/gin"
)

// The document is served as JSON without a login, and is itself a valid
// OpenAPI 3.1 document (checked against the specification's schema).
func TestOpenAPIDocumentIsValid(t *testing.T) {
	e := newEnv(t, withCreds(testCreds))
	r := e.must(http.StatusOK, http.MethodGet, "/api/openapi.json", "")
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("Content-Type %q", ct)
	}
	doc := decode[map[string]any](t, r)
	if doc["openapi"] != "3.1.0" {
		t.Errorf("openapi = %v, want 3.1.0", doc["openapi"])
	}
	c := mustContract(t)
	c.mu.Lock()
	ok, errs := c.v.ValidateDocument()
	c.mu.Unlock()
	if !ok {
		t.Fatalf("the document is not valid OpenAPI 3.1:\n%s", describe(errs))
	}
}

var ginParam = regexp.MustCompile(`[:*]([A-Za-z0-9_]+)`)

// TestOpenAPIDescribesEveryRoute walks the router: every route must be in
// the document, and every documented operation must be a route.
func TestOpenAPIDescribesEveryRoute(t *testing.T) {
	e := newEnv(t, withMetrics(), withHistory(&fakeHistory{}), withAudit(newAuditLog(t)), withPackages(t),
		func(o *api.Options, _ *api.Credentials) {
			o.Files.Artifacts, o.Operate.Pprof, o.Tenancy.Secrets = http.NotFoundHandler(), true, testKeyring(t)
		})
	routes := map[string]bool{}
	for _, rt := range e.h.(*gin.Engine).Routes() {
		routes[rt.Method+" "+ginParam.ReplaceAllString(rt.Path, "{$1}")] = true
	}
	documented := map[string]bool{}
	c := mustContract(t)
	for path, item := range c.model.Paths.PathItems.FromOldest() {
		for method := range item.GetOperations().FromOldest() {
			documented[strings.ToUpper(method)+" "+path] = true
		}
	}
	var missing, extra []string
	for r := range routes {
		if !documented[r] {
			missing = append(missing, r)
		}
	}
	for d := range documented {
		if !routes[d] {
			extra = append(extra, d)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	if len(missing) > 0 {
		t.Errorf("routes the OpenAPI document (api/openapi.yaml) does not describe:\n  %s", strings.Join(missing, "\n  "))
	}
	if len(extra) > 0 {
		t.Errorf("operations in the OpenAPI document that no route serves:\n  %s", strings.Join(extra, "\n  "))
	}
	if len(routes) < 40 {
		t.Errorf("only %d routes walked; the walk is broken", len(routes))
	}
}

// The document keeps its conventions (api/doc.go): "500" everywhere; on
// /api, "401" unless the operation is open; every write (which goes to the
// elected leader) "503", and "403" unless it is open.
func TestOpenAPIConventions(t *testing.T) {
	c := mustContract(t)
	ops := 0
	for path, item := range c.model.Paths.PathItems.FromOldest() {
		for method, op := range item.GetOperations().FromOldest() {
			ops++
			name := strings.ToUpper(method) + " " + path
			has := func(code string) bool { return op.Responses != nil && op.Responses.Codes.GetOrZero(code) != nil }
			open := op.Security != nil && len(op.Security) == 0
			write := method != "get" && method != "head"
			want := []string{"500"}
			if strings.HasPrefix(path, "/api/") && !open {
				want = append(want, "401")
			}
			if write && strings.HasPrefix(path, "/api/") && path != "/api/login" { // forwarded writes (a login changes nothing shared)
				want = append(want, "503")
			}
			if write && !open {
				want = append(want, "403")
			}
			for _, code := range want {
				if !has(code) {
					t.Errorf("%s does not list %s", name, code)
				}
			}
		}
	}
	if ops < 40 {
		t.Fatalf("only %d operations read", ops)
	}
}

// The response check is not a rubber stamp: responses that depart from
// the document in each way it can are caught.
func TestContractCatchesDrift(t *testing.T) {
	c := mustContract(t)
	jsonHdr := http.Header{"Content-Type": {"application/json; charset=utf-8"}}
	app := `{"appName":"a","appURL":"file:///a.tgz","bootstrapScript":"bin/s","cpuCount":1,"memoryMB":128,"appCacheEnable":true,"eventTraceSamplingCount":0}`
	for _, bad := range []struct {
		name, method, path string
		code               int
		hdr                http.Header
		body               string
	}{
		{"undocumented status", "GET", "/api/app/list", http.StatusTeapot, jsonHdr, `{"message":"x"}`},
		{"error not {message}", "GET", "/api/app/a", http.StatusNotFound, jsonHdr, `{"error":"x"}`},
		{"error with extra field", "GET", "/api/app/a", http.StatusNotFound, jsonHdr, `{"message":"x","code":1}`},
		{"empty message", "GET", "/api/app/a", http.StatusNotFound, jsonHdr, `{"message":""}`},
		{"wrong type", "GET", "/api/app/a", http.StatusOK, jsonHdr, strings.Replace(app, `"cpuCount":1`, `"cpuCount":"1"`, 1)},
		{"missing field", "GET", "/api/app/a", http.StatusOK, jsonHdr, strings.Replace(app, `"memoryMB":128,`, "", 1)},
		{"undocumented field", "GET", "/api/app/a", http.StatusOK, jsonHdr, strings.Replace(app, `{`, `{"secret":1,`, 1)},
		{"list row without disabled", "GET", "/api/app/list", http.StatusOK, jsonHdr, "[" + app + "]"},
		{"not a date-time", "GET", "/api/job/tasks/ready", http.StatusOK, jsonHdr, `[{"jobName":"j","times":1,"since":"yesterday"}]`},
		{"undocumented content type", "GET", "/api/app/a", http.StatusOK, http.Header{"Content-Type": {"text/html"}}, "<p>"},
		{"401 without a challenge", "GET", "/api/app/a", http.StatusUnauthorized, jsonHdr, `{"message":"log in"}`},
		{"unknown route, HTML 404", "GET", "/api/nope", http.StatusNotFound, http.Header{"Content-Type": {"text/html"}}, "<h1>404</h1>"},
	} {
		req := httptest.NewRequest(bad.method, bad.path, nil)
		if c.problems(req, bad.code, bad.hdr, []byte(bad.body)) == "" {
			t.Errorf("%s: %d %s passed the contract check", bad.name, bad.code, bad.body)
		}
	}
	// …and a good one passes.
	req := httptest.NewRequest("GET", "/api/app/list", nil)
	var row map[string]any
	_ = json.Unmarshal([]byte(app), &row)
	row["disabled"] = false
	good, _ := json.Marshal([]any{row})
	if p := c.problems(req, http.StatusOK, jsonHdr, good); p != "" {
		t.Errorf("a documented response fails the check:\n%s", p)
	}
}

var _ = api.OpenAPI
