package api_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/ejcloud/elasticjob/api"
	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/store/memory"
)

// newDefEnv is newEnv with the server's definitions side.
func newDefEnv(t *testing.T) (*env, *api.Server) {
	t.Helper()
	clk := clock.NewFake(t0)
	reg := registry.New(memory.New())
	ops := &fakeOps{}
	o := api.Options{Registry: reg, Clock: clk, Log: slog.New(slog.DiscardHandler), Live: api.Live{Ops: ops, Engine: ops}}
	o.Auth = api.NewAuth(api.Credentials{}, clk, reg.Tenancy())
	h, srv := api.NewServer(o)
	return &env{t: t, h: h, reg: reg, clock: clk, ops: ops}, srv
}

const defJob = `{"jobExecutionType":"TRANSIENT","jobType":"HTTP","cron":"0/30 * * * * ?","shardingTotalCount":1,
 "cpuCount":0.1,"memoryMB":32,"props":{"http.url":"http://127.0.0.1:1/x","http.method":"GET"}}`

func TestDefinitionRefusedWithTheAPIsMessage(t *testing.T) {
	e, srv := newDefEnv(t)
	bad := strings.Replace(defJob, "0/30 * * * * ?", "0 61 * * * ?", 1)
	_, err := srv.CheckDefinition(context.Background(), api.DefJob, "default", "hello", []byte(bad))
	if err == nil {
		t.Fatal("a bad cron was accepted")
	}
	code, msg := api.ErrorMessage(err)
	r := e.request(http.MethodPost, "/api/job/register", `{"jobName":"hello",`+bad[1:])
	if code != r.Code || msg != r.message(t) {
		t.Errorf("webhook's refusal %d %q, the API's %d %q", code, msg, r.Code, r.message(t))
	}
	if _, err := srv.CheckDefinition(context.Background(), api.DefJob, "default", "hello", []byte(`{"jobName":"other",`+defJob[1:])); err == nil ||
		!strings.Contains(err.Error(), `spec.jobName must be the object's name "hello"`) {
		t.Errorf("another name in the spec: %v", err)
	}
	if _, err := srv.CheckDefinition(context.Background(), api.DefJob, "default", "hello", []byte(`{"nope":1}`)); err == nil {
		t.Error("an unknown field was accepted")
	}
}

func TestOwnedDefinitionIsChangedOnlyThroughItsObject(t *testing.T) {
	e, srv := newDefEnv(t)
	ctx := context.Background()
	owner := registry.Owner{Kind: "CloudJob", Namespace: "default", Name: "hello", UID: "u1"}
	if _, err := srv.ApplyDefinition(ctx, api.DefJob, "default", "hello", []byte(defJob), owner); err != nil {
		t.Fatal(err)
	}
	e.must(http.StatusOK, http.MethodGet, "/api/job/jobs/hello", "")
	r := e.request(http.MethodPut, "/api/job/update", `{"jobName":"hello","shardingTotalCount":2}`)
	e.wantError(r, http.StatusConflict, "owned by the Kubernetes object CloudJob default/hello")
	e.wantError(e.request(http.MethodDelete, "/api/job/hello/deregister", ""), http.StatusConflict, "CloudJob default/hello")
	// The object changes it (an update: the whole spec, absent fields default).
	if _, err := srv.ApplyDefinition(ctx, api.DefJob, "default", "hello", []byte(strings.Replace(defJob, `"shardingTotalCount":1`, `"shardingTotalCount":3`, 1)), owner); err != nil {
		t.Fatal(err)
	}
	got := decode[map[string]any](t, e.must(http.StatusOK, http.MethodGet, "/api/job/jobs/hello", ""))
	if got["shardingTotalCount"] != float64(3) {
		t.Errorf("after the object's update: %v", got["shardingTotalCount"])
	}
	if err := srv.DeleteDefinition(ctx, api.DefJob, "default", "hello"); err != nil {
		t.Fatal(err)
	}
	e.wantError(e.request(http.MethodGet, "/api/job/jobs/hello", ""), http.StatusNotFound)
	if err := srv.DeleteDefinition(ctx, api.DefJob, "default", "hello"); err != nil {
		t.Errorf("deleting a job already gone: %v", err)
	}
	// Its name is free for the API again.
	e.must(http.StatusOK, http.MethodPost, "/api/job/register", `{"jobName":"hello",`+defJob[1:])
	e.must(http.StatusOK, http.MethodPut, "/api/job/update", `{"jobName":"hello","shardingTotalCount":2}`)
}

func TestDefinitionStatusOfAJob(t *testing.T) {
	_, srv := newDefEnv(t)
	ctx := context.Background()
	if _, err := srv.ApplyDefinition(ctx, api.DefJob, "default", "hello", []byte(defJob), registry.Owner{Kind: "CloudJob", Namespace: "default", Name: "hello"}); err != nil {
		t.Fatal(err)
	}
	st, err := srv.StatusOf(ctx, api.DefJob, "default", "hello")
	if err != nil {
		t.Fatal(err)
	}
	if st.NextFireTime == nil || !st.NextFireTime.Equal(t0.Add(30*1e9)) {
		t.Errorf("next fire %v, want %v", st.NextFireTime, t0.Add(30*1e9))
	}
	if _, err := srv.StatusOf(ctx, api.DefJob, "default", "nope"); !errors.Is(err, registry.ErrJobNotFound) {
		t.Errorf("status of a missing job: %v", err)
	}
}

