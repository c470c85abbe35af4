package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/jmoiron/sqlx"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/ejcloud/elasticjob/api"
	"github.com/ejcloud/elasticjob/backfill"
	"github.com/ejcloud/elasticjob/history"
	"github.com/ejcloud/elasticjob/history/trace"
	"github.com/ejcloud/elasticjob/history/view"
	"github.com/ejcloud/elasticjob/store"
	"github.com/ejcloud/elasticjob/store/etcd"
	"github.com/ejcloud/elasticjob/workflow"
)

// auditDB is a real audit log: the trace writer and the history store on
// SQLite in a temp dir.
type auditDB struct {
	*history.AuditLog
	path string // the SQLite file
}

func newAuditLog(t testing.TB) *auditDB {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "trace.db")
	migratedDB(t, path)
	// A short busy wait, so a test holding the database's lock sees the
	// writer fail fast (the database "down").
	dsn := "file:" + path + "?_pragma=busy_timeout(50)&_pragma=journal_mode(WAL)&_txlock=immediate"
	w, err := trace.Open(context.Background(), trace.Options{DSN: dsn, SpoolDir: filepath.Join(dir, "spool")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close(context.Background()) })
	hs, err := history.New(w.Handle(), history.SQLite, history.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return &auditDB{history.NewAuditLog(w, hs), path}
}

func withAudit(a api.AuditLog) envOpt {
	return func(o *api.Options, _ *api.Credentials) { o.Audit = a }
}

func withMetrics() envOpt {
	return func(o *api.Options, _ *api.Credentials) {
		reg := prometheus.NewRegistry()
		reg.MustRegister(prometheus.NewGoCollector())
		o.Metrics.Gatherer = reg
	}
}

// rows flushes the log and reads every row through GET /api/audit as root.
func (e *env) auditRows(a *auditDB, query string) view.Page[view.Audit] {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := a.Flush(ctx); err != nil {
		e.t.Fatal(err)
	}
	u, p := e.user, e.pass
	e.user, e.pass = testCreds.AdminUser, testCreds.AdminPassword
	defer func() { e.user, e.pass = u, p }()
	return decode[view.Page[view.Audit]](e.t, e.must(http.StatusOK, http.MethodGet, "/api/audit?per_page=1000&sort=creationTime&order=asc&"+query, ""))
}

// writeCase is one write route with a body that reaches its handler, and
// the target the audit row must name.
type writeCase struct {
	method, route, path, body string
	kind, target              string
}

