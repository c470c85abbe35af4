package api_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/api"
	"github.com/gin-gonic/gin"
)

var testCreds = api.Credentials{AdminUser: "root", AdminPassword: "s3cret", GuestUser: "guest", GuestPassword: "peek", TokenTTL: time.Hour}

// fillPath turns a route pattern into a concrete path.
func fillPath(p string) string {
	r := strings.NewReplacer(":appName", "app", ":jobName", "job", ":taskId", "job@-@0@-@READY@-@a@-@u")
	return r.Replace(p)
}

// seed publishes app and registers job as admin.
func seed(t *testing.T, e *env) {
	t.Helper()
	u, p := e.user, e.pass
	e.user, e.pass = testCreds.AdminUser, testCreds.AdminPassword
	e.must(http.StatusOK, http.MethodPost, "/api/app", appBody("app"))
	e.must(http.StatusOK, http.MethodPost, "/api/job/register", jobBody("job", "app"))
	e.user, e.pass = u, p
}

func TestOpenMode(t *testing.T) {
	e := newEnv(t)
	e.must(http.StatusOK, http.MethodPost, "/api/app", appBody("app"))
	e.must(http.StatusOK, http.MethodPost, "/api/job/register", jobBody("job", "app"))
	e.must(http.StatusNoContent, http.MethodPost, "/api/job/trigger", "job")
	e.must(http.StatusNoContent, http.MethodDelete, "/api/job/job/deregister", "")
	if r := e.must(http.StatusOK, http.MethodGet, "/api/whoami", ""); !strings.Contains(r.String(), `"role":"admin"`) || !strings.Contains(r.String(), `"open":true`) {
		t.Errorf("whoami = %s, want admin and open", r)
	}
	// With no credentials configured, stale Basic credentials or tokens
	// (a browser that once used an auth-enabled scheduler) do not lock out.
	e.user, e.pass = "anyone", "anything"
	e.must(http.StatusNoContent, http.MethodPost, "/api/app/app/disable", "")
	e.user = ""
	if r := e.request(http.MethodPost, "/api/app/app/enable", "", "Authorization", "Bearer stale"); r.Code != http.StatusNoContent {
		t.Errorf("stale bearer in open mode: %d %s", r.Code, r)
	}
	r := e.must(http.StatusOK, http.MethodPost, "/api/login", `{"username":"x","password":"y"}`)
	if lr := decode[map[string]any](t, r); lr["role"] != "admin" || lr["token"] == "" {
		t.Errorf("open-mode login = %s", r)
	}
}

func TestAnonymousIsUnauthorized(t *testing.T) {
	e := newEnv(t, withCreds(testCreds))
	seed(t, e)
	for _, rt := range e.h.(*gin.Engine).Routes() {
		if rt.Path == "/api/login" || rt.Path == "/api/logout" || !strings.HasPrefix(rt.Path, "/api/") {
			continue
		}
		if strings.HasPrefix(rt.Path, "/api/oidc") { // OIDC login's own steps (oidc_test.go): no data
			continue
		}
		if rt.Path == "/api/openapi.json" { // the API's description holds no data: open to all
			e.must(http.StatusOK, rt.Method, rt.Path, "")
			continue
		}
		r := e.request(rt.Method, fillPath(rt.Path), "job")
		e.wantError(r, http.StatusUnauthorized, "log in")
		if got := r.Header.Get("WWW-Authenticate"); !strings.HasPrefix(got, "Basic realm=") {
			t.Errorf("%s %s: WWW-Authenticate = %q", rt.Method, rt.Path, got)
		}
	}
	// Health stays open for probes.
	e.must(http.StatusOK, http.MethodGet, "/healthz", "")
}