func TestDefinitionInANamespaceTheSchedulerDoesNotHave(t *testing.T) {
	_, srv := newDefEnv(t)
	_, err := srv.CheckDefinition(context.Background(), api.DefJob, "pay", "hello", []byte(defJob))
	if code, msg := api.ErrorMessage(err); code != http.StatusNotFound || !strings.Contains(msg, "ejctl ns create pay") {
		t.Errorf("%d %q", code, msg)
	}
}

func TestOwnedAppAndWorkflowAreChangedOnlyThroughTheirObjects(t *testing.T) {
	e, srv := newDefEnv(t)
	ctx := context.Background()
	if _, err := srv.ApplyDefinition(ctx, api.DefApp, "default", "pay", []byte(`{"appURL":"http://127.0.0.1:1/a.tgz","bootstrapScript":"bin/run.sh","cpuCount":0.1,"memoryMB":64}`),
		registry.Owner{Kind: "CloudApp", Namespace: "default", Name: "pay"}); err != nil {
		t.Fatal(err)
	}
	e.wantError(e.request(http.MethodPut, "/api/app", `{"appName":"pay","memoryMB":128}`), http.StatusConflict, "CloudApp default/pay")
	e.wantError(e.request(http.MethodDelete, "/api/app/pay", ""), http.StatusConflict, "CloudApp default/pay")
	// An app of the API's with a job owned by an object cannot be deleted with it.
	e.must(http.StatusOK, http.MethodPost, "/api/app", `{"appName":"free","appURL":"http://127.0.0.1:1/a.tgz","bootstrapScript":"bin/run.sh","cpuCount":0.1,"memoryMB":64}`)
	if _, err := srv.ApplyDefinition(ctx, api.DefJob, "default", "nightly", []byte(`{"appName":"free","cron":"0 0 2 * * ?","cpuCount":0.1,"memoryMB":32}`),
		registry.Owner{Kind: "CloudJob", Namespace: "default", Name: "nightly"}); err != nil {
		t.Fatal(err)
	}
	e.wantError(e.request(http.MethodDelete, "/api/app/free", ""), http.StatusConflict, "CloudJob default/nightly")
	if _, err := srv.ApplyDefinition(ctx, api.DefWorkflow, "default", "flow", []byte(`{"nodes":[{"id":"a","job":"nightly"}]}`),
		registry.Owner{Kind: "CloudWorkflow", Namespace: "default", Name: "flow"}); err != nil {
		t.Fatal(err)
	}
	e.wantError(e.request(http.MethodPut, "/api/workflow", `{"name":"flow","nodes":[{"id":"b","job":"nightly"}]}`), http.StatusConflict, "CloudWorkflow default/flow")
	e.wantError(e.request(http.MethodDelete, "/api/workflow/flow", ""), http.StatusConflict, "CloudWorkflow default/flow")
	// Disabling is operating, not changing the definition: allowed.
	e.must(http.StatusNoContent, http.MethodPost, "/api/job/nightly/disable", "")
}

// countingTemplates counts the podTemplate checks (the API server's dry runs).
type countingTemplates struct{ n int }

func (c *countingTemplates) Check(context.Context, string, app.Config, *jobs.Config) error {
	c.n++
	return nil
}

// An object applied again as it is registered (a new leader re-reading every object) is
// neither checked against the cluster again nor written.
func TestReappliedDefinitionIsNotCheckedAgain(t *testing.T) {
	clk := clock.NewFake(t0)
	reg := registry.New(memory.New())
	tpl := &countingTemplates{}
	o := api.Options{Registry: reg, Clock: clk, Log: slog.New(slog.DiscardHandler), Apps: api.AppOptions{PodTemplates: tpl}}
	o.Auth = api.NewAuth(api.Credentials{}, clk, reg.Tenancy())
	_, srv := api.NewServer(o)
	ctx := context.Background()
	owner := registry.Owner{Kind: "CloudJob", Namespace: "default", Name: "hello", UID: "u"}
	for range 3 {
		if _, err := srv.ApplyDefinition(ctx, api.DefJob, "default", "hello", []byte(defJob), owner); err != nil {
			t.Fatal(err)
		}
	}
	if tpl.n != 1 {
		t.Errorf("%d dry runs for one definition applied 3 times, want 1", tpl.n)
	}
	if _, err := srv.ApplyDefinition(ctx, api.DefJob, "default", "hello", []byte(strings.Replace(defJob, `"memoryMB":32`, `"memoryMB":64`, 1)), owner); err != nil {
		t.Fatal(err)
	}
	if tpl.n != 2 {
		t.Errorf("a changed spec was not checked: %d dry runs", tpl.n)
	}
	wf := []byte(`{"nodes":[{"id":"a","job":"hello"}]}`)
	wfOwner := registry.Owner{Kind: "CloudWorkflow", Namespace: "default", Name: "flow"}
	for range 2 {
		if _, err := srv.ApplyDefinition(ctx, api.DefWorkflow, "default", "flow", wf, wfOwner); err != nil {
			t.Fatal(err)
		}
	}
}
