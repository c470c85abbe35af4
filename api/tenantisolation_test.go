package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/ejcloud/elasticjob/api"
)

// While tenant isolation is unavailable, a new namespace is refused (409,
// saying why and what accepts it) but an existing one may change; every
// namespace shown carries the mode.
func TestNewNamespaceRefusedWithoutTenantIsolation(t *testing.T) {
	ti := &api.TenantIsolation{Mode: api.TenantIsolationUnavailable, Reason: "the scheduler runs as uid 1000, not root"}
	tn := twoTeamsAPI(t, func(o *api.Options) { o.Tenancy.TenantIsolation = ti })
	rec := tn.call(http.MethodPut, "/api/namespaces/ops", "", "root", "s3cret")
	if rec.Code != http.StatusConflict || !strings.Contains(rec.Body.String(), "tenant_isolation=off") ||
		!strings.Contains(rec.Body.String(), "uid 1000") {
		t.Fatalf("a new namespace: %d %s", rec.Code, rec.Body)
	}
	if rec := tn.call(http.MethodPut, "/api/namespaces/pay", `{"weight":2}`, "root", "s3cret"); rec.Code != http.StatusOK {
		t.Fatalf("a change of pay: %d %s", rec.Code, rec.Body)
	}
	rec = tn.call(http.MethodGet, "/api/namespaces", "", "root", "s3cret")
	var list []struct {
		Name            string
		TenantIsolation *api.TenantIsolation `json:"tenantIsolation"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &list); err != nil || len(list) < 3 {
		t.Fatalf("list: %v %s", err, rec.Body)
	}
	for _, ns := range list {
		if ns.TenantIsolation == nil || *ns.TenantIsolation != *ti {
			t.Errorf("%s: tenantIsolation %+v", ns.Name, ns.TenantIsolation)
		}
	}
	ti.Mode = api.TenantIsolationOn
	if rec := tn.call(http.MethodPut, "/api/namespaces/ops", "", "root", "s3cret"); rec.Code != http.StatusCreated {
		t.Fatalf("a new namespace with isolation on: %d %s", rec.Code, rec.Body)
	}
}