func TestBasicAuthRoles(t *testing.T) {
	e := newEnv(t, withCreds(testCreds))
	e.user, e.pass = "root", "s3cret"
	e.must(http.StatusOK, http.MethodPost, "/api/app", appBody("app"))
	e.must(http.StatusOK, http.MethodPost, "/api/job/register", jobBody("job", "app"))
	e.must(http.StatusNoContent, http.MethodPost, "/api/job/trigger", "job")

	e.user, e.pass = "root", "wrong"
	r := e.request(http.MethodGet, "/api/app/list", "")
	e.wantError(r, http.StatusUnauthorized, "wrong user name or password")
	if r.Header.Get("WWW-Authenticate") == "" {
		t.Error("401 without WWW-Authenticate")
	}
	e.user, e.pass = "guest", "s3cret" // the admin's password does not make a guest
	e.wantError(e.request(http.MethodGet, "/api/app/list", ""), http.StatusUnauthorized, "wrong user name or password")

	e.user, e.pass = "guest", "peek"
	for _, path := range []string{"/api/app/list", "/api/app", "/api/app/app", "/api/app/app/disable", "/api/job/jobs", "/api/job/jobs/job",
		"/api/job/job/disable", "/api/job/tasks/running", "/api/job/tasks/ready", "/api/job/tasks/failover"} {
		e.must(http.StatusOK, http.MethodGet, path, "")
	}
	if r := e.must(http.StatusOK, http.MethodGet, "/api/whoami", ""); !strings.Contains(r.String(), `"role":"guest"`) || !strings.Contains(r.String(), `"user":"guest"`) {
		t.Errorf("whoami = %s", r)
	}
}

// TestGuestCannotWrite walks every registered write route.
func TestGuestCannotWrite(t *testing.T) {
	e := newEnv(t, withCreds(testCreds))
	seed(t, e)
	e.user, e.pass = "guest", "peek"
	writes := 0
	for _, rt := range e.h.(*gin.Engine).Routes() {
		if rt.Method == http.MethodGet || rt.Method == http.MethodHead || rt.Path == "/api/login" || rt.Path == "/api/logout" {
			continue
		}
		writes++
		t.Run(rt.Method+" "+rt.Path, func(t *testing.T) {
			body := "job"
			if rt.Path == "/api/app" || strings.HasPrefix(rt.Path, "/api/job/register") || rt.Path == "/api/job/update" {
				body = jobBody("job2", "app")
			}
			want := "guest role is read-only"
			switch {
			case strings.HasPrefix(rt.Path, "/api/namespaces/:name/tokens") || strings.HasPrefix(rt.Path, "/api/namespaces/:name/secrets") ||
				strings.HasPrefix(rt.Path, "/api/namespaces/:name/calendars"):
				want = "no role in namespace" // the guest reads the default namespace only
			case strings.HasPrefix(rt.Path, "/api/namespaces") || strings.HasPrefix(rt.Path, "/api/operate/reconcile") || rt.Path == "/api/operate/secrets/reseal" ||
				rt.Path == "/api/registry/damaged" || strings.HasPrefix(rt.Path, "/api/operate/store/") || strings.HasPrefix(rt.Path, "/api/operate/clusters/"):
				want = "only an admin"
			}
			e.wantError(e.request(rt.Method, fillPath(rt.Path), body), http.StatusForbidden, want)
		})
	}
	if writes < 14 {
		t.Errorf("only %d write routes found; the route walk is broken", writes)
	}
	// Nothing changed.
	e.user, e.pass = "root", "s3cret"
	e.must(http.StatusOK, http.MethodGet, "/api/job/jobs/job", "")
	e.must(http.StatusOK, http.MethodGet, "/api/app/app", "")
	if r := e.must(http.StatusOK, http.MethodGet, "/api/job/tasks/ready", ""); r.String() != "[]" {
		t.Errorf("ready = %s after guest writes", r)
	}
	if r := e.must(http.StatusOK, http.MethodGet, "/api/job/job/disable", ""); r.String() != "false" {
		t.Errorf("job disabled = %s after guest writes", r)
	}
	if len(e.ops.reconciles) != 0 || e.ops.Wakes() != 0 {
		t.Errorf("guest reached the scheduler: reconciles %v, wakes %d", e.ops.reconciles, e.ops.Wakes())
	}
}

func login(t *testing.T, e *env, user, pass string) string {
	t.Helper()
	r := e.must(http.StatusOK, http.MethodPost, "/api/login", `{"username":"`+user+`","password":"`+pass+`"}`)
	lr := decode[struct {
		Token     string    `json:"token"`
		Role      string    `json:"role"`
		ExpiresAt time.Time `json:"expiresAt"`
	}](t, r)
	if len(lr.Token) < 32 || !lr.ExpiresAt.Equal(e.clock.Now().Add(time.Hour)) {
		t.Fatalf("login = %s: want a long token expiring at %v", r, e.clock.Now().Add(time.Hour))
	}
	return lr.Token
}

