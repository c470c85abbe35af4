package api_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/oauth2"

	"github.com/ejcloud/elasticjob/api"
	"github.com/ejcloud/elasticjob/identity"
	"github.com/ejcloud/elasticjob/internal/oidctest"
)

// oidcUsers maps the provider's group team-pay onto edit in pay; the
// group interns has no role anywhere.
const oidcUsers = tenancyUsers + `groups:
  - name: team-pay
    namespaces: {pay: edit}
  - name: readers
    namespaces: {search: view}
`

type oidcRig struct {
	t         *testing.T
	issuer    string // the provider
	scheduler string // the API, on its own 127.0.0.1 port
	callback  string
}

func listen(t *testing.T) (net.Listener, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln, "http://" + ln.Addr().String()
}

func serve(t *testing.T, ln net.Listener, h http.Handler) {
	srv := &http.Server{Handler: h}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
}

// newOIDCRig runs the zitadel example OpenID provider (github.com/zitadel/
// oidc/v3/example/server) and the API, each on a free 127.0.0.1 port: the
// provider's user test-user@127.0.0.1 (id1) is in team-pay, test-user2
// (id2) in interns only.
func newOIDCRig(t *testing.T) *oidcRig {
	t.Helper()
	pln, issuer := listen(t)
	sln, sched := listen(t)
	r := &oidcRig{t: t, issuer: issuer, scheduler: sched, callback: sched + "/api/oidc/callback"}
	serve(t, pln, oidctest.Handler(issuer, oidctest.Client{ID: "elasticjob", Secret: "s3cret", Callback: r.callback},
		map[string][]string{"id1": {"team-pay", "other"}, "id2": {"interns"}}))

	dir := t.TempDir()
	path := filepath.Join(dir, "users.yaml")
	if err := os.WriteFile(path, []byte(oidcUsers), 0o600); err != nil {
		t.Fatal(err)
	}
	uf, err := identity.OpenUsersFile(path, nil, "root")
	if err != nil {
		t.Fatal(err)
	}
	o, err := api.NewOIDC(context.Background(), api.OIDCConfig{Issuer: issuer, ClientID: "elasticjob", ClientSecret: "s3cret",
		RedirectURL: r.callback, Scopes: []string{"openid", "profile"}, GroupsClaim: "groups", UsernameClaim: "preferred_username"})
	if err != nil {
		t.Fatal(err)
	}
	tn := twoTeamsAPI(t, func(opt *api.Options) {
		opt.Auth = api.NewAuth(api.Credentials{AdminUser: "root", AdminPassword: "rootpw", Users: uf, OIDC: o}, opt.Clock, opt.Registry.Tenancy())
	})
	serve(t, sln, tn.h)
	return r
}

// browser is a cookie-keeping client that follows no redirect by itself.
func browser(t *testing.T) *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// follow GETs u and the redirects after it until one leads to stop (or
// an answer is not a redirect): the last response.
func follow(t *testing.T, c *http.Client, u string, stop func(*url.URL) bool) *http.Response {
	t.Helper()
	for range 10 {
		resp, err := c.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusFound && resp.StatusCode != http.StatusSeeOther {
			return resp
		}
		resp.Body.Close()
		next, err := resp.Request.URL.Parse(resp.Header.Get("Location"))
		if err != nil {
			t.Fatal(err)
		}
		if stop(next) {
			return resp
		}
		u = next.String()
	}
	t.Fatal("too many redirects")
	return nil
}

// signIn goes from authURL to the provider's login form and posts the
// user's password there: the redirect the provider answers with (to the
// client's callback, with a code).
func (r *oidcRig) signIn(c *http.Client, authURL, user string) *url.URL {
	t := r.t
	t.Helper()
	resp := follow(t, c, authURL, func(u *url.URL) bool { return u.Path == "/login/username" })
	loc, _ := resp.Request.URL.Parse(resp.Header.Get("Location"))
	id := loc.Query().Get("authRequestID")
	if id == "" {
		t.Fatalf("the provider did not send the browser to its login form: %s", loc)
	}
	post, err := c.PostForm(r.issuer+"/login/username", url.Values{"username": {user}, "password": {oidctest.Password}, "id": {id}})
	if err != nil {
		t.Fatal(err)
	}
	post.Body.Close()
	if post.StatusCode != http.StatusFound {
		t.Fatalf("login form: %d", post.StatusCode)
	}
	next, _ := post.Request.URL.Parse(post.Header.Get("Location"))
	resp = follow(t, c, next.String(), func(u *url.URL) bool { return strings.HasPrefix(u.String(), r.callback) })
	cb, _ := resp.Request.URL.Parse(resp.Header.Get("Location"))
	if !strings.HasPrefix(cb.String(), r.callback) || cb.Query().Get("code") == "" {
		t.Fatalf("the provider did not send a code to the callback: %s", cb)
	}
	return cb
}

// consoleLogin is the console's login: /api/oidc/login → the provider →
// its form → our callback → the session token in the console's fragment.
func (r *oidcRig) consoleLogin(user string) (token string, callback *http.Response) {
	t := r.t
	t.Helper()
	c := browser(t)
	cb := r.signIn(c, r.scheduler+"/api/oidc/login", user)
	resp, err := c.Get(cb.String())
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusFound {
		return "", resp
	}
	resp.Body.Close()
	loc, _ := url.Parse(resp.Header.Get("Location"))
	frag, _ := url.ParseQuery(loc.Fragment)
	if loc.Path != "/" || frag.Get("oidc_token") == "" {
		t.Fatalf("the callback did not hand the console a session: %s", loc)
	}
	return frag.Get("oidc_token"), resp
}

