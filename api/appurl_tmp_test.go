package api_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/ejcloud/elasticjob/api"
)

// TestAppURLUnderPrivateTmpWarns: under tenant isolation a file:// app URL under /tmp
// (/var/tmp, /dev/shm) is published with a Warning naming the setting, since the task's
// /tmp is private and every run would fail at its fetch; elsewhere, or with isolation
// off, no warning.
func TestAppURLUnderPrivateTmpWarns(t *testing.T) {
	on := func(o *api.Options, _ *api.Credentials) {
		o.Tenancy.TenantIsolation = &api.TenantIsolation{Mode: api.TenantIsolationOn}
	}
	e := newEnv(t, on)
	body := func(name, url string) string {
		return `{"appName":"` + name + `","appURL":"` + url + `","bootstrapScript":"bin/start.sh"}`
	}
	for _, url := range []string{"file:///tmp/app.tar.gz", "file:///var/tmp/x/app.tgz", "file:///dev/shm/app.tgz", "file:///tmp/../tmp/a.tgz"} {
		r := e.must(http.StatusOK, http.MethodPost, "/api/app", body("a"+strconv.Itoa(len(url)), url))
		w := r.Header.Get("Warning")
		if !strings.Contains(w, url) || !strings.Contains(w, "tenant_isolation") || !strings.Contains(w, "private to each task") {
			t.Errorf("POST %s: Warning = %q, want one naming the URL and tenant_isolation", url, w)
		}
	}
	r := e.must(http.StatusOK, http.MethodPost, "/api/app", body("kept", "file:///opt/apps/app.tar.gz"))
	if w := r.Header.Get("Warning"); w != "" {
		t.Errorf("a file:// URL outside the private directories: Warning %q", w)
	}
	r = e.must(http.StatusOK, http.MethodPut, "/api/app", `{"appName":"kept","appURL":"file:///tmp/app.tar.gz"}`)
	if w := r.Header.Get("Warning"); !strings.Contains(w, "tenant_isolation") {
		t.Errorf("an update to a URL under /tmp: Warning %q, want one", w)
	}
	for _, url := range []string{"file:///tmpx/app.tgz", "http://127.0.0.1/tmp/app.tgz"} {
		if w := e.must(http.StatusOK, http.MethodPost, "/api/app", body("b"+strconv.Itoa(len(url)), url)).Header.Get("Warning"); w != "" {
			t.Errorf("%s: Warning %q, want none", url, w)
		}
	}

	off := newEnv(t)
	if w := off.must(http.StatusOK, http.MethodPost, "/api/app", body("a", "file:///tmp/app.tar.gz")).Header.Get("Warning"); w != "" {
		t.Errorf("without tenant isolation: Warning %q, want none", w)
	}
}