func TestTokens(t *testing.T) {
	e := newEnv(t, withCreds(testCreds))
	seed(t, e)
	bearer := func(method, path, body, tok string) response {
		t.Helper()
		return e.request(method, path, body, "Authorization", "Bearer "+tok)
	}

	admin := login(t, e, "root", "s3cret")
	if r := bearer(http.MethodPost, "/api/app", appBody("app2"), admin); r.Code != http.StatusOK {
		t.Fatalf("admin token write: %d %s", r.Code, r)
	}
	guest := login(t, e, "guest", "peek")
	if admin == guest {
		t.Fatal("two logins returned the same token")
	}
	if r := bearer(http.MethodGet, "/api/app/app2", "", guest); r.Code != http.StatusOK {
		t.Errorf("guest token read: %d %s", r.Code, r)
	}
	e.wantError(bearer(http.MethodDelete, "/api/app/app2", "", guest), http.StatusForbidden, "read-only")

	e.wantError(e.request(http.MethodPost, "/api/login", `{"username":"root","password":"nope"}`), http.StatusUnauthorized, "wrong user name or password")
	e.wantError(e.request(http.MethodPost, "/api/login", `{"username":"nobody","password":""}`), http.StatusUnauthorized, "wrong user name or password")
	e.wantError(e.request(http.MethodPost, "/api/login", `{"user":"root"}`), http.StatusBadRequest, `unknown field "user"`)
	e.wantError(bearer(http.MethodGet, "/api/app/list", "", "forged"), http.StatusUnauthorized, "token is unknown or expired")

	// Expiry: valid up to the TTL, not a nanosecond after.
	e.clock.Advance(time.Hour)
	if r := bearer(http.MethodGet, "/api/app/list", "", admin); r.Code != http.StatusOK {
		t.Errorf("token at its expiry instant: %d", r.Code)
	}
	e.clock.Advance(time.Nanosecond)
	r := bearer(http.MethodGet, "/api/app/list", "", admin)
	e.wantError(r, http.StatusUnauthorized, "token is unknown or expired")
	if got := r.Header.Get("WWW-Authenticate"); !strings.HasPrefix(got, "Bearer ") {
		t.Errorf("401 to a bearer caller challenges with %q, want Bearer (no browser password box)", got)
	}

	// Logout invalidates only the token sent; any role may log out.
	a2, g2 := login(t, e, "root", "s3cret"), login(t, e, "guest", "peek")
	if r := bearer(http.MethodPost, "/api/logout", "", g2); r.Code != http.StatusNoContent {
		t.Errorf("guest logout: %d %s", r.Code, r)
	}
	e.wantError(bearer(http.MethodGet, "/api/app/list", "", g2), http.StatusUnauthorized, "token")
	if r := bearer(http.MethodGet, "/api/app/list", "", a2); r.Code != http.StatusOK {
		t.Errorf("admin token after guest logout: %d", r.Code)
	}
	if r := bearer(http.MethodPost, "/api/logout", "", a2); r.Code != http.StatusNoContent {
		t.Errorf("admin logout: %d %s", r.Code, r)
	}
	e.wantError(bearer(http.MethodPost, "/api/app", appBody("app3"), a2), http.StatusUnauthorized, "token")
}

func TestFailedLoginsAreThrottled(t *testing.T) {
	e := newEnv(t, withCreds(api.Credentials{AdminUser: "root", AdminPassword: "s3cret"}))
	bad := `{"username":"root","password":"wrong"}`
	for i := range 10 {
		if r := e.request(http.MethodPost, "/api/login", bad); r.Code != http.StatusUnauthorized {
			t.Fatalf("attempt %d = %d %s", i, r.Code, r)
		}
	}
	e.wantError(e.request(http.MethodPost, "/api/login", `{"username":"root","password":"s3cret"}`),
		http.StatusTooManyRequests, "too many failed logins")
	e.clock.Advance(time.Minute + time.Second)
	e.must(http.StatusOK, http.MethodPost, "/api/login", `{"username":"root","password":"s3cret"}`)
}
