package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/api"
	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/packages"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/store"
	"github.com/ejcloud/elasticjob/store/memory"
	"github.com/ejcloud/elasticjob/task"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// t0 is the fake clock's start: every timestamp in the goldens derives from it.
var t0 = time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)

// logCall is one recorded Operations.TaskLog call.
type logCall struct {
	TaskID, Stream string
	Offset, Length int64
}

// fakeOps records what the API asks of the scheduler.
type fakeOps struct {
	mu         sync.Mutex
	wakes      int
	reconciles []bool
	logCalls   []logCall
	reconErr   error
	logErr     error
	kills      []string
	killErr    error
	logFile    string // when set, TaskLog serves ranges of it (else "hello world" for any range)
	sandboxes  []engine.Sandbox
	agents     []engine.Agent
}

func (f *fakeOps) KillRun(_ context.Context, job, by string) (api.KilledRun, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.kills = append(f.kills, job+" by "+by)
	if f.killErr != nil {
		return api.KilledRun{}, f.killErr
	}
	return api.KilledRun{Tasks: []string{job + "@-@0@-@READY@-@a@-@1"}, Dropped: 1}, nil
}

func (f *fakeOps) Wake() { f.mu.Lock(); f.wakes++; f.mu.Unlock() }

func (f *fakeOps) Reconcile(_ context.Context, explicit bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reconciles = append(f.reconciles, explicit)
	return f.reconErr
}

func (f *fakeOps) Sandboxes(context.Context, string) ([]engine.Sandbox, error) {
	return f.sandboxes, nil
}

func (f *fakeOps) TaskLog(_ context.Context, taskID, stream string, offset, length int64) (engine.LogChunk, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.logCalls = append(f.logCalls, logCall{taskID, stream, offset, length})
	if f.logErr != nil {
		return engine.LogChunk{}, f.logErr
	}
	if f.logFile == "" {
		return engine.LogChunk{Offset: max(offset, 0), Size: 11, Data: "hello world"}, nil
	}
	size := int64(len(f.logFile))
	if offset < 0 {
		offset = max(size+offset, 0)
	}
	offset = min(offset, size)
	end := min(offset+length, size)
	return engine.LogChunk{Offset: offset, Size: size, Data: f.logFile[offset:end]}, nil
}

func (f *fakeOps) Cluster(context.Context) (any, error) {
	return map[string]any{"leader": "127.0.0.1:8899"}, nil
}

func (f *fakeOps) Agents(context.Context) ([]engine.Agent, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.agents, nil
}

func (f *fakeOps) Wakes() int { f.mu.Lock(); defer f.mu.Unlock(); return f.wakes }

var (
	_ api.Operations = (*fakeOps)(nil)
	_ api.Engine     = (*fakeOps)(nil) // the same fake serves the engine's reads
)

// env is one API under test with its collaborators.
type env struct {
	t     *testing.T
	h     http.Handler
	reg   *registry.Registry
	kv    store.KV // the store under reg (the test's own, for raw writes)
	clock *clock.Fake
	ops   *fakeOps
	// user/pass are sent as Basic auth when user is set.
	user, pass string
}

type envOpt func(*api.Options, *api.Credentials)

func withCreds(c api.Credentials) envOpt {
	return func(_ *api.Options, cr *api.Credentials) { *cr = c }
}

func withoutOps() envOpt {
	return func(o *api.Options, _ *api.Credentials) { o.Live.Ops, o.Live.Engine = nil, nil }
}

func withMaxBody(n int64) envOpt {
	return func(o *api.Options, _ *api.Credentials) { o.Limits.MaxBodyBytes = n }
}

