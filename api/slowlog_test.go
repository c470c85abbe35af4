package api_test

import (
	"bytes"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/api"
)

// withLog sends the server's log to buf and logs requests at least slow long.
func withLog(buf *bytes.Buffer, slow time.Duration) envOpt {
	return func(o *api.Options, _ *api.Credentials) {
		o.Log, o.Limits.SlowRequest = slog.New(slog.NewTextHandler(buf, nil)), slow
	}
}

func TestSlowRequestsAreLogged(t *testing.T) {
	var buf bytes.Buffer
	e := newEnv(t, withLog(&buf, time.Nanosecond)) // every request is "slow"
	e.must(http.StatusOK, "GET", "/api/app/list", "")
	e.request("GET", "/api/no/such/route", "")
	out := buf.String()
	for _, want := range []string{`msg="slow API request" method=GET route=/api/app/list status=200`,
		`route=/api/no/such/route status=404`} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}

	buf.Reset() // profiles take as long as they were asked to: never "slow"
	e = newEnv(t, withLog(&buf, time.Nanosecond), withPprof())
	e.must(http.StatusOK, "GET", "/debug/pprof/cmdline", "")
	if strings.Contains(buf.String(), "slow API request") {
		t.Errorf("a profile was logged as slow:\n%s", buf.String())
	}

	buf.Reset()
	e = newEnv(t, withLog(&buf, -1)) // off
	e.must(http.StatusOK, "GET", "/api/app/list", "")
	if strings.Contains(buf.String(), "slow API request") {
		t.Errorf("logged with the log off:\n%s", buf.String())
	}
}
