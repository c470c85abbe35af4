package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/ejcloud/elasticjob/api"
	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/history"
	"github.com/ejcloud/elasticjob/history/trace"
	"github.com/ejcloud/elasticjob/internal/fuzzing"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/packages"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/store/memory"
)

// fuzzAdmin is the admin of the fuzzed APIs that have credentials.
var fuzzAdmin = api.Credentials{AdminUser: "admin", AdminPassword: "s3cret", GuestUser: "guest", GuestPassword: "guest"}

// fuzzDB is what the fuzzed APIs share, wired as the scheduler wires it:
// the real history store and audit log on SQLite (the event trace writer
// spools audit rows, the store searches them) with one execution, and a
// real package host in a temp dir. The scheduler always hosts packages and,
// with history on, keeps the audit log, so no route answers the 503 of a
// feature that is off.
type fuzzDB struct {
	hist  api.History
	audit api.AuditLog
	pkgs  api.Packages
}

// openFuzzDB opens the shared history database and package host in a temp dir.
func openFuzzDB(f *testing.F) fuzzDB {
	dir := f.TempDir()
	ctx := context.Background()
	migratedDB(f, filepath.Join(dir, "trace.db"))
	// The schema is applied within Open's first connection: a minute for
	// it. At the default 3 s, on a loaded machine under -race, the seeds
	// met JOB_EXECUTION_LOG without its namespace column (2 full runs of 3),
	// as if Open had given up half way and left the rest to its retry loop.
	w, err := trace.Open(ctx, trace.Options{DSN: "file:" + filepath.Join(dir, "trace.db") + "?_pragma=journal_mode(WAL)",
		SpoolDir: filepath.Join(dir, "spool"), ConnectTimeout: time.Minute})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = w.Close(context.Background()) })
	if w.DB() == nil {
		f.Fatal("the history schema was not applied within a minute")
	}
	w.Handle().MustExec(`INSERT INTO JOB_EXECUTION_LOG (id, job_name, task_id, hostname, ip, sharding_item, execution_source, is_success, start_time)
		VALUES ('1', 't1', 't1@-@0@-@READY@-@a@-@u', 'h', '10.0.0.1', 0, 'NORMAL_TRIGGER', 1, '2024-03-01 11:00:00.000')`)
	st, err := history.New(w.Handle(), history.SQLite, history.Options{Location: time.UTC})
	if err != nil {
		f.Fatal(err)
	}
	host, err := packages.New(packages.Options{Dir: filepath.Join(dir, "packages"), MaxBytes: 1 << 20,
		Key: []byte("0123456789abcdef0123456789abcdef"), Base: "http://127.0.0.1:1", Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(host.Close)
	return fuzzDB{hist: st, audit: history.NewAuditLog(w, st), pkgs: host}
}

// fuzzAPI builds the API over a fresh in-memory registry holding the app
// "app", the TRANSIENT job "t1" and the DAEMON job "d1".
func fuzzAPI(tb testing.TB, db fuzzDB, creds api.Credentials) *gin.Engine {
	ctx := context.Background()
	clk := clock.NewFake(t0)
	reg := registry.New(memory.New())
	a := app.Default()
	a.AppName, a.AppURL, a.BootstrapScript = "app", "http://127.0.0.1:1/app.tar.gz", "bin/start.sh"
	if err := reg.Config().AddApp(ctx, a); err != nil {
		tb.Fatal(err)
	}
	for name, typ := range map[string]jobs.ExecutionType{"t1": jobs.Transient, "d1": jobs.Daemon} {
		j := jobs.Default()
		j.JobName, j.AppName, j.JobExecutionType, j.Cron = name, "app", typ, "0 * * * * ?"
		if err := reg.Config().AddJob(ctx, j); err != nil {
			tb.Fatal(err)
		}
	}
	fops := &fakeOps{}
	h := api.New(api.Options{
		Registry: reg,
		Clock:    clk,
		Log:      slog.New(slog.DiscardHandler),
		Live:     api.Live{Ops: fops, Engine: fops, History: db.hist},
		Auth:     api.NewAuth(creds, clk, reg.Tenancy()),
		Audit:    db.audit,
		Apps:     api.AppOptions{Packages: db.pkgs},
		Limits:   api.Limits{MaxBodyBytes: 64 << 10},
	})
	return h.(*gin.Engine)
}

// fuzzRoutes lists the engine's routes in a stable order: every route
// registered, so a new endpoint is fuzzed without editing this test.
func fuzzRoutes(e *gin.Engine) []gin.RouteInfo {
	routes := e.Routes()
	sort.Slice(routes, func(i, j int) bool {
		if routes[i].Path != routes[j].Path {
			return routes[i].Path < routes[j].Path
		}
		return routes[i].Method < routes[j].Method
	})
	return routes
}

// fuzzPath puts the values (one per line) into the route's :param and
// *param segments, path-escaped; missing values are "app" or "t1".
func fuzzPath(route string, values string) string {
	vals := strings.Split(values, "\n")
	segs := strings.Split(route, "/")
	n := 0
	for i, s := range segs {
		if !strings.HasPrefix(s, ":") && !strings.HasPrefix(s, "*") {
			continue
		}
		v := "app"
		if strings.Contains(s, "job") || strings.Contains(s, "task") {
			v = "t1"
		}
		if n < len(vals) && vals[n] != "" {
			v = vals[n]
		}
		n++
		segs[i] = url.PathEscape(v)
	}
	return strings.Join(segs, "/")
}

var fuzzMethods = []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch, http.MethodHead, http.MethodOptions}

