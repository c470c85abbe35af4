package api

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/history/view"
	"github.com/gin-gonic/gin"
)

// rowsLog keeps recorded rows in memory: it checks what the middleware
// hands the log (the real log is tested in audit_test.go).
type rowsLog struct {
	mu   sync.Mutex
	rows []view.Audit
}

func (l *rowsLog) Record(_ context.Context, a view.Audit) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.rows = append(l.rows, a)
	return nil
}

func (l *rowsLog) Audits(context.Context, view.Query) (view.Page[view.Audit], error) {
	return view.Page[view.Audit]{}, nil
}

// ginEngine is the audit and auth middlewares in front of test handlers, with
// gin's recovery outside them, as in New.
func ginEngine(l *rowsLog, handlers map[string]gin.HandlerFunc) *gin.Engine {
	s := &Server{core: &core{auth: NewAuth(Credentials{}, clock.Real{}, nil), clock: clock.Real{}, log: slog.New(slog.DiscardHandler)},
		audit: l, clientAddr: RemoteAddr}
	r := gin.New()
	r.Use(gin.Recovery())
	g := r.Group("/api", s.auditMiddleware, s.authMiddleware)
	for path, h := range handlers {
		g.POST(path, h)
	}
	return r
}

func post(h http.Handler, path, body string) int {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, path, strings.NewReader(body)))
	return w.Code
}

// A standby forwarding a write calls SkipAudit: only the leader records it.
func TestSkipAudit(t *testing.T) {
	l := &rowsLog{}
	h := ginEngine(l, map[string]gin.HandlerFunc{
		"/forwarded": func(c *gin.Context) { SkipAudit(c); c.Status(http.StatusNoContent) },
		"/local":     func(c *gin.Context) { c.Status(http.StatusNoContent) },
	})
	post(h, "/api/forwarded", "")
	post(h, "/api/local", "")
	if len(l.rows) != 1 || l.rows[0].Route != "/api/local" {
		t.Fatalf("rows %+v, want only /api/local", l.rows)
	}
}

// A handler that panics is recorded with the 500 the client gets.
func TestAuditRecordsPanics(t *testing.T) {
	l := &rowsLog{}
	h := ginEngine(l, map[string]gin.HandlerFunc{"/job/:jobName/boom": func(*gin.Context) { panic("boom") }})
	if code := post(h, "/api/job/j1/boom", ""); code != http.StatusInternalServerError {
		t.Fatalf("code %d", code)
	}
	if len(l.rows) != 1 || l.rows[0].Status != http.StatusInternalServerError || l.rows[0].Target != "j1" || l.rows[0].User != "anonymous" {
		t.Fatalf("rows %+v", l.rows)
	}
}

func TestChangeSummary(t *testing.T) {
	for _, c := range []struct {
		body, errMsg, target string
		truncated            bool
		status               int
		want                 string
	}{
		{`{"appName":"a","appURL":"https://u:p@h.example:8443/x/app.tgz?sig=abc#frag","bootstrapScript":"bin/s --pw x"}`, "", "a", false, 200,
			"fields: appName=a, appURL=https://h.example:8443/x/app.tgz, bootstrapScript"},
		{`{"appURL":"not a url at all"}`, "", "", false, 200, "fields: appURL=(not a URL)"},
		{`{"props":{"a":"1","b":"2"},"tags":[1,2,3],"jobParameter":null,"failover":true}`, "", "", false, 200,
			"fields: failover=true, jobParameter=null, props(2 keys), tags(3 items)"},
		{`job_1`, "", "job_1", false, 204, ""},
		{`not a name!`, "", "", false, 400, "body of 11 bytes"},
		{`{"jobName":"j"}`, `props.http.url must be an http(s) URL for HTTP jobs, got "hunter2"`, "j", false, 400,
			`fields: jobName=j; refused: props.http.url must be an http(s) URL for HTTP jobs, got "…"`},
		{`{"jobName":"j","x":1}`, `malformed JSON: unknown field "x"`, "j", false, 400, `fields: jobName=j, x; refused: malformed JSON: unknown field "x"`},
		{``, `Job 'j' is disabled at https://bob:pw@host/x`, "j", false, 409, `refused: Job 'j' is disabled at https://***@host/x`},
		{`{"a":`, `the body exceeds 10 bytes`, "", true, 413, "body over 5 bytes; refused: the body exceeds 10 bytes"},
	} {
		if got := changeSummary([]byte(c.body), c.truncated, c.status, c.errMsg, c.target); got != c.want {
			t.Errorf("changeSummary(%s, %q)\n got %q\nwant %q", c.body, c.errMsg, got, c.want)
		}
	}
}
