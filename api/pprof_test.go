package api_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	"github.com/ejcloud/elasticjob/api"
)

func withPprof() envOpt { return func(o *api.Options, _ *api.Credentials) { o.Operate.Pprof = true } }

// Off by default: no profile route exists.
func TestPprofOffByDefault(t *testing.T) {
	e := newEnv(t, withCreds(testCreds))
	for _, p := range []string{"/debug/pprof/", "/debug/pprof/heap", "/debug/pprof/cmdline"} {
		req := httptest.NewRequest(http.MethodGet, p, nil)
		req.SetBasicAuth(testCreds.AdminUser, testCreds.AdminPassword)
		w := httptest.NewRecorder()
		e.h.ServeHTTP(w, req) // outside the document when off: not contract-checked
		if w.Code != http.StatusNotFound {
			t.Errorf("GET %s with profiling off: %d, want 404", p, w.Code)
		}
	}
}

// On: admins (Basic or a token) get every profile; guests 403, callers
// without credentials 401; an unknown profile is a JSON 404.
func TestPprofForAdminsOnly(t *testing.T) {
	e := newEnv(t, withCreds(testCreds), withPprof())
	e.wantError(e.request(http.MethodGet, "/debug/pprof/", ""), http.StatusUnauthorized, "log in")
	e.wantError(e.request(http.MethodGet, "/debug/pprof/heap", ""), http.StatusUnauthorized)
	e.user, e.pass = "root", "wrong"
	e.wantError(e.request(http.MethodGet, "/debug/pprof/heap", ""), http.StatusUnauthorized, "wrong user name or password")
	e.user, e.pass = testCreds.GuestUser, testCreds.GuestPassword
	e.wantError(e.request(http.MethodGet, "/debug/pprof/", ""), http.StatusForbidden, "admins only")
	e.wantError(e.request(http.MethodGet, "/debug/pprof/goroutine", ""), http.StatusForbidden)
	e.wantError(e.request(http.MethodPost, "/debug/pprof/symbol", "0x1"), http.StatusForbidden)

	e.user, e.pass = testCreds.AdminUser, testCreds.AdminPassword
	idx := e.must(http.StatusOK, http.MethodGet, "/debug/pprof/", "")
	for _, want := range []string{"allocs", "block", "goroutine", "heap", "mutex", "profile", "trace", "cmdline"} {
		if !strings.Contains(idx.String(), want) {
			t.Errorf("the index does not list %s", want)
		}
	}
	for name, want := range map[string]string{
		"heap": "heap profile:", "allocs": "heap profile:", "goroutine": "goroutine profile:",
		"block": "--- contention:", "mutex": "--- mutex:", "threadcreate": "threadcreate profile:",
	} {
		r := e.must(http.StatusOK, http.MethodGet, "/debug/pprof/"+name+"?debug=1", "")
		if !strings.Contains(r.String(), want) {
			t.Errorf("%s?debug=1 lacks %q: %.200s", name, want, r)
		}
	}
	if r := e.must(http.StatusOK, http.MethodGet, "/debug/pprof/heap", ""); !bytes.HasPrefix(r.Body, []byte{0x1f, 0x8b}) {
		t.Errorf("heap profile is not gzipped protobuf: % x", r.Body[:min(8, len(r.Body))])
	}
	if r := e.must(http.StatusOK, http.MethodGet, "/debug/pprof/cmdline", ""); !strings.Contains(r.String(), ".test") {
		t.Errorf("cmdline = %q, want the test binary", r)
	}
	if r := e.request(http.MethodPost, "/debug/pprof/symbol", "0x1"); r.Code != http.StatusOK || !strings.Contains(r.String(), "num_symbols") {
		t.Errorf("POST symbol: %d %s", r.Code, r)
	}
	e.wantError(e.request(http.MethodGet, "/debug/pprof/nope", ""), http.StatusNotFound, `no profile "nope"`)

	// A bearer token from /api/login is as good as Basic.
	tok := decode[map[string]any](t, e.must(http.StatusOK, http.MethodPost, "/api/login", `{"username":"root","password":"s3cret"}`))["token"].(string)
	e.user = ""
	if r := e.request(http.MethodGet, "/debug/pprof/goroutine?debug=1", "", "Authorization", "Bearer "+tok); r.Code != http.StatusOK {
		t.Errorf("goroutine with a bearer token: %d %s", r.Code, r)
	}
}

// A CPU profile is taken for ?seconds and returned as gzipped protobuf.
func TestPprofCPUProfile(t *testing.T) {
	e := newEnv(t, withCreds(testCreds), withPprof())
	e.user, e.pass = testCreds.AdminUser, testCreds.AdminPassword
	r := e.must(http.StatusOK, http.MethodGet, "/debug/pprof/profile?seconds=1", "")
	if !bytes.HasPrefix(r.Body, []byte{0x1f, 0x8b}) {
		t.Errorf("CPU profile is not gzipped protobuf: % x", r.Body[:min(8, len(r.Body))])
	}
}

// With open access (loopback only) every caller is admin; enabling
// profiling turns lock contention sampling on.
func TestPprofOpenAccessAndRates(t *testing.T) {
	e := newEnv(t, withPprof())
	e.must(http.StatusOK, http.MethodGet, "/debug/pprof/goroutine?debug=1", "")
	if f := runtime.SetMutexProfileFraction(-1); f <= 0 {
		t.Errorf("mutex profile fraction = %d with profiling on, want > 0", f)
	}
}