// authModes: 0 open (no credentials configured), 1 admin Basic auth,
// 2 the fuzzed Authorization header.
const authModes = 3

// apiSeeds adds seeds located by method and path: a route's index shifts
// when routes are added, so regression inputs of FuzzAPIRequest live here
// rather than in testdata/fuzz (where they would land on another route).
func apiSeeds(f *testing.F, routes []gin.RouteInfo) {
	find := func(method, path string) uint16 {
		for i, r := range routes {
			if r.Method == method && r.Path == path {
				return uint16(i)
			}
		}
		f.Fatalf("no route %s %s", method, path)
		return 0
	}
	type seed struct {
		method, path, params, query, body, authz string
		auth                                     uint8
	}
	for _, s := range []seed{
		{"POST", "/api/app", "", "", `{"appName":"a2","appURL":"http://h/a.tgz","bootstrapScript":"bin/start.sh","cpuCount":0.5,"memoryMB":64}`, "", 0},
		{"PUT", "/api/app", "", "", `{"appName":"app","appCacheEnable":false}`, "", 1},
		{"POST", "/api/job/register", "", "", `{"jobName":"j2","appName":"app","cron":"0/5 * * * * ?","shardingTotalCount":3,"shardingItemParameters":"0=a,1=b,2=c","jobType":"HTTP","props":{"http.url":"http://h/x"}}`, "", 0},
		{"PUT", "/api/job/update", "", "", `{"jobName":"t1","cron":"0 0 * * * ?","props":{}}`, "", 0},
		{"POST", "/api/job/register", "", "", `{"jobName":"j3","appName":"app","cpuCount":"NaN","memoryMB":"Infinity"}`, "", 0}, // a 500 with Go internals (issue 57)
		{"PUT", "/api/job/update", "", "", `{"jobName":"t1","memoryMB":1e20}`, "", 0},                                           // refused with an overflowed figure
		{"POST", "/api/app", "", "", `{"appName":"a3","appURL":"http://h/a.tgz","bootstrapScript":"b.sh","cpuCount":"-Inf","memoryMB":1e20}`, "", 0},
		{"POST", "/api/job/trigger", "", "", `{"jobName":"t1","jobParameter":"p","idempotencyKey":"k-1"}`, "", 0},
		{"POST", "/api/job/trigger", "", "", `t1`, "", 0},
		{"POST", "/api/job/trigger", "", "", `"d1"`, "", 0},
		{"DELETE", "/api/job/deregister", "", "", `{"jobName":"t1"}`, "", 0},
		{"DELETE", "/api/job/:jobName/deregister", "my\\_job", "", ``, "", 0},
		{"POST", "/api/login", "", "", `{"username":"admin","password":"s3cret"}`, "", 2},
		{"POST", "/api/login", "", "", `{"username":"admin","password":"wrong"}`, "", 2},
		{"GET", "/api/whoami", "", "", "", "Bearer nope", 2},
		{"GET", "/api/whoami", "", "", "", "Basic Z3Vlc3Q6Z3Vlc3Q=", 2},
		{"POST", "/api/app/:appName/disable", "app", "", "", "Basic Z3Vlc3Q6Z3Vlc3Q=", 2},
		{"GET", "/api/job/events/executions", "", "jobName=t1&isSuccess=true&startTime=2024-03-01T10:59:59Z&sort=jobName&order=desc&page=1&per_page=10", "", "", 0},
		{"GET", "/api/job/events/statusTraces", "", "sort=" + url.QueryEscape("job_name;DROP TABLE x") + "&per_page=5000", "", "", 0},
		{"GET", "/api/job/statistics/tasks/results/:period", "lastWeek", "", "", "", 0},
		{"GET", "/api/job/statistics/tasks/results", "", "since=last24hours", "", "", 0},
		{"GET", "/api/job/logs/:taskId", "t1@-@0@-@READY@-@a@-@u", "stream=stderr&offset=5&length=9223372036854775807", "", "", 0},
		{"GET", "/api/job/logs/:taskId", "t1@-@0@-@READY@-@a@-@u", "tail=-1&full=true", "", "", 0},
		{"GET", "/api/operate/sandbox", "", "appName=app", "", "", 0},
		{"GET", "/api/operate/sandbox", "", "appName=..", "", "", 0},
		{"GET", "/api/app/:appName", "../../etc", "", "", "", 0},
		{"GET", "/api/job/jobs/:jobName", "t1\x00", "", "", "", 0},
		{"POST", "/api/operate/reconcile/explicit", "", "", "", "", 1},
		{"GET", "/api/audit", "", "0", "0", "", 0},                                   // answered 503 while the fuzzed API had no audit log
		{"PUT", "/api/app/:appName/package", "0", "", "0", "", 0},                    // 503 while it hosted no packages
		{"GET", "/packages/:sha256/:token/:filename", "0\napp\napp", "0", "", "", 0}, // a download's plain-text 404
	} {
		f.Add(find(s.method, s.path), uint8(0), s.params, s.query, []byte(s.body), s.authz, s.auth)
	}
	f.Add(uint16(0), uint8(5), "", "", []byte(""), "", uint8(0)) // a method the route does not have
	f.Add(uint16(1), uint8(0), "", "%zz=1&a=%", []byte("{"), "Basic !!!", uint8(2))
}

