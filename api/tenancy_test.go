package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/ejcloud/elasticjob/api"
	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/history"
	"github.com/ejcloud/elasticjob/history/trace"
	"github.com/ejcloud/elasticjob/identity"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/namespace"
	"github.com/ejcloud/elasticjob/packages"
	"github.com/ejcloud/elasticjob/queue"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/store"
	"github.com/ejcloud/elasticjob/store/memory"
	"github.com/ejcloud/elasticjob/task"
	"github.com/ejcloud/elasticjob/workflow"
)

// secret marks everything team pay owns: no answer to a caller without a
// role in pay may contain it.
const secret = "PAYSECRET"

// The users file of the tenancy tests, hashes as `htpasswd -nbB` writes
// them: alice edits pay, carol views pay, bob edits search only.
const tenancyUsers = `users:
  - name: alice
    password: '$2y$05$QTtPKarYJQKa6Rf.zXEmKeXox3z2FIMuqwm4L5IwxuZW22NrJgAGG' # secret
    namespaces: {pay: edit}
  - name: bob
    password: '$2y$05$775ogPsIQk6GuRP9SjwQq.60fB2IJJUJ78HpzhbvfsKcfpqvjKNCm' # hunter2
    namespaces: {search: edit}
  - name: carol
    password: '$2y$05$Ks66vx1SE9xDFh2s8iAUsueUgUY6zDsrfjv7MyrjqKDoHvItedjTS' # pw3
    namespaces: {pay: view}
`

// payOps serves pay's task logs and sandboxes with the secret in them.
type payOps struct{ fakeOps }

func (p *payOps) TaskLog(ctx context.Context, taskID, stream string, offset, length int64) (engine.LogChunk, error) {
	c, err := p.fakeOps.TaskLog(ctx, taskID, stream, offset, length)
	if namespace.Of(strings.SplitN(taskID, "@-@", 2)[0]) == "pay" {
		c.Data = secret + " in the log"
	}
	return c, err
}

func (p *payOps) Sandboxes(_ context.Context, appName string) ([]engine.Sandbox, error) {
	if namespace.Of(appName) == "pay" {
		return []engine.Sandbox{{Hostname: "h", Path: "/sandbox/" + secret}}, nil
	}
	return []engine.Sandbox{}, nil
}

type tenancy struct {
	h        http.Handler
	reg      *registry.Registry
	kv       store.KV
	payTask  string
	payToken string // an API token of pay (its id in payTokenID)
	tokenID  string
	users    *identity.UsersFile
}

