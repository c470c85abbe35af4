package ejctl

import (
	"bytes"
	"cmp"
	"context"
	"log/slog"
	"net/http/httptest"
	"path"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/api"
	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/store"
	"github.com/ejcloud/elasticjob/store/memory"
)

// testOps is the scheduler and engine side the real API asks: task logs from a map
// (task id → stdout) and fixed agents.
type testOps struct {
	mu     sync.Mutex
	logs   map[string]string
	agents []engine.Agent
}

func (o *testOps) Wake()                                          {}
func (o *testOps) Reconcile(context.Context, bool) error          { return nil }
func (o *testOps) Cluster(context.Context) (any, error)           { return map[string]any{}, nil }
func (o *testOps) Agents(context.Context) ([]engine.Agent, error) { return o.agents, nil }
func (o *testOps) KillRun(context.Context, string, string) (api.KilledRun, error) {
	return api.KilledRun{}, nil
}
func (o *testOps) Sandboxes(context.Context, string) ([]engine.Sandbox, error) {
	return nil, nil
}

// TaskFiles lists the files logs holds under "taskID/…" (a task's
// files beside its log, which is logs[taskID]).
func (o *testOps) TaskFiles(_ context.Context, taskID, dir string) ([]engine.TaskFile, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []engine.TaskFile
	for k, data := range o.logs {
		if rel, ok := strings.CutPrefix(k, taskID+"/"); ok && path.Dir(rel) == cmp.Or(dir, ".") {
			out = append(out, engine.TaskFile{Path: rel, Size: int64(len(data)), Mode: "-rw-------", MTime: time.Unix(0, 0)})
		}
	}
	if out == nil {
		return nil, engine.ErrNotFound
	}
	return out, nil
}

func (o *testOps) TaskLog(_ context.Context, taskID, stream string, offset, length int64) (engine.LogChunk, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	key := taskID
	if stream != "stdout" && stream != "stderr" {
		key += "/" + stream // a task's file
	}
	data, ok := o.logs[key]
	if !ok {
		return engine.LogChunk{}, engine.ErrNotFound
	}
	size := int64(len(data))
	if offset < 0 {
		offset = max(size+offset, 0)
	}
	offset = min(offset, size)
	end := min(offset+length, size)
	return engine.LogChunk{Offset: offset, Size: size, Data: data[offset:end]}, nil
}

// testServer is the real REST API over an in-memory registry.
type testServer struct {
	url string
	reg *registry.Registry
	kv  store.KV // the store under reg (for raw writes)
	ops *testOps
}

func newTestServer(t *testing.T, creds api.Credentials, opts ...func(*api.Options)) *testServer {
	t.Helper()
	clk := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	kv := memory.New()
	reg := registry.New(kv, registry.Options{Damage: registry.NewDamage(nil)})
	ops := &testOps{logs: map[string]string{}}
	o := api.Options{Registry: reg, Clock: clk, Log: slog.New(slog.DiscardHandler), Live: api.Live{Ops: ops, Engine: ops}, Auth: api.NewAuth(creds, clk, reg.Tenancy())}
	for _, f := range opts {
		f(&o)
	}
	h := api.New(o)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &testServer{url: srv.URL, reg: reg, kv: kv, ops: ops}
}

// ejctl runs the program against the server; tty says whether stdin is a
// terminal.
type run struct {
	t     *testing.T
	env   map[string]string
	tty   bool
	now   time.Time
	stdin string
}

func (s *testServer) cli(t *testing.T) *run {
	return &run{t: t, env: map[string]string{"EJCTL_ADDR": s.url}}
}

func (r *run) do(args ...string) (string, string, int) {
	r.t.Helper()
	var out, errb bytes.Buffer
	env := Env{Stdin: strings.NewReader(r.stdin), Stdout: &out, Stderr: &errb, Getenv: envOf(r.env),
		StdinIsTTY: func() bool { return r.tty }}
	if !r.now.IsZero() {
		env.Now = func() time.Time { return r.now }
	}
	code := Run(context.Background(), args, env)
	return out.String(), errb.String(), code
}

// must runs and fails the test unless the exit code is want.
func (r *run) must(want int, args ...string) (string, string) {
	r.t.Helper()
	out, errs, code := r.do(args...)
	if code != want {
		r.t.Fatalf("ejctl %s: exit %d, want %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, want, out, errs)
	}
	return out, errs
}

func has(t *testing.T, what, got string, subs ...string) {
	t.Helper()
	for _, s := range subs {
		if !strings.Contains(got, s) {
			t.Errorf("%s: %q missing in:\n%s", what, s, got)
		}
	}
}
