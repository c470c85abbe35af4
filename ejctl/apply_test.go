package ejctl

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/api"
	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/store/memory"
	"github.com/ejcloud/elasticjob/workflow"
)

// TestApplyChecksAppsBeforeChangingAnything: the trial's apply printed
// "2 created … 1 failed" when one job was created, the other naming an app
// that did not exist. The plan checks every job's app against the files
// and the scheduler first: nothing changes and the message says why, for
// apply and for --dry-run alike.
func TestApplyChecksAppsBeforeChangingAnything(t *testing.T) {
	env, reg := newScheduler(t)
	seedApp(t, reg, "demo")
	dir := t.TempDir()
	write(t, dir, "jobs.yaml", `kind: Job
jobName: good
appName: demo
cron: "0 0 2 * * ?"
cpuCount: 0.1
---
kind: Job
jobName: orphan
appName: missing
cron: "0 0 2 * * ?"
cpuCount: 0.1
`)
	for _, args := range [][]string{{"apply", "-f", dir}, {"apply", "-f", dir, "--dry-run"}} {
		out, errs, code := runWith(t, env, args...)
		if code != ExitFailure || out != "" || !strings.Contains(errs, "nothing was changed: job orphan ("+dir+"/jobs.yaml, document 2) uses app missing, which is neither on the scheduler nor in the files") {
			t.Fatalf("%v: exit %d, stdout %q, stderr %q", args, code, out, errs)
		}
	}
	if js, _ := reg.Config().Jobs(t.Context()); len(js) != 0 {
		t.Fatalf("a refused plan registered %d jobs", len(js))
	}
	// Declaring the app in the files makes the plan whole.
	write(t, dir, "apps.yaml", "kind: App\nappName: missing\nappURL: http://example.com/m.tgz\nbootstrapScript: bin/start.sh\n")
	out, errs, code := runWith(t, env, "apply", "-f", dir)
	if code != 0 || !strings.Contains(out, "Applied: 3 created, 0 updated, 0 unchanged, 0 deleted, 0 failed.") {
		t.Fatalf("apply with the app declared: exit %d, %q %q", code, out, errs)
	}
}

// TestApplySummaryCountsWhatWasDone: a change the scheduler refuses while
// applying (here --prune deleting a job a workflow runs) is counted as
// failed, not as done.
func TestApplySummaryCountsWhatWasDone(t *testing.T) {
	env, reg := newScheduler(t)
	seedApp(t, reg, "demo", "used")
	wf := workflow.Default()
	wf.Name, wf.Nodes = "etl", []workflow.Node{{ID: "n", Job: "used"}}
	if err := reg.Flows().AddWorkflow(t.Context(), wf); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write(t, dir, "all.yaml", `kind: App
appName: demo
appURL: http://example.com/demo.tgz
bootstrapScript: bin/start.sh
---
kind: Job
jobName: fresh
appName: demo
cron: "0 0 2 * * ?"
cpuCount: 0.1
`)
	out, errs, code := runWith(t, env, "apply", "-f", dir, "--prune", "--yes")
	if code != ExitFailure || !strings.Contains(out, "Applied: 1 created, 0 updated, 1 unchanged, 0 deleted, 1 failed.") ||
		!strings.Contains(errs, "failed: delete job used: ") || !strings.Contains(errs, "workflow etl") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errs)
	}
}

func TestPlanChecksAppURLs(t *testing.T) {
	bare := app.Default()
	bare.AppName, bare.BootstrapScript = "bare", "bin/start.sh" // no appURL: to be published
	j := jobs.Default()
	j.JobName, j.AppName = "runs_it", "bare"
	script := j
	script.JobName, script.JobType, script.Props = "script", jobs.TypeScript, map[string]string{"script.command.line": "true"}
	m := Manifest{Apps: []app.Config{bare}, Jobs: []jobs.Config{j, script}}
	_, err := MakePlan(m, current{apps: map[string]app.Config{}, jobs: map[string]jobs.Config{}}, false)
	if err == nil || !strings.Contains(err.Error(), "job runs_it runs the package of app bare, which has no appURL") || strings.Contains(err.Error(), "job script") {
		t.Fatalf("a new app without appURL: %v", err)
	}
	published := bare
	published.AppURL = "http://scheduler/packages/abc/t/bare.tar.gz"
	if _, err := MakePlan(m, current{apps: map[string]app.Config{"bare": published}, jobs: map[string]jobs.Config{}}, false); err != nil {
		t.Fatalf("an app published earlier keeps its appURL: %v", err)
	}
}

const threeJobs = `kind: Job
jobName: a
appName: demo
cron: "0 0 2 * * ?"
cpuCount: 0.1
---
kind: Job
jobName: b
appName: demo
cron: "0 0 2 * * ?"
cpuCount: 0.1
---
kind: Job
jobName: c
appName: demo
cron: "0 0 2 * * ?"
cpuCount: 0.1
secrets: [{name: db-pass, env: DB_PASS}]
`

// TestApplyIsAllOrNothing: a job naming a secret the scheduler cannot give
// it fails the dry run (the scheduler checks every change as it would
// write it), and apply then changes nothing, rather than creating two of
// the three jobs.
func TestApplyIsAllOrNothing(t *testing.T) {
	env, reg := newScheduler(t)
	seedApp(t, reg, "demo")
	dir := t.TempDir()
	write(t, dir, "jobs.yaml", threeJobs)
	for _, args := range [][]string{{"apply", "-f", dir, "--dry-run"}, {"apply", "-f", dir}} {
		_, errs, code := runWith(t, env, args...)
		if code != ExitFailure || !strings.Contains(errs, "nothing was changed: the scheduler refuses 1 change(s): job c: ") || !strings.Contains(errs, "secrets") {
			t.Fatalf("%v: exit %d, stderr %q", args, code, errs)
		}
	}
	if js, _ := reg.Config().Jobs(t.Context()); len(js) != 0 {
		t.Fatalf("a refused apply registered %d jobs", len(js))
	}
}

// TestApplyUndoesAPartialApply: a change the scheduler refuses only when
// it is made (here job c's registration, refused after its dry run
// passed) undoes the changes made before it: jobs a and b are deleted
// again, and the message says nothing was changed.
func TestApplyUndoesAPartialApply(t *testing.T) {
	clk := clock.NewFake(time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC))
	reg := registry.New(memory.New())
	h := api.New(api.Options{Registry: reg, Clock: clk, Log: slog.New(slog.DiscardHandler), Auth: api.NewAuth(api.Credentials{}, clk, reg.Tenancy())})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.URL.Path == "/api/job/register" && r.URL.Query().Get("dryRun") == "" && strings.Contains(string(body), `"jobName":"c"`) {
			http.Error(w, `{"message":"job 'c' was registered meanwhile"}`, http.StatusConflict)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	seedApp(t, reg, "demo")
	dir := t.TempDir()
	write(t, dir, "jobs.yaml", strings.Replace(threeJobs, "secrets: [{name: db-pass, env: DB_PASS}]\n", "", 1))
	_, errs, code := runWith(t, map[string]string{"EJCTL_ADDR": srv.URL}, "apply", "-f", dir, "--parallel", "1")
	if code != ExitFailure || !strings.Contains(errs, "apply: nothing was changed (the changes made were undone): create job c: ") {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	if js, _ := reg.Config().Jobs(t.Context()); len(js) != 0 {
		t.Fatalf("the undone apply left %d jobs", len(js))
	}
}