// writeCases covers every write route of the API (TestEveryWriteIsAudited
// fails on a route missing here, so new routes get a case).
var writeCases = []writeCase{
	{"POST", "/api/login", "/api/login", `{"username":"root","password":"s3cret"}`, "", ""},
	{"POST", "/api/logout", "/api/logout", "", "", ""},
	{"POST", "/api/app", "/api/app", appBody("app2"), "app", "app2"},
	{"PUT", "/api/app", "/api/app", `{"appName":"app2","appCacheEnable":false}`, "app", "app2"},
	{"DELETE", "/api/app/:appName", "/api/app/app2", "", "app", "app2"},
	{"PUT", "/api/app/:appName/package", "/api/app/app/package?filename=app.tar.gz", "#!package bytes", "app", "app"},
	{"POST", "/api/app/:appName/disable", "/api/app/app/disable", "", "app", "app"},
	{"POST", "/api/app/:appName/enable", "/api/app/app/enable", "", "app", "app"},
	{"POST", "/api/job/register", "/api/job/register", jobBody("job2", "app"), "job", "job2"},
	{"PUT", "/api/job/update", "/api/job/update", `{"jobName":"job2","cron":"0 0/5 * * * ?"}`, "job", "job2"},
	{"POST", "/api/job/:jobName/disable", "/api/job/job2/disable", "", "job", "job2"},
	{"POST", "/api/job/:jobName/enable", "/api/job/job2/enable", "", "job", "job2"},
	{"POST", "/api/job/:jobName/kill", "/api/job/job2/kill", "", "job", "job2"},
	{"POST", "/api/job/trigger", "/api/job/trigger", "job", "job", "job"},
	{"POST", "/api/job/backfills", "/api/job/backfills", `{"jobName":"job","from":"2024-03-01T09:00:00Z","to":"2024-03-01T10:00:00Z"}`, "job", "job"},
	{"POST", "/api/job/backfills/:id/:action", "/api/job/backfills/bf-audit/pause", "", "backfill", "bf-audit"},
	{"POST", "/api/workflow", "/api/workflow", wfBody("wf2"), "workflow", "wf2"},
	{"PUT", "/api/workflow", "/api/workflow", `{"name":"wf2","description":"d","nodes":[{"id":"a","job":"job"}]}`, "workflow", "wf2"},
	{"POST", "/api/workflow/:workflowName/disable", "/api/workflow/wf2/disable", "", "workflow", "wf2"},
	{"POST", "/api/workflow/:workflowName/enable", "/api/workflow/wf2/enable", "", "workflow", "wf2"},
	{"POST", "/api/workflow/:workflowName/trigger", "/api/workflow/wf2/trigger", `{"idempotencyKey":"k1"}`, "workflow", "wf2"},
	{"POST", "/api/workflow/:workflowName/runs/:runId/cancel", "/api/workflow/wf/runs/r1/cancel", "", "workflow", "wf"},
	{"POST", "/api/workflow/:workflowName/runs/:runId/retry", "/api/workflow/wf/runs/r2/retry", "", "workflow", "wf"},
	{"DELETE", "/api/workflow/:workflowName", "/api/workflow/wf2", "", "workflow", "wf2"},
	{"POST", "/api/jobs/register", "/api/jobs/register", `{"jobName":"job3","appName":"app","cron":"0 0 2 * * ?"}`, "job", "job3"},
	{"POST", "/api/jobs/:jobName/start", "/api/jobs/job3/start", `{"idempotencyKey":"k1"}`, "job", "job3"},
	{"POST", "/api/jobs/:jobName/pause", "/api/jobs/job3/pause", "", "job", "job3"},
	{"POST", "/api/jobs/:jobName/resume", "/api/jobs/job3/resume", "", "job", "job3"},
	{"DELETE", "/api/job/deregister", "/api/job/deregister", `"job2"`, "job", "job2"},
	{"DELETE", "/api/job/:jobName/deregister", "/api/job/job/deregister?force=true", "", "job", "job"}, // workflow wf runs it
	{"POST", "/api/operate/reconcile/explicit", "/api/operate/reconcile/explicit", "", "", ""},
	{"POST", "/api/operate/reconcile/implicit", "/api/operate/reconcile/implicit", "", "", ""},
	{"PUT", "/api/namespaces/:name", "/api/namespaces/team", `{"weight":2}`, "namespace", "team"},
	{"POST", "/api/namespaces/:name/tokens", "/api/namespaces/team/tokens", `{"name":"ci","role":"edit"}`, "token", ""},
	{"DELETE", "/api/namespaces/:name/tokens/:id", "/api/namespaces/team/tokens/{token}", "", "token", "{token}"},
	{"PUT", "/api/namespaces/:name/secrets/:secret", "/api/namespaces/team/secrets/db", `{"value":"v"}`, "secret", "db"},
	{"DELETE", "/api/namespaces/:name/secrets/:secret", "/api/namespaces/team/secrets/db", "", "secret", "db"},
	{"PUT", "/api/namespaces/:name/calendars/:calendar", "/api/namespaces/team/calendars/biz", `{"weekdays":["MON"]}`, "calendar", "biz"},
	{"DELETE", "/api/namespaces/:name/calendars/:calendar", "/api/namespaces/team/calendars/biz", "", "calendar", "biz"},
	{"POST", "/api/operate/secrets/reseal", "/api/operate/secrets/reseal", "", "", ""},
	{"POST", "/api/operate/store/members", "/api/operate/store/members", `{"name":"m3","peerURL":"http://127.0.0.1:1"}`, "member", "m3"},
	{"DELETE", "/api/operate/store/members/:member", "/api/operate/store/members/m3", "", "member", "m3"},
	{"POST", "/api/operate/store/restore", "/api/operate/store/restore", emptyBackup, "", ""},
	{"PUT", "/api/operate/clusters/:cluster/drain", "/api/operate/clusters/dc1/drain", "", "cluster", "dc1"},
	{"DELETE", "/api/operate/clusters/:cluster/drain", "/api/operate/clusters/dc1/drain", "", "cluster", "dc1"},
	{"PUT", "/api/registry/damaged", "/api/registry/damaged?path=/config/app/broken", appBody("broken"), "registry", "/config/app/broken"},
	{"DELETE", "/api/registry/damaged", "/api/registry/damaged?path=/state/ready/broken", "", "registry", "/state/ready/broken"},
	{"DELETE", "/api/namespaces/:name", "/api/namespaces/team", "", "namespace", "team"},
}

