package api_test

import (
	"net/http"
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
	tn := twoTeamsAPI(t, func(o *api.Options) { o.Metrics, o.MetricsLogin = teamMetrics(), true })
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
	open := twoTeamsAPI(t, func(o *api.Options) { o.Metrics = teamMetrics() })
	if w := open.call(http.MethodGet, "/metrics", "", "", ""); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), pay) ||
		!strings.Contains(w.Body.String(), search) || !strings.Contains(w.Body.String(), op) {
		t.Fatalf("open (the default): %d %s, want every series without a login", w.Code, w.Body)
	}
}