// twoTeamsAPI is the API over a registry where pay and search each have
// an app etl, a job nightly and a workflow flow, and pay also a running
// task, queued work, a keyed trigger's record, a workflow run, an API
// token and history rows, with the real history store on SQLite.
func twoTeamsAPI(t *testing.T, opts ...func(*api.Options)) *tenancy {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	users := filepath.Join(dir, "users.yaml")
	if err := os.WriteFile(users, []byte(tenancyUsers), 0o600); err != nil {
		t.Fatal(err)
	}
	uf, err := identity.OpenUsersFile(users, nil, "root", "guest")
	if err != nil {
		t.Fatal(err)
	}
	migratedDB(t, filepath.Join(dir, "trace.db"))
	// the rows below are written straight into the schema Open applies: give the migrations
	// time on a busy machine (the default 3 s bound leaves the database unmigrated, spooling)
	w, err := trace.Open(ctx, trace.Options{DSN: "file:" + filepath.Join(dir, "trace.db") + "?_pragma=journal_mode(WAL)", SpoolDir: filepath.Join(dir, "spool"),
		ConnectTimeout: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if w.DB() == nil {
		t.Fatal("the history database was not migrated")
	}
	t.Cleanup(func() { _ = w.Close(context.Background()) })
	st, err := history.New(w.Handle(), history.SQLite, history.Options{Location: time.UTC})
	if err != nil {
		t.Fatal(err)
	}
	host, err := packages.New(packages.Options{Dir: filepath.Join(dir, "packages"), MaxBytes: 1 << 20,
		Key: []byte("0123456789abcdef0123456789abcdef"), Base: "http://127.0.0.1:1", Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(host.Close)

	kv := memory.New()
	t.Cleanup(func() { kv.Close() })
	reg := registry.New(kv, registry.Options{Damage: registry.NewDamage(nil)})
	tn := &tenancy{reg: reg, kv: kv, users: uf}
	for _, ns := range []string{"pay", "search"} {
		if _, err := reg.Tenancy().PutNamespace(ctx, namespace.Record{Name: ns}); err != nil {
			t.Fatal(err)
		}
		mark := ""
		if ns == "pay" {
			mark = secret
		}
		r := reg.In(ns)
		a := app.Default()
		a.AppName, a.AppURL, a.BootstrapScript = "etl", "http://h/"+mark+".tgz", "bin/start.sh"
		if err := r.Config().AddApp(ctx, a); err != nil {
			t.Fatal(err)
		}
		j := jobs.Default()
		j.JobName, j.AppName, j.Cron, j.Description = "nightly", "etl", "0 0 * * * ?", mark
		j.Props = map[string]string{"db.password": mark}
		if err := r.Config().AddJob(ctx, j); err != nil {
			t.Fatal(err)
		}
		wf := workflow.Default()
		wf.Name, wf.Description, wf.Nodes = "flow", mark, []workflow.Node{{ID: "a", Job: "nightly"}}
		if err := r.Flows().AddWorkflow(ctx, wf); err != nil {
			t.Fatal(err)
		}
	}
	// pay's state, written as the scheduler writes it (its view: keys).
	tn.payTask = jobs.NewTaskID("pay~nightly", 0, jobs.KindReady, "agent-1").String()
	if _, err := reg.In("pay").Work().TriggerRun(ctx, "nightly", queue.PendingRun{IdempotencyKey: "k1", JobParameter: secret}, t0); err != nil {
		t.Fatal(err)
	}
	e := task.Entry{TaskID: tn.payTask, AgentID: "agent-1", ExecutorID: "pay~etl@-@agent-1", State: task.Running, Parameter: ptr(secret), LaunchedAt: t0}
	f := queue.Failover{TaskID: tn.payTask, Since: t0, Parameter: ptr(secret)}
	if err := reg.Change().Launch("pay~nightly", 0, e).FailOver("pay~nightly", 1, f).
		RecordRun("pay~k1", task.RunRecord{JobName: "pay~nightly", At: t0}).Commit(ctx); err != nil {
		t.Fatal(err)
	}
	payFlow, _ := reg.Flows().Workflow(ctx, "pay~flow")
	run, _ := workflow.Step(workflow.NewRun(payFlow, "r1", workflow.SourceAPI, ptr(secret), "", t0), true, workflow.Input{Now: t0})
	if err := reg.Change().CreateWorkflowRun(run).Commit(ctx); err != nil {
		t.Fatal(err)
	}
	tok, rec, err := identity.NewAPIToken(identity.APIToken{Namespace: "pay", Name: "ci", Role: identity.Edit, CreatedBy: "alice", CreatedAt: t0})
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.Tenancy().AddToken(ctx, rec); err != nil {
		t.Fatal(err)
	}
	tn.payToken, tn.tokenID = tok, rec.ID
	w.Handle().MustExec(`INSERT INTO JOB_EXECUTION_LOG (id, namespace, job_name, task_id, hostname, ip, sharding_item, execution_source, is_success, failure_cause, start_time)
		VALUES ('1', 'pay', 'nightly', ?, 'h', '10.0.0.1', 0, 'NORMAL_TRIGGER', 0, ?, '2024-03-01 11:00:00.000')`, tn.payTask, secret)
	w.Handle().MustExec(`INSERT INTO JOB_STATUS_TRACE_LOG (id, namespace, job_name, original_task_id, task_id, slave_id, source, execution_type, sharding_item, state, message, creation_time)
		VALUES ('2', 'pay', 'nightly', '', ?, 'a', 'CLOUD_SCHEDULER', 'READY', '0', 'TASK_FAILED', ?, '2024-03-01 11:00:00.000')`, tn.payTask, secret)
	w.Handle().MustExec(`INSERT INTO WORKFLOW_RUN_LOG (id, namespace, workflow_name, run_id, state, source, attempt, created_time, reason, node_count, succeeded_count, failed_count, skipped_count, version)
		VALUES ('3', 'pay', 'flow', 'r1', 'FAILED', 'API', 1, '2024-03-01 11:00:00.000', ?, 1, 0, 1, 0, 1)`, secret)
	w.Handle().MustExec(`INSERT INTO AUDIT_LOG (id, creation_time, user_name, role, address, method, route, target_kind, target, summary, status, namespace)
		VALUES ('4', '2024-03-01 11:00:00.000', 'alice', 'user', '10.0.0.1', 'POST', '/api/job/trigger', 'job', 'nightly', ?, 204, 'pay')`, secret)
	w.Handle().MustExec(`INSERT INTO TASK_RESULT_STATISTICS_MINUTE (success_count, failed_count, statistics_time, creation_time, namespace)
		VALUES (0, 987654, '2024-03-01 11:59:00', '2024-03-01 11:59:00', 'pay')`)

	clk := clock.NewFake(t0)
	ops := &payOps{}
	o := api.Options{
		Registry: reg,
		Clock:    clk,
		Log:      slog.New(slog.DiscardHandler),
		Live:     api.Live{Ops: ops, Engine: ops, History: st},
		Audit:    history.NewAuditLog(w, st),
		Apps:     api.AppOptions{Packages: host},
		Limits:   api.Limits{MaxBodyBytes: 64 << 10},
		Auth:     api.NewAuth(api.Credentials{AdminUser: "root", AdminPassword: "s3cret", GuestUser: "guest", GuestPassword: "peek", Users: uf}, clk, reg.Tenancy()),
	}
	for _, f := range opts {
		f(&o)
	}
	tn.h = api.New(o)
	return tn
}

// snapshot is every node of pay's tree and pay's API tokens, as stored.
func (tn *tenancy) snapshot(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	var walk func(p string)
	walk = func(p string) {
		n, err := tn.kv.Get(context.Background(), p)
		if err == nil {
			out[p] = fmt.Sprintf("%d:%s", n.Version, n.Value)
		}
		kids, err := tn.kv.Children(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range kids {
			walk(strings.TrimSuffix(p, "/") + "/" + k)
		}
	}
	walk("/namespaces/pay")
	if tok, err := tn.reg.Tenancy().Token(context.Background(), tn.tokenID); err == nil {
		out["token"] = tok.Hash
	}
	return out
}

// call sends one request as user (Basic) or with a bearer token.
func (tn *tenancy) call(method, target, body, user, pass string) *httptest.ResponseRecorder {
	var req *http.Request
	if body != "" {
		req = httptest.NewRequest(method, target, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
	} else {
		req = httptest.NewRequest(method, target, nil)
	}
	if strings.HasPrefix(user, "Bearer ") {
		req.Header.Set("Authorization", user)
	} else if user != "" {
		req.SetBasicAuth(user, pass)
	}
	w := httptest.NewRecorder()
	tn.h.ServeHTTP(w, req)
	return w
}

// fill puts pay's identifiers into a route's parameters: the names pay
// and search share, pay's task id, trigger key, run id and token id, and
// ns for the namespace of /api/namespaces/{name}.
func (tn *tenancy) fill(route, ns string) string {
	return strings.NewReplacer(":appName", "etl", ":jobName", "nightly", ":workflowName", "flow", ":runId", "r1",
		":taskId", tn.payTask, ":key", "k1", ":name", ns, ":id", tn.tokenID, ":period", "online",
		":sha256", strings.Repeat("a", 64), ":token", "t", ":filename", "f.tgz", ":kind", "executor", ":file", "f",
		":profile", "heap", ":secret", "db").Replace(route)
}

// query is what a route reads besides its path: pay's names and task id.
func (tn *tenancy) query(route, ns string) string {
	q := "namespace=" + ns
	switch route {
	case "/api/operate/sandbox":
		q += "&appName=etl"
	case "/api/job/lastResults":
		q += "&jobName=nightly"
	case "/api/job/events/executions", "/api/job/events/statusTraces":
		q += "&taskId=" + tn.payTask
	case "/api/job/statistics/tasks/results", "/api/job/statistics/tasks/running", "/api/job/statistics/jobs/running":
		q += "&since=lastWeek"
	case "/api/cron/next":
		q += "&cron=0+0+*+*+*+%3F"
	}
	return q
}

// bodyFor is a write's body naming pay's objects.
func bodyFor(route string) string {
	switch route {
	case "/api/app":
		return `{"appName":"etl","appURL":"http://h/x.tgz","bootstrapScript":"bin/start.sh"}`
	case "/api/job/register", "/api/job/update", "/api/jobs/register":
		return `{"jobName":"nightly","appName":"etl","cron":"0 0 * * * ?","shardingTotalCount":1}`
	case "/api/workflow":
		return `{"name":"flow","nodes":[{"id":"a","job":"nightly"}]}`
	case "/api/job/trigger", "/api/job/deregister":
		return `nightly`
	case "/api/namespaces/:name/tokens":
		return `{"name":"x","role":"edit"}`
	case "/api/login":
		return `{"username":"bob","password":"hunter2"}`
	}
	return ""
}

// routeAccessible are the routes a caller without a role in a namespace
// may still call: they show nothing a namespace holds (or only the
// caller's own), or are not the API's.
var routeAccessible = map[string]bool{
	"GET /api/whoami": true, "GET /api/cron/next": true, "GET /api/namespaces": true, "GET /api/registry/damaged": true, "GET /api/openapi.json": true,
	"POST /api/login": true, "POST /api/logout": true, "GET /api/oidc": true, "GET /api/oidc/login": true, "GET /api/oidc/callback": true, "GET /api/operate/cluster": false,
}

// TestNoRoleNoAccess walks every route of the router and proves that a
// user without a role in namespace pay can neither read nor change
// anything in it: asked in pay, every namespaced route answers 403 (the
// same whether pay exists or not); asked in its own namespace with pay's
// names, task ids, keys and token ids, no answer holds anything of pay's;
// and pay's tree and tokens are as they were. A user with the view role
// in pay is refused every write there too.
func TestNoRoleNoAccess(t *testing.T) {
	tn := twoTeamsAPI(t)
	before := tn.snapshot(t)
	routes := tn.h.(*gin.Engine).Routes()
	if len(routes) < 70 {
		t.Fatalf("only %d routes: the walk is broken", len(routes))
	}
	checked := 0
	for _, rt := range routes {
		key := rt.Method + " " + rt.Path
		for _, asked := range []string{"pay", "search", "nosuch"} {
			target := tn.fill(rt.Path, asked) + "?" + tn.query(rt.Path, asked)
			w := tn.call(rt.Method, target, bodyFor(rt.Path), "bob", "hunter2")
			body := w.Body.String()
			if strings.Contains(body, secret) || strings.Contains(body, "987654") {
				t.Errorf("bob, %s in %s: %d %s: pay's data", key, asked, w.Code, body)
			}
			if asked == "search" || routeAccessible[key] || !strings.HasPrefix(rt.Path, "/api/") {
				continue
			}
			want := http.StatusForbidden
			if w.Code != want {
				t.Errorf("bob, %s in %s: %d %s; want %d", key, asked, w.Code, body, want)
			}
			if asked == "pay" && w.Code == want {
				checked++
			}
		}
		if !isReadMethod(rt.Method) && strings.HasPrefix(rt.Path, "/api/") && !routeAccessible[key] {
			w := tn.call(rt.Method, tn.fill(rt.Path, "pay")+"?"+tn.query(rt.Path, "pay"), bodyFor(rt.Path), "carol", "pw3")
			if w.Code != http.StatusForbidden {
				t.Errorf("carol (view), %s in pay: %d %s; want 403", key, w.Code, w.Body)
			}
		}
	}
	if checked < 60 {
		t.Errorf("only %d routes refused bob in pay", checked)
	}
	if after := tn.snapshot(t); !mapsEqual(before, after) {
		t.Errorf("pay changed:\nbefore %v\nafter  %v", before, after)
	}
	// The namespaces bob lists are his own.
	w := tn.call("GET", "/api/namespaces", "", "bob", "hunter2")
	var list []struct{ Name string }
	if err := json.Unmarshal(w.Body.Bytes(), &list); err != nil || len(list) != 1 || list[0].Name != "search" {
		t.Errorf("bob's namespaces: %s", w.Body)
	}
}

func isReadMethod(m string) bool { return m == "GET" || m == "HEAD" || m == "OPTIONS" }

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestTeamsWorkInTheirNamespaces: alice (edit pay) and a pay API token
// read and write pay as its own names; the same names in search are bob's;
// the default namespace, the guest and the original's curls are as before.
func TestTeamsWorkInTheirNamespaces(t *testing.T) {
	tn := twoTeamsAPI(t)
	w := tn.call("GET", "/api/job/jobs/nightly?namespace=pay", "", "alice", "secret")
	var j jobs.Config
	if err := json.Unmarshal(w.Body.Bytes(), &j); w.Code != 200 || err != nil || j.JobName != "nightly" || j.AppName != "etl" || j.Description != secret {
		t.Fatalf("alice reads pay's job: %d %s", w.Code, w.Body)
	}
	if w := tn.call("GET", "/api/job/jobs/nightly?namespace=search", "", "bob", "hunter2"); w.Code != 200 || strings.Contains(w.Body.String(), secret) {
		t.Fatalf("bob reads search's job: %d %s", w.Code, w.Body)
	}
	// pay's running task, by its id, in pay.
	if w := tn.call("GET", "/api/job/tasks/"+tn.payTask+"?namespace=pay", "", "alice", "secret"); w.Code != 200 {
		t.Fatalf("alice reads pay's task: %d %s", w.Code, w.Body)
	}
	if w := tn.call("GET", "/api/job/logs/"+tn.payTask+"?namespace=pay", "", "alice", "secret"); w.Code != 200 || !strings.Contains(w.Body.String(), secret) {
		t.Fatalf("alice reads pay's log: %d %s", w.Code, w.Body)
	}
	// pay's history, filtered to pay.
	w = tn.call("GET", "/api/job/events/executions?namespace=pay", "", "alice", "secret")
	if !strings.Contains(w.Body.String(), `"total":1`) {
		t.Fatalf("pay's executions: %s", w.Body)
	}
	if w := tn.call("GET", "/api/job/events/executions", "", "root", "s3cret"); !strings.Contains(w.Body.String(), `"total":0`) {
		t.Fatalf("default's executions hold pay's: %s", w.Body)
	}
	// The API token writes in pay, and only there.
	bearer := "Bearer " + tn.payToken
	if w := tn.call("POST", "/api/job/trigger?namespace=pay", "nightly", bearer, ""); w.Code != http.StatusNoContent {
		t.Fatalf("the token triggers in pay: %d %s", w.Code, w.Body)
	}
	if w := tn.call("GET", "/api/job/jobs?namespace=search", "", bearer, ""); w.Code != http.StatusForbidden {
		t.Fatalf("the token reads search: %d %s", w.Code, w.Body)
	}
	if w := tn.call("POST", "/api/namespaces/pay/tokens", `{"name":"more"}`, bearer, ""); w.Code != http.StatusForbidden {
		t.Fatalf("a token makes tokens: %d %s", w.Code, w.Body)
	}
	// alice makes a token, sees it listed without its secret, revokes it.
	w = tn.call("POST", "/api/namespaces/pay/tokens", `{"name":"deploy","role":"view"}`, "alice", "secret")
	var made struct{ Token, ID string }
	if err := json.Unmarshal(w.Body.Bytes(), &made); w.Code != 201 || err != nil || !strings.HasPrefix(made.Token, "ejn_") {
		t.Fatalf("alice makes a token: %d %s", w.Code, w.Body)
	}
	if w := tn.call("GET", "/api/job/jobs?namespace=pay", "", "Bearer "+made.Token, ""); w.Code != 200 {
		t.Fatalf("the new view token reads pay: %d %s", w.Code, w.Body)
	}
	if w := tn.call("POST", "/api/job/trigger?namespace=pay", "nightly", "Bearer "+made.Token, ""); w.Code != http.StatusForbidden {
		t.Fatalf("the view token writes: %d %s", w.Code, w.Body)
	}
	if w := tn.call("GET", "/api/namespaces/pay/tokens", "", "alice", "secret"); strings.Contains(w.Body.String(), made.Token[20:]) || strings.Contains(w.Body.String(), "hash") {
		t.Fatalf("the token list shows a secret: %s", w.Body)
	}
	if w := tn.call("DELETE", "/api/namespaces/pay/tokens/"+made.ID, "", "alice", "secret"); w.Code != http.StatusNoContent {
		t.Fatalf("revoke: %d %s", w.Code, w.Body)
	}
	if w := tn.call("GET", "/api/job/jobs?namespace=pay", "", "Bearer "+made.Token, ""); w.Code != http.StatusUnauthorized {
		t.Fatalf("a revoked token: %d %s", w.Code, w.Body)
	}
	// Audit: alice reads pay's rows only; the admin reads every row.
	w = tn.call("GET", "/api/audit", "", "alice", "secret")
	var page struct {
		Rows []struct{ Namespace string }
	}
	if err := json.Unmarshal(w.Body.Bytes(), &page); err != nil || len(page.Rows) == 0 || slices.ContainsFunc(page.Rows, func(r struct{ Namespace string }) bool { return r.Namespace != "pay" }) {
		t.Fatalf("alice's audit: %s", w.Body)
	}
	if w := tn.call("GET", "/api/audit?namespace=search", "", "alice", "secret"); w.Code != http.StatusForbidden {
		t.Fatalf("alice reads search's audit: %d", w.Code)
	}
	if w := tn.call("GET", "/api/audit", "", "carol", "pw3"); w.Code != http.StatusForbidden {
		t.Fatalf("a viewer reads the audit: %d", w.Code)
	}
	// The guest reads default and nothing else; the admin everything.
	if w := tn.call("GET", "/api/job/jobs", "", "guest", "peek"); w.Code != 200 {
		t.Fatalf("guest reads default: %d", w.Code)
	}
	if w := tn.call("GET", "/api/job/jobs?namespace=pay", "", "guest", "peek"); w.Code != http.StatusForbidden {
		t.Fatalf("guest reads pay: %d", w.Code)
	}
	if w := tn.call("GET", "/api/job/jobs?namespace=pay", "", "root", "s3cret"); w.Code != 200 || !strings.Contains(w.Body.String(), secret) {
		t.Fatalf("admin reads pay: %d", w.Code)
	}
	if w := tn.call("GET", "/api/job/jobs?namespace=nosuch", "", "root", "s3cret"); w.Code != http.StatusNotFound {
		t.Fatalf("a namespace that does not exist: %d %s", w.Code, w.Body)
	}
}

// TestNamespaceAdmin: the admin creates a namespace with a capacity,
// reads its usage, and may delete it only once it holds nothing.
func TestNamespaceAdmin(t *testing.T) {
	tn := twoTeamsAPI(t)
	w := tn.call("PUT", "/api/namespaces/ops", `{"guarantee":{"cpuCount":1,"memoryMB":1024},"limit":{"cpuCount":4,"memoryMB":4096},"weight":2}`, "root", "s3cret")
	if w.Code != http.StatusCreated || !strings.Contains(w.Body.String(), `"weight":2`) {
		t.Fatalf("create: %d %s", w.Code, w.Body)
	}
	if w := tn.call("PUT", "/api/namespaces/ops", `{"weight":3}`, "root", "s3cret"); w.Code != http.StatusOK {
		t.Fatalf("update: %d %s", w.Code, w.Body)
	}
	for body, want := range map[string]string{
		`{"guarantee":{"cpuCount":5,"memoryMB":1},"limit":{"cpuCount":4,"memoryMB":4096}}`: "guarantee.cpuCount 5 is above limit.cpuCount 4",
		`{"weight":-1}`:  "weight must be between",
		`{"limits":{}}`:  "limits",
		`{"weight":"x"}`: "weight",
	} {
		if w := tn.call("PUT", "/api/namespaces/ops", body, "root", "s3cret"); w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), want) {
			t.Errorf("PUT %s: %d %s; want 400 with %q", body, w.Code, w.Body, want)
		}
	}
	if w := tn.call("PUT", "/api/namespaces/Bad_Name", `{}`, "root", "s3cret"); w.Code != http.StatusBadRequest {
		t.Errorf("a bad name: %d %s", w.Code, w.Body)
	}
	if w := tn.call("PUT", "/api/namespaces/ops2", `{}`, "alice", "secret"); w.Code != http.StatusForbidden {
		t.Errorf("alice creates a namespace: %d", w.Code)
	}
	w = tn.call("GET", "/api/namespaces/pay", "", "alice", "secret")
	var v struct {
		Role  string
		Usage struct {
			Apps, Jobs, Workflows, RunningTasks, Queued int
			InUse                                       namespace.Resources
		}
	}
	if err := json.Unmarshal(w.Body.Bytes(), &v); err != nil || v.Role != "edit" || v.Usage.Apps != 1 || v.Usage.Jobs != 1 || v.Usage.Workflows != 1 ||
		v.Usage.RunningTasks != 1 || v.Usage.Queued != 2 || v.Usage.InUse.CPUCount != 2 || v.Usage.InUse.MemoryMB != 256 {
		t.Fatalf("pay's usage: %s", w.Body)
	}
	w = tn.call("DELETE", "/api/namespaces/pay", "", "root", "s3cret")
	if w.Code != http.StatusConflict || !strings.Contains(w.Body.String(), "namespace 'pay' holds 1 app (etl), 1 job (nightly), 1 workflow (flow), 1 running task, 2 queued executions") {
		t.Fatalf("delete pay: %d %s", w.Code, w.Body)
	}
	if w := tn.call("DELETE", "/api/namespaces/ops", "", "root", "s3cret"); w.Code != http.StatusNoContent {
		t.Fatalf("delete ops: %d %s", w.Code, w.Body)
	}
	if w := tn.call("DELETE", "/api/namespaces/default", "", "root", "s3cret"); w.Code != http.StatusConflict {
		t.Fatalf("delete default: %d %s", w.Code, w.Body)
	}
}