// withPackages hosts packages in a temp dir (PUT /api/app/{appName}/package
// and GET/HEAD /packages/…).
func withPackages(t *testing.T) envOpt {
	return func(o *api.Options, _ *api.Credentials) {
		host, err := packages.New(packages.Options{Dir: filepath.Join(t.TempDir(), "packages"),
			Key: []byte("0123456789abcdef0123456789abcdef"), Base: "http://127.0.0.1:8899"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(host.Close)
		o.Apps.Packages = host
	}
}

func newEnv(t *testing.T, opts ...envOpt) *env {
	t.Helper()
	clk := clock.NewFake(t0)
	kv := memory.New()
	reg := registry.New(kv, registry.Options{Damage: registry.NewDamage(nil)}) // tracked: damaged entries are listed
	ops := &fakeOps{}
	o := api.Options{Registry: reg, Clock: clk, Log: slog.New(slog.DiscardHandler), Live: api.Live{Ops: ops, Engine: ops}}
	var creds api.Credentials
	for _, fn := range opts {
		fn(&o, &creds)
	}
	o.Auth = api.NewAuth(creds, clk, o.Registry.Tenancy())
	return &env{t: t, h: api.New(o), reg: reg, kv: kv, clock: clk, ops: ops}
}

// response is a recorded reply.
type response struct {
	Code   int
	Header http.Header
	Body   []byte
}

func (r response) String() string { return string(r.Body) }

// message decodes the JSON error body {"message": …}, failing the test when
// the body is not exactly that shape.
func (r response) message(t *testing.T) string {
	t.Helper()
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("error Content-Type = %q, want application/json", ct)
	}
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(r.Body))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("error body %q is not a JSON object: %v", r.Body, err)
	}
	msg, ok := m["message"].(string)
	if len(m) != 1 || !ok || msg == "" {
		t.Fatalf("error body %s: want exactly {\"message\": \"...\"}", r.Body)
	}
	return msg
}

// request sends one raw request. Body is sent byte for byte with the
// curl commands' Content-type header.
func (e *env) request(method, path, body string, hdr ...string) response {
	e.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, path, rd)
	if body != "" {
		req.Header.Set("Content-type", "application/json")
	}
	if e.user != "" {
		req.SetBasicAuth(e.user, e.pass)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	w := httptest.NewRecorder()
	e.h.ServeHTTP(w, req)
	// Every response an api test receives must be as the OpenAPI
	// document describes it (contract_test.go).
	mustContract(e.t).check(e.t, req, w.Code, w.Header(), w.Body.Bytes())
	return response{Code: w.Code, Header: w.Header(), Body: w.Body.Bytes()}
}

// must sends a request and fails unless it answers want.
func (e *env) must(want int, method, path, body string) response {
	e.t.Helper()
	r := e.request(method, path, body)
	if r.Code != want {
		e.t.Fatalf("%s %s: status %d, want %d; body %s", method, path, r.Code, want, r.Body)
	}
	return r
}

// wantError asserts an error reply: the code and every substring of the message.
func (e *env) wantError(r response, code int, subs ...string) {
	e.t.Helper()
	if r.Code != code {
		e.t.Fatalf("status %d, want %d; body %s", r.Code, code, r.Body)
	}
	msg := r.message(e.t)
	for _, s := range subs {
		if !strings.Contains(msg, s) {
			e.t.Errorf("message %q does not contain %q", msg, s)
		}
	}
}

// decode unmarshals a reply's body.
func decode[T any](t *testing.T, r response) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(r.Body, &v); err != nil {
		t.Fatalf("decode %s: %v", r.Body, err)
	}
	return v
}

// golden compares a JSON body (indented) with testdata/name.golden.
func golden(t *testing.T, name string, body []byte) {
	t.Helper()
	var buf bytes.Buffer
	if err := json.Indent(&buf, body, "", "  "); err != nil {
		t.Fatalf("golden %s: body %q is not JSON: %v", name, body, err)
	}
	buf.WriteByte('\n')
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		t.Fatalf("golden %s missing; run go test ./api/ -run %s -update", path, t.Name())
	}
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Errorf("%s differs (run with -update if intended)\n--- got\n%s--- want\n%s", path, buf.Bytes(), want)
	}
}

// running records taskID as its shard's running task: the API serves a
// task's log and files only for a task the scheduler launched.
func (e *env) running(taskID string) {
	e.t.Helper()
	tid, err := jobs.ParseTaskID(taskID)
	if err != nil {
		e.t.Fatal(err)
	}
	if err := e.reg.Change().Launch(tid.JobName, tid.Item, task.Entry{TaskID: taskID, AgentID: tid.AgentID, State: task.Running}).Commit(context.Background()); err != nil {
		e.t.Fatal(err)
	}
}