// FuzzAPIRequest sends fuzzed requests to every route of the API (walked
// from the router), with fuzzed path parameters, query string, body,
// method and Authorization header, in-process. Properties: no panic and
// bounded time; never a 5xx (the registry, history and scheduler are all
// healthy here); every 4xx of /api/ is JSON of exactly {"message": "…"}.
func FuzzAPIRequest(f *testing.F) {
	db := openFuzzDB(f)
	routes := fuzzRoutes(fuzzAPI(f, db, api.Credentials{}))
	apiSeeds(f, routes)
	f.Fuzz(func(t *testing.T, routeIdx uint16, methodSel uint8, params, query string, body []byte, authz string, auth uint8) {
		creds := api.Credentials{}
		if auth%authModes != 0 {
			creds = fuzzAdmin
		}
		e := fuzzAPI(t, db, creds)
		route := routes[int(routeIdx)%len(routes)]
		method := route.Method
		if methodSel != 0 {
			method = fuzzMethods[int(methodSel)%len(fuzzMethods)]
		}
		req := httptest.NewRequest(method, "/", bytes.NewReader(body))
		req.URL = &url.URL{Path: fuzzPath(route.Path, params), RawQuery: query}
		if p, err := url.PathUnescape(req.URL.Path); err == nil {
			req.URL.RawPath, req.URL.Path = req.URL.Path, p
		}
		req.RequestURI = req.URL.RequestURI()
		req.Header.Set("Content-Type", "application/json")
		switch auth % authModes {
		case 1:
			req.SetBasicAuth(fuzzAdmin.AdminUser, fuzzAdmin.AdminPassword)
		case 2:
			req.Header.Set("Authorization", authz)
		}
		w := httptest.NewRecorder()
		fuzzing.Bounded(t, method+" "+route.Path, func() { e.ServeHTTP(w, req) })
		checkAPIReply(t, method, req.URL.String(), body, w)
	})
}

// checkAPIReply: no 5xx; a 4xx of /api/ is JSON of exactly {"message": "…"}.
func checkAPIReply(t *testing.T, method, target string, body []byte, w *httptest.ResponseRecorder) string {
	t.Helper()
	if w.Code >= 500 {
		t.Fatalf("%s %s with body %q: status %d: %s", method, target, body, w.Code, w.Body.String())
	}
	if w.Code < 400 || method == http.MethodHead {
		return ""
	}
	if !strings.HasPrefix(target, "/api/") {
		return "" // /packages/ and /artifacts/ are file downloads for agents: plain-text errors, as file servers answer
	}
	var m map[string]any
	if !strings.HasPrefix(w.Header().Get("Content-Type"), "application/json") || json.Unmarshal(w.Body.Bytes(), &m) != nil {
		t.Fatalf("%s %s with body %q: %d is not JSON: %s %q", method, target, body, w.Code, w.Header().Get("Content-Type"), w.Body.String())
	}
	msg, ok := m["message"].(string)
	if len(m) != 1 || !ok || msg == "" {
		t.Fatalf("%s %s with body %q: %d body %s, want exactly {\"message\": \"…\"}", method, target, body, w.Code, w.Body.String())
	}
	if strings.Contains(msg, "store: bad path") { // a name that reached the store unchecked
		t.Fatalf("%s %s with body %q: %d %q names the store's path, not the parameter", method, target, body, w.Code, msg)
	}
	return msg
}

// bodyRoute is a route whose body is a JSON object of known fields.
type bodyRoute struct {
	method, path string
	base         map[string]any // a valid body
	fields       []string
}

