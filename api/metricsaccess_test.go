package api_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ejcloud/elasticjob/api"
)

// teamMetrics is a registry with a series of each team's job and one of the operator's.
func teamMetrics() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	launched := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "elasticjob_tasks_launched_total"}, []string{"job", "namespace"})
	launched.WithLabelValues("nightly-"+secret, "pay").Inc()
	launched.WithLabelValues("indexer", "search").Inc()
	leader := prometheus.NewGauge(prometheus.GaugeOpts{Name: "elasticjob_leader"})
	leader.Set(1)
	reg.MustRegister(launched, leader)
	return reg
}

// With metrics_access login, /metrics asks for the API's credentials: the admin reads every
// series; a team's user or API token only its namespaces' (no other team's job names, none
// of the operator's unlabelled series); no credentials, 401. Open (the default): everything
// to anyone, as before.
func TestMetricsLoginShowsEachCallerItsNamespaces(t *testing.T) {
	tn := twoTeamsAPI(t, func(o *api.Options) { o.Metrics.Gatherer, o.Metrics.Login = teamMetrics(), true })
	pay, search, op := `namespace="pay"`, `namespace="search"`, "elasticjob_leader 1"
	cases := []struct {
		who, user, pass string
		code            int
		see, notSee     []string
	}{
		{"nobody", "", "", http.StatusUnauthorized, nil, []string{pay, search, op, secret}},
		{"a wrong password", "alice", "nope", http.StatusUnauthorized, nil, []string{pay, search, op, secret}},
		{"the admin", "root", "s3cret", http.StatusOK, []string{pay, search, op, secret}, nil},
		{"alice (edits pay)", "alice", "secret", http.StatusOK, []string{pay, secret}, []string{search, op}},
		{"carol (views pay)", "carol", "pw3", http.StatusOK, []string{pay}, []string{search, op}},
		{"bob (edits search)", "bob", "hunter2", http.StatusOK, []string{search}, []string{pay, op, secret}},
		{"pay's API token", "Bearer " + tn.payToken, "", http.StatusOK, []string{pay}, []string{search, op}},
	}
	for _, c := range cases {
		w := tn.call(http.MethodGet, "/metrics", "", c.user, c.pass)
		if w.Code != c.code {
			t.Fatalf("%s: %d %s, want %d", c.who, w.Code, w.Body, c.code)
		}
		for _, s := range c.see {
			if !strings.Contains(w.Body.String(), s) {
				t.Errorf("%s: no %s in\n%s", c.who, s, w.Body)
			}
		}
		for _, s := range c.notSee {
			if strings.Contains(w.Body.String(), s) {
				t.Errorf("%s: %s in\n%s", c.who, s, w.Body)
			}
		}
	}
	open := twoTeamsAPI(t, func(o *api.Options) { o.Metrics.Gatherer, o.Metrics.Open = teamMetrics(), true })
	if w := open.call(http.MethodGet, "/metrics", "", "", ""); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), pay) ||
		!strings.Contains(w.Body.String(), search) || !strings.Contains(w.Body.String(), op) {
		t.Fatalf("open (metrics_access=open): %d %s, want every series without a login", w.Code, w.Body)
	}
}

// Who reads /metrics by default (issue 50): with teams configured (a users file; OIDC
// alike) it asks for a login, as with metrics_access login; a single-team scheduler (an
// admin, a guest, no users file) serves it to anyone, as before; the metrics token reads
// every series, and nothing else of the API.
func TestMetricsAskForALoginWhenTeamsAreConfigured(t *testing.T) {
	const token = "0123456789abcdef-metrics"
	pay, search, op := `namespace="pay"`, `namespace="search"`, "elasticjob_leader 1"
	tn := twoTeamsAPI(t, func(o *api.Options) { o.Metrics.Gatherer = teamMetrics() })
	withToken := twoTeamsAPI(t, func(o *api.Options) { o.Metrics.Gatherer, o.Metrics.Token = teamMetrics(), token })
	for _, c := range []struct {
		who        string
		tn         *tenancy
		user, pass string
		code       int
		see        []string
	}{
		{"nobody, users file", tn, "", "", http.StatusUnauthorized, nil},
		{"the guest, users file", tn, "guest", "peek", http.StatusOK, nil},
		{"bob, users file", tn, "bob", "hunter2", http.StatusOK, []string{search}},
		{"the admin, users file", tn, "root", "s3cret", http.StatusOK, []string{pay, search, op}},
		{"the metrics token", withToken, "Bearer " + token, "", http.StatusOK, []string{pay, search, op}},
		{"a wrong metrics token", withToken, "Bearer " + token + "x", "", http.StatusUnauthorized, nil},
		{"the metrics token as Basic's password", withToken, "metrics", token, http.StatusOK, []string{pay, search, op}},
		{"the admin, a metrics token configured", withToken, "root", "s3cret", http.StatusOK, []string{pay, search, op}},
		{"bob, a metrics token configured", withToken, "bob", "hunter2", http.StatusOK, []string{search}},
		{"the metrics token, no token configured", tn, "Bearer " + token, "", http.StatusUnauthorized, nil},
	} {
		w := c.tn.call(http.MethodGet, "/metrics", "", c.user, c.pass)
		if w.Code != c.code {
			t.Errorf("%s: %d %s, want %d", c.who, w.Code, w.Body, c.code)
			continue
		}
		for _, s := range []string{pay, search, op} {
			if strings.Contains(w.Body.String(), s) != slices.Contains(c.see, s) {
				t.Errorf("%s: %s in the answer is %v, want %v:\n%s", c.who, s, !slices.Contains(c.see, s), slices.Contains(c.see, s), w.Body)
			}
		}
	}
	if w := withToken.call(http.MethodGet, "/api/job/jobs?namespace=pay", "", "Bearer "+token, ""); w.Code != http.StatusUnauthorized {
		t.Errorf("the metrics token reads the API: %d %s", w.Code, w.Body)
	}
	// A single-team scheduler: an admin and a guest, no users file, no OIDC.
	single := newEnv(t, withCreds(api.Credentials{AdminUser: "root", AdminPassword: "s3cret", GuestUser: "guest", GuestPassword: "peek"}),
		func(o *api.Options, _ *api.Credentials) { o.Metrics.Gatherer = teamMetrics() })
	if r := single.request(http.MethodGet, "/metrics", ""); r.Code != http.StatusOK || !strings.Contains(r.String(), op) {
		t.Errorf("a single-team scheduler: %d %s, want every series without a login", r.Code, r.String())
	}
	login := newEnv(t, withCreds(api.Credentials{AdminUser: "root", AdminPassword: "s3cret"}),
		func(o *api.Options, _ *api.Credentials) { o.Metrics.Gatherer, o.Metrics.Login = teamMetrics(), true })
	if r := login.request(http.MethodGet, "/metrics", ""); r.Code != http.StatusUnauthorized {
		t.Errorf("a single-team scheduler with metrics_access login: %d, want 401", r.Code)
	}
}
