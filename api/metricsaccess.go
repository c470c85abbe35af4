package api

import (
	"net/http"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"

	"github.com/ejcloud/elasticjob/identity"
)

// serveMetrics serves the Prometheus exposition of g. Without login (a single-team
// scheduler, or metrics_access=open) anyone reads every series. With login (the default
// whenever teams are configured: Options.Metrics.Login), /metrics asks for the API's
// credentials (Basic, a login token, a namespace's API token, OIDC) or the metrics token:
// the admin and the metrics token read every series; any other caller only the series
// labelled with a namespace it may read, so a team's scraper sees its own jobs and no other
// team's names. Series without a namespace label (the process, Go, the engine) are the
// operator's: the admin's and the metrics token's alone.
func (s *consoleHandlers) serveMetrics(g prometheus.Gatherer, login bool, token string) gin.HandlerFunc {
	all := promhttp.HandlerFor(g, promhttp.HandlerOpts{})
	return func(c *gin.Context) {
		if !login || s.auth.Open() {
			all.ServeHTTP(c.Writer, c.Request)
			return
		}
		if token != "" && metricsToken(c.Request, token) {
			c.Set(ctxUser, "metrics token")
			all.ServeHTTP(c.Writer, c.Request)
			return
		}
		p, ok := s.authenticate(c)
		if !ok {
			return
		}
		if p.Admin {
			all.ServeHTTP(c.Writer, c.Request)
			return
		}
		promhttp.HandlerFor(namespaceGatherer{g: g, p: p}, promhttp.HandlerOpts{}).ServeHTTP(c.Writer, c.Request)
	}
}

// metricsToken reports whether r carries the metrics token: as a bearer, or as the password
// of HTTP Basic (Prometheus's basic_auth password_file; any user name).
func metricsToken(r *http.Request, token string) bool {
	if tok, ok := bearer(r); ok {
		return eq(tok, token)
	}
	_, pw, ok := r.BasicAuth()
	return ok && eq(pw, token)
}

// namespaceGatherer keeps the series whose namespace label names a namespace p may read.
type namespaceGatherer struct {
	g prometheus.Gatherer
	p identity.Principal
}

func (n namespaceGatherer) Gather() ([]*dto.MetricFamily, error) {
	mfs, err := n.g.Gather()
	var out []*dto.MetricFamily
	for _, mf := range mfs {
		var kept []*dto.Metric
		for _, m := range mf.GetMetric() {
			if ns, ok := namespaceLabel(m); ok && n.p.Can(ns, false) {
				kept = append(kept, m)
			}
		}
		if len(kept) > 0 {
			mf.Metric = kept
			out = append(out, mf)
		}
	}
	return out, err
}

func namespaceLabel(m *dto.Metric) (string, bool) {
	for _, l := range m.GetLabel() {
		if l.GetName() == "namespace" {
			return l.GetValue(), true
		}
	}
	return "", false
}