func (r *oidcRig) call(method, path, bearer string) (int, string) {
	r.t.Helper()
	req, _ := http.NewRequest(method, r.scheduler+path, nil)
	req.Header.Set("Authorization", "Bearer "+bearer)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// The console's login through a real provider: the session acts in pay as
// the group team-pay's edit role allows, and nowhere else.
func TestOIDCConsoleLoginMapsGroupsOntoRoles(t *testing.T) {
	r := newOIDCRig(t)
	tok, _ := r.consoleLogin("test-user@127.0.0.1")
	if !strings.HasPrefix(tok, "ej1.") {
		t.Fatalf("session %q is not a login token", tok)
	}
	code, body := r.call("GET", "/api/whoami", tok)
	var who struct {
		User       string            `json:"user"`
		Role       string            `json:"role"`
		Namespaces map[string]string `json:"namespaces"`
	}
	_ = json.Unmarshal([]byte(body), &who)
	// the ID token names no preferred_username (the provider issues an access
	// token, so the profile is in its UserInfo): the login reads it there
	if code != 200 || who.User != "test-user@127.0.0.1" || who.Role != "oidc" || who.Namespaces["pay"] != "edit" || len(who.Namespaces) != 1 {
		t.Fatalf("whoami: %d %s", code, body)
	}
	if code, body := r.call("GET", "/api/job/jobs/nightly?namespace=pay", tok); code != 200 || !strings.Contains(body, secret) {
		t.Fatalf("pay's job, by team-pay: %d %s", code, body)
	}
	if code, body := r.call("POST", "/api/job/nightly/disable?namespace=pay", tok); code/100 != 2 {
		t.Fatalf("pay's job disabled by an editor of pay: %d %s", code, body)
	}
	if code, body := r.call("GET", "/api/job/jobs/nightly?namespace=search", tok); code != 403 || !strings.Contains(body, "no role in namespace 'search'") {
		t.Fatalf("search's job, by team-pay: %d %s", code, body)
	}
	if code, _ := r.call("POST", "/api/logout", tok); code != 204 {
		t.Fatalf("logout: %d", code)
	}
	if code, _ := r.call("GET", "/api/whoami", tok); code != 401 {
		t.Fatalf("a logged-out session: %d", code)
	}
}

// A provider user none of whose groups is mapped gets no session: a 403
// that says why.
func TestOIDCLoginWithoutMappedGroupIsRefused(t *testing.T) {
	r := newOIDCRig(t)
	tok, resp := r.consoleLogin("test-user2")
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if tok != "" || resp.StatusCode != 403 || !strings.Contains(string(b), `none of its groups [\"interns\"] has a role`) {
		t.Fatalf("unmapped user: %d %s", resp.StatusCode, b)
	}
}

// ejctl and CI send the provider's ID token as a bearer: verified against
// the provider's keys and mapped by its groups; a forged or another
// client's token is refused.
func TestOIDCBearerIDToken(t *testing.T) {
	r := newOIDCRig(t)
	cfg := oauth2.Config{ClientID: "elasticjob", ClientSecret: "s3cret", RedirectURL: r.callback,
		Endpoint: oauth2.Endpoint{AuthURL: r.issuer + "/auth", TokenURL: r.issuer + "/oauth/token"}, Scopes: []string{"openid"}}
	idToken := func(user string) string {
		v := oauth2.GenerateVerifier()
		cb := r.signIn(browser(t), cfg.AuthCodeURL("st", oauth2.S256ChallengeOption(v)), user)
		tok, err := cfg.Exchange(context.Background(), cb.Query().Get("code"), oauth2.VerifierOption(v))
		if err != nil {
			t.Fatal(err)
		}
		s, _ := tok.Extra("id_token").(string)
		return s
	}
	pay := idToken("test-user@127.0.0.1")
	if code, body := r.call("GET", "/api/job/jobs/nightly?namespace=pay", pay); code != 200 {
		t.Fatalf("pay's job with team-pay's ID token: %d %s", code, body)
	}
	if code, body := r.call("POST", "/api/job/nightly/disable?namespace=search", pay); code != 403 {
		t.Fatalf("search's job with team-pay's ID token: %d %s", code, body)
	}
	intern := idToken("test-user2")
	if code, body := r.call("GET", "/api/job/jobs/nightly?namespace=pay", intern); code != 403 || !strings.Contains(body, "none of its groups") {
		t.Fatalf("an unmapped user's ID token: %d %s", code, body)
	}
	forged := pay[:strings.LastIndexByte(pay, '.')] + ".AAAA"
	if code, body := r.call("GET", "/api/job/jobs/nightly?namespace=pay", forged); code != 401 || !strings.Contains(body, "not valid") {
		t.Fatalf("a forged ID token: %d %s", code, body)
	}
}

// A provider that does not answer is an error at start, naming it.
func TestOIDCProviderDownIsAStartError(t *testing.T) {
	ln, issuer := listen(t)
	ln.Close()
	_, err := api.NewOIDC(context.Background(), api.OIDCConfig{Issuer: issuer, ClientID: "x"})
	if err == nil || !strings.Contains(err.Error(), "oidc_issuer "+issuer+": discovery") {
		t.Fatalf("err = %v", err)
	}
}