// emptyBackup is a whole backup of an empty registry.
const emptyBackup = `{"format":"elasticjob-registry-dump","version":1,"revision":1}` + "\n" + `{"end":true,"nodes":0}` + "\n"

// seedWorkflowRuns registers workflow wf (without an audit row) with a
// RUNNING run r1 to cancel and a FAILED run r2 to retry.
func seedWorkflowRuns(t *testing.T, e *env) {
	t.Helper()
	ctx := context.Background()
	cfg := workflow.Default()
	cfg.Name, cfg.Nodes = "wf", []workflow.Node{{ID: "a", Job: "job"}}
	if err := e.reg.Flows().AddWorkflow(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	running, _ := workflow.Step(workflow.NewRun(cfg, "r1", workflow.SourceAPI, nil, "", t0), true, workflow.Input{Now: t0})
	failed, _ := workflow.Step(workflow.NewRun(cfg, "r2", workflow.SourceAPI, nil, "", t0), true, workflow.Input{Now: t0})
	failed, _ = workflow.Step(failed, false, workflow.Input{Now: t0, Executions: map[string]workflow.Execution{"a": {Lost: "lost"}}})
	if err := e.reg.Change().
		CreateWorkflowRun(running).
		CreateWorkflowRun(failed).
		Commit(ctx); err != nil {
		t.Fatal(err)
	}
}

// seedBackfill stores backfill bf-audit of job "job" for its control case.
func seedBackfill(t *testing.T, e *env) {
	t.Helper()
	ins := []time.Time{t0.Add(-time.Hour)}
	b := backfill.New("bf-audit", backfill.JobSource("default", "job"), t0.Add(-time.Hour), t0, 1, ins, "test", t0)
	if err := backfill.Create(context.Background(), e.reg, b, ins); err != nil {
		t.Fatal(err)
	}
}

// Every write route leaves one row with who, what, where from and the
// status answered: as admin (carried out), as guest (403) and without
// credentials (401).
func TestEveryWriteIsAudited(t *testing.T) {
	a := newAuditLog(t)
	var st *etcd.Store // three members: one more (never started) may be added and removed
	e := newEnv(t, withCreds(testCreds), withAudit(a), withPackages(t), withReplicatedN(t, 3, &st), withClusters(api.ClusterConfig{Name: "dc1", Engine: "embedded"}),
		func(o *api.Options, _ *api.Credentials) { o.Tenancy.Secrets = testKeyring(t) })
	covered := map[string]bool{}
	for _, c := range writeCases {
		covered[c.method+" "+c.route] = true
	}
	for _, rt := range e.h.(*gin.Engine).Routes() {
		if rt.Method != http.MethodGet && rt.Method != http.MethodHead && !covered[rt.Method+" "+rt.Path] &&
			rt.Path != api.ExecutorSecretsPath { // a task's executor, outside /api: no audit row (secretfetch.go)
			t.Errorf("write route %s %s has no case in writeCases", rt.Method, rt.Path)
		}
	}
	seed(t, e)
	seedWorkflowRuns(t, e)
	seedBackfill(t, e)
	for _, p := range []string{"/config/app/broken", "/state/ready/broken"} { // a damaged entry to repair and one to remove
		if err := e.kv.Commit(context.Background(), store.Put(p, []byte(`{"appName":"broken","ap`))); err != nil {
			t.Fatal(err)
		}
	}
	type who struct{ user, pass, wantUser, wantRole string }
	for _, w := range []who{{"guest", "peek", "guest", "guest"}, {"", "", "anonymous", ""}, {"root", "s3cret", "root", "admin"}} {
		e.user, e.pass = w.user, w.pass
		before := e.auditRows(a, "").Total
		codes := make([]int, len(writeCases))
		times := make([]time.Time, len(writeCases))
		targets := make([]string, len(writeCases))
		token := "0123456789abcdef" // the id of the token the tokens case made (none: any id)
		for i, c := range writeCases {
			e.clock.Advance(time.Millisecond) // rows in request order
			times[i] = e.clock.Now()
			r := e.request(c.method, strings.ReplaceAll(c.path, "{token}", token), c.body)
			codes[i] = r.Code
			var made struct{ ID string }
			if c.route == "/api/namespaces/:name/tokens" && json.Unmarshal(r.Body, &made) == nil && made.ID != "" {
				token = made.ID
			}
			targets[i] = strings.ReplaceAll(c.target, "{token}", token)
		}
		page := e.auditRows(a, "")
		rows := page.Rows[before:]
		if len(rows) != len(writeCases) {
			t.Fatalf("as %q: %d new audit rows for %d writes", w.wantUser, len(rows), len(writeCases))
		}
		for i, c := range writeCases {
			r := rows[i]
			wantUser, wantRole := w.wantUser, w.wantRole
			switch {
			case c.route == "/api/login": // the user name tried, and the role it got
				wantUser, wantRole = "root", "admin"
			case c.route == "/api/logout": // Basic credentials are no session
				wantUser, wantRole = "anonymous", ""
			}
			if r.Method != c.method || r.Route != c.route || r.User != wantUser || r.Role != wantRole || r.Status != codes[i] ||
				r.Address != "192.0.2.1" || r.TargetKind != c.kind || r.Target != targets[i] || r.CreationTime == nil ||
				!r.CreationTime.Equal(times[i]) || r.ID == "" {
				t.Errorf("as %q, %s %s answered %d; audit row %+v", w.wantUser, c.method, c.path, codes[i], r)
			}
			if w.wantRole == "admin" && codes[i] >= 300 {
				t.Errorf("%s %s as admin answered %d: the case does not reach its handler", c.method, c.path, codes[i])
			}
			wantCode := map[string]int{"guest": http.StatusForbidden, "anonymous": http.StatusUnauthorized}[w.wantUser]
			if wantCode != 0 && c.route != "/api/login" && c.route != "/api/logout" && codes[i] != wantCode {
				t.Errorf("%s %s as %s answered %d, want %d", c.method, c.path, w.wantUser, codes[i], wantCode)
			}
		}
	}
	// Reads are not recorded.
	n := e.auditRows(a, "").Total
	e.must(http.StatusOK, http.MethodGet, "/api/job/jobs", "")
	if got := e.auditRows(a, "").Total; got != n {
		t.Errorf("a read added %d audit rows", got-n)
	}
}

// The summary says what was set, and a refusal why, without secrets.
func TestAuditSummaries(t *testing.T) {
	a := newAuditLog(t)
	e := newEnv(t, withCreds(testCreds), withAudit(a))
	e.user, e.pass = "root", "s3cret"
	for _, w := range []struct{ method, path, body string }{
		{http.MethodPost, "/api/app", `{"appName":"app","appURL":"https://repo.example/app.tgz","bootstrapScript":"bin/start.sh","cpuCount":0.5}`},
		{http.MethodPost, "/api/job/register", jobBody("job", "app")},
		{http.MethodPost, "/api/job/register", jobBody("job", "app")},
		{http.MethodPut, "/api/job/update", `{"jobName":"job","cron":"bad cron"}`},
		{http.MethodPost, "/api/job/trigger", `{"jobName":"job","jobParameter":"x","idempotencyKey":"k1"}`},
	} {
		e.clock.Advance(time.Millisecond) // rows in request order
		e.request(w.method, w.path, w.body)
	}
	e.user, e.pass = "", ""
	e.clock.Advance(time.Millisecond)
	e.request(http.MethodPost, "/api/login", `{"username":"root","password":"nope"}`)
	rows := e.auditRows(a, "").Rows
	want := []string{
		"fields: appName=app, appURL=https://repo.example/app.tgz, bootstrapScript, cpuCount=0.5",
		"fields: appName=app, cpuCount=0.5, cron=0 0/10 * * * ?, description, jobName=job, jobParameter, memoryMB=32, props(1 keys), shardingItemParameters, shardingTotalCount=2",
		"fields: appName=app, cpuCount=0.5, cron=0 0/10 * * * ?, description, jobName=job, jobParameter, memoryMB=32, props(1 keys), shardingItemParameters, shardingTotalCount=2; refused: Job 'job' already existed.",
		"fields: cron=bad cron, jobName=job; refused: ",
		"fields: idempotencyKey=k1, jobName=job, jobParameter",
		"login refused: wrong user name or password",
	}
	if len(rows) != len(want) {
		t.Fatalf("%d rows, want %d", len(rows), len(want))
	}
	for i, w := range want {
		if got := rows[i].Summary; !strings.HasPrefix(got, w) || (strings.HasSuffix(w, ": ") && len(got) == len(w)) {
			t.Errorf("row %d summary %q, want %q…", i, got, w)
		}
	}
	if r := rows[5]; r.User != "root" || r.Role != "" || r.Status != http.StatusUnauthorized {
		t.Errorf("failed login row %+v", r)
	}
}

// No password, token, credential in a URL, parameter or prop value ever
// reaches the audit log, whatever the write and however it ends.
func TestAuditNeverRecordsSecrets(t *testing.T) {
	a := newAuditLog(t)
	e := newEnv(t, withCreds(testCreds), withAudit(a))
	secrets := []string{"s3cret", "peek", "hunter2-pw", "tok-7f3a9", "qs-secret-77", "prop-secret-42", "param-secret-9", "trail-secret-1", "urlpw-55"}
	// Logins: right and wrong passwords; the token a login returns.
	tok := login(t, e, "root", "s3cret")
	e.request(http.MethodPost, "/api/login", `{"username":"root","password":"hunter2-pw"}`)
	e.request(http.MethodPost, "/api/login", `{"username":"root","password":"hunter2-pw"} trail-secret-1`)
	e.request(http.MethodPost, "/api/login", `{"username":"guest","password":"peek"}`)
	bearer := func(method, path, body string) response {
		return e.request(method, path, body, "Authorization", "Bearer "+tok)
	}
	// Credentials in URLs, props, parameters; accepted and refused.
	bearer(http.MethodPost, "/api/app", `{"appName":"app","appURL":"https://bob:urlpw-55@repo.example/app.tgz?token=qs-secret-77","bootstrapScript":"bin/start.sh"}`)
	bearer(http.MethodPost, "/api/app", `{"appName":"app2","appURL":"ftp://bob:urlpw-55@repo.example/app.tgz?token=qs-secret-77","bootstrapScript":"bin/start.sh"}`)
	bearer(http.MethodPost, "/api/job/register", `{"jobName":"job","appName":"app","cron":"0 0/10 * * * ?","jobParameter":"param-secret-9","props":{"script.command.line":"run --password prop-secret-42"}}`)
	bearer(http.MethodPut, "/api/job/update", `{"jobName":"job","jobErrorHandlerType":"WEBHOOK","props":{"webhook.url":"prop-secret-42"}}`)
	bearer(http.MethodPut, "/api/job/update", `{"jobName":"job","jobType":"HTTP","props":{"http.url":"htp://x/?k=prop-secret-42"}}`)
	bearer(http.MethodPost, "/api/job/trigger", `{"jobName":"job","jobParameter":"param-secret-9"}`)
	bearer(http.MethodPost, "/api/job/trigger", `{"jobName":"job","jobParameter":"param-secret-9"} "trail-secret-1"`)
	bearer(http.MethodPost, "/api/job/register", `{"jobName":"j2","appName":"app","jobParameter":"param-secret-9","bogus":"trail-secret-1"}`)
	// Wrong Basic password, forged token, a token after logout.
	e.user, e.pass = "root", "hunter2-pw"
	e.request(http.MethodPost, "/api/job/trigger", "job")
	e.user, e.pass = "", ""
	e.request(http.MethodPost, "/api/job/trigger", "job", "Authorization", "Bearer tok-7f3a9")
	bearer(http.MethodPost, "/api/logout", "")
	bearer(http.MethodPost, "/api/job/trigger", "job")

	rows := e.auditRows(a, "").Rows
	if len(rows) < 16 {
		t.Fatalf("only %d audit rows", len(rows))
	}
	secrets = append(secrets, tok)
	for _, r := range rows {
		all := fmt.Sprintf("%+v", r)
		for _, s := range secrets {
			if strings.Contains(all, s) {
				t.Errorf("audit row holds the secret %q: %s", s, all)
			}
		}
	}
	// The rows still say what happened.
	var sawURL, sawRefusedURL bool
	for _, r := range rows {
		sawURL = sawURL || strings.Contains(r.Summary, "appURL=https://repo.example/app.tgz")
		sawRefusedURL = sawRefusedURL || (r.Target == "app2" && r.Status == http.StatusBadRequest && strings.Contains(r.Summary, "refused: appURL"))
	}
	if !sawURL || !sawRefusedURL {
		t.Errorf("summaries lost their meaning: %+v", rows)
	}
}

// GET /api/audit: admins only, the history searches' filters and paging.
func TestAuditSearch(t *testing.T) {
	a := newAuditLog(t)
	e := newEnv(t, withCreds(testCreds), withAudit(a))
	seed(t, e) // two writes at t0
	e.user, e.pass = "root", "s3cret"
	for i := range 5 {
		e.clock.Advance(time.Minute)
		e.must(http.StatusNoContent, http.MethodPost, "/api/job/trigger", "job")
		if i == 2 {
			e.must(http.StatusNoContent, http.MethodPost, "/api/job/job/disable", "")
			e.request(http.MethodPost, "/api/job/trigger", "job") // 409: disabled
			e.must(http.StatusNoContent, http.MethodPost, "/api/job/job/enable", "")
		}
	}
	e.user, e.pass = "guest", "peek"
	e.request(http.MethodDelete, "/api/job/job/deregister", "")
	e.wantError(e.request(http.MethodGet, "/api/audit", ""), http.StatusForbidden, "audit log is for the admin")
	e.user, e.pass = "", ""
	e.wantError(e.request(http.MethodGet, "/api/audit", ""), http.StatusUnauthorized, "log in")

	q := func(query string) view.Page[view.Audit] { return e.auditRows(a, query) }
	if p := q(""); p.Total != 11 {
		t.Fatalf("total %d, want 11", p.Total)
	}
	for _, c := range []struct {
		query string
		total int
	}{
		{"user=guest", 1},
		{"method=delete", 1},
		{"method=POST&target=job", 9},
		{"status=409", 1},
		{"status=403&user=guest", 1},
		{"targetKind=app", 1},
		{"startTime=" + url.QueryEscape(t0.Add(2*time.Minute).Format(time.RFC3339)) + "&endTime=" + url.QueryEscape(t0.Add(3*time.Minute).Format(time.RFC3339)), 5},
	} {
		if p := q(c.query); p.Total != c.total {
			t.Errorf("%s: total %d, want %d", c.query, p.Total, c.total)
		}
	}
	e.user, e.pass = "root", "s3cret"
	p := decode[view.Page[view.Audit]](t, e.must(http.StatusOK, http.MethodGet, "/api/audit?per_page=2&page=2", ""))
	if p.Total != 11 || len(p.Rows) != 2 || p.Rows[0].CreationTime.After(*q("").Rows[10].CreationTime) {
		t.Errorf("page 2 of 2 newest first: %+v", p)
	}
	e.wantError(e.request(http.MethodGet, "/api/audit?status=4xx", ""), http.StatusBadRequest, "status must be an integer")
	e.wantError(e.request(http.MethodGet, "/api/audit?password=x", ""), http.StatusBadRequest, "unknown filter")
	e.wantError(e.request(http.MethodGet, "/api/audit?per_page=0", ""), http.StatusBadRequest, "per_page")

	// No audit log configured: 503, and writes still work.
	off := newEnv(t)
	off.wantError(off.request(http.MethodGet, "/api/audit", ""), http.StatusServiceUnavailable, "audit log is off")
	off.must(http.StatusOK, http.MethodPost, "/api/app", appBody("x"))
}

// With the history database down, writes are answered as usual and their
// audit rows wait in the spool; they reach the database when it is back.
func TestAuditWhileDatabaseDown(t *testing.T) {
	a := newAuditLog(t)
	e := newEnv(t, withAudit(a))
	e.must(http.StatusOK, http.MethodPost, "/api/app", appBody("app")) // schema applied, database up
	lock, err := sqlx.Open("sqlite", "file:"+a.path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	conn, err := lock.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(context.Background(), "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		e.must(http.StatusOK, http.MethodPost, "/api/job/register", jobBody(fmt.Sprintf("job%d", i), "app"))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	if err := a.Flush(ctx); err == nil {
		t.Fatal("the audit log reached a locked database")
	}
	cancel()
	if _, err := conn.ExecContext(context.Background(), "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	if p := e.auditRows(a, "route="+url.QueryEscape("/api/job/register")); p.Total != 20 {
		t.Fatalf("%d register rows after the outage, want 20", p.Total)
	}
}

// ClientAddr decides the recorded address (a cluster leader trusts the
// address a standby forwards).
func TestAuditClientAddr(t *testing.T) {
	a := newAuditLog(t)
	e := newEnv(t, withAudit(a), func(o *api.Options, _ *api.Credentials) {
		o.Forwarding.ClientAddr = func(r *http.Request) string {
			if f := r.Header.Get("X-Test-Forwarded-For"); f != "" {
				return f
			}
			return api.RemoteAddr(r)
		}
	})
	e.request(http.MethodPost, "/api/app", appBody("app"), "X-Test-Forwarded-For", "10.9.8.7")
	e.clock.Advance(time.Millisecond)
	e.request(http.MethodPost, "/api/app", appBody("app2"), "X-Forwarded-For", "6.6.6.6") // not trusted by default
	rows := e.auditRows(a, "").Rows
	if len(rows) != 2 || rows[0].Address != "10.9.8.7" || rows[1].Address != "192.0.2.1" {
		t.Fatalf("addresses %+v", rows)
	}
}