// jsonFields lists the JSON member names of a struct type's fields.
func jsonFields(v any) []string {
	var out []string
	rt := reflect.TypeOf(v)
	for i := range rt.NumField() {
		if name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ","); name != "" && name != "-" {
			out = append(out, name)
		}
	}
	return out
}

var bodyRoutes = []bodyRoute{
	{"POST", "/api/app", map[string]any{"appName": "a2", "appURL": "http://127.0.0.1:1/a.tgz", "bootstrapScript": "bin/start.sh"}, jsonFields(app.Config{})},
	{"PUT", "/api/app", map[string]any{"appName": "app"}, jsonFields(app.Config{})},
	{"POST", "/api/job/register", map[string]any{"jobName": "j2", "appName": "app", "cron": "0 * * * * ?"}, jsonFields(jobs.Config{})},
	{"PUT", "/api/job/update", map[string]any{"jobName": "t1"}, jsonFields(jobs.Config{})},
	{"POST", "/api/job/trigger", map[string]any{"jobName": "t1"}, []string{"jobName", "jobParameter", "idempotencyKey"}},
	{"POST", "/api/login", map[string]any{"username": "admin", "password": "s3cret"}, []string{"username", "password"}},
}

// fieldAliases: a bad value of the key field may be reported under these
// names too (the field it depends on).
var fieldAliases = map[string][]string{
	"jobType":             {"props."},                             // SCRIPT and HTTP jobs need their props
	"jobErrorHandlerType": {"props."},                             // WEBHOOK needs props.webhook.url
	"shardingTotalCount":  {"shardingItemParameters"},             // items must stay below the count
	"jobExecutionType":    {"cron is required"},                   // DAEMON jobs need a cron
	"jobName":             {"only TRANSIENT jobs", "is disabled"}, // trigger of a daemon or disabled job
}

// FuzzAPIBodyField sets one field of a valid body (any known field of the
// route's body type, found by reflection, or an unknown one) to any JSON
// value. When the body stays valid JSON and the answer is a 400, its
// message names the field (or the field the value depends on), so a client
// can tell what to fix.
func FuzzAPIBodyField(f *testing.F) {
	db := openFuzzDB(f)
	for i, r := range bodyRoutes {
		for j := range r.fields { // one hostile value per field, in turn
			v := []string{`"x y"`, `-1`, `{}`, `1e309`, `".."`}[j%5]
			f.Add(uint8(i), uint8(j), "", []byte(v))
		}
		f.Add(uint8(i), uint8(255), "bogusField", []byte(`1`))
	}
	for _, v := range []string{`"NaN"`, `"Infinity"`, `"-Inf"`, `"0x1p4"`, `1e20`} { // issue 57: 500s and an overflowed figure
		for i, r := range bodyRoutes {
			for j, field := range r.fields {
				if field == "cpuCount" || field == "memoryMB" || field == "shardingTotalCount" {
					f.Add(uint8(i), uint8(j), "", []byte(v))
				}
			}
		}
	}
	f.Add(uint8(2), uint8(0), "", []byte(`"register"`))
	f.Add(uint8(2), uint8(3), "", []byte(`"0 0 0 30 2 ? 2199"`))
	f.Add(uint8(2), uint8(6), "", []byte(`"0=a,0=b"`))
	f.Fuzz(func(t *testing.T, routeIdx, fieldIdx uint8, unknown string, value []byte) {
		r := bodyRoutes[int(routeIdx)%len(bodyRoutes)]
		field := unknownField(unknown)
		if int(fieldIdx) < len(r.fields)*8 {
			field = r.fields[int(fieldIdx)%len(r.fields)]
		}
		members := map[string]json.RawMessage{}
		for k, v := range r.base {
			members[k], _ = json.Marshal(v)
		}
		members[field] = value
		body, err := json.Marshal(members)
		if err != nil || !json.Valid(value) {
			return // not a JSON value: FuzzAPIRequest covers malformed bodies
		}
		e := fuzzAPI(t, db, api.Credentials{})
		req := httptest.NewRequest(r.method, r.path, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		fuzzing.Bounded(t, r.method+" "+r.path, func() { e.ServeHTTP(w, req) })
		msg := checkAPIReply(t, r.method, r.path, body, w)
		if w.Code != http.StatusBadRequest || strings.Contains(msg, field) {
			return
		}
		for _, alias := range fieldAliases[field] {
			if strings.Contains(msg, alias) {
				return
			}
		}
		t.Fatalf("%s %s %s: 400 %q does not name the field %q", r.method, r.path, body, msg, field)
	})
}

// unknownField makes a plain field name from fuzz input.
func unknownField(s string) string {
	s = strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' {
			return r
		}
		return -1
	}, s)
	if s == "" {
		return "bogusField"
	}
	return s
}
