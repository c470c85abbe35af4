package ejctl

import (
	"log/slog"
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

// newScheduler serves the real API over an in-memory registry (no auth, no
// scheduler behind it) and returns the environment ejctl runs with.
func newScheduler(t *testing.T) (map[string]string, *registry.Registry) {
	t.Helper()
	clk := clock.NewFake(time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC))
	reg := registry.New(memory.New())
	h := api.New(api.Options{Registry: reg, Clock: clk, Log: slog.New(slog.DiscardHandler), Auth: api.NewAuth(api.Credentials{}, clk, reg.Tenancy())})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return map[string]string{"EJCTL_ADDR": srv.URL}, reg
}

func seedApp(t *testing.T, reg *registry.Registry, name string, jobNames ...string) {
	t.Helper()
	a := app.Default()
	a.AppName, a.AppURL, a.BootstrapScript = name, "http://example.com/"+name+".tgz", "bin/start.sh"
	if err := reg.Config().AddApp(t.Context(), a); err != nil {
		t.Fatal(err)
	}
	for _, j := range jobNames {
		c := jobs.Default()
		c.JobName, c.AppName, c.Cron, c.CPUCount, c.MemoryMB = j, name, "0 0 2 * * ?", 0.1, 16
		if err := reg.Config().AddJob(t.Context(), c); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRmWhatAWorkflowRuns: `job rm` and `app rm` of what a workflow runs
// show the scheduler's refusal naming the workflow and how to force it;
// --force deletes and warns which workflows now fail.
func TestRmWhatAWorkflowRuns(t *testing.T) {
	env, reg := newScheduler(t)
	seedApp(t, reg, "app", "load", "spare")
	wf := workflow.Default()
	wf.Name, wf.Nodes = "etl", []workflow.Node{{ID: "extract", Job: "load"}}
	if err := reg.Flows().AddWorkflow(t.Context(), wf); err != nil {
		t.Fatal(err)
	}
	_, errs, code := runWith(t, env, "job", "rm", "--yes", "load")
	if code != ExitFailure || !strings.Contains(errs, "409 Conflict: job 'load' is used by workflow etl (node extract: job load)") ||
		!strings.Contains(errs, "repeat with ejctl job rm --force") {
		t.Fatalf("job rm: exit %d, stderr %q", code, errs)
	}
	if _, errs, code = runWith(t, env, "app", "rm", "--yes", "app"); code != ExitFailure || !strings.Contains(errs, "workflow etl (node extract: job load)") ||
		!strings.Contains(errs, "ejctl app rm --force") {
		t.Fatalf("app rm: exit %d, stderr %q", code, errs)
	}
	if _, err := reg.Config().Job(t.Context(), "load"); err != nil {
		t.Fatalf("a refused rm deleted the job: %v", err)
	}
	out, errs, code := runWith(t, env, "job", "rm", "--yes", "spare") // no workflow runs it
	if code != 0 || out != "deleted job spare\n" || errs != "" {
		t.Fatalf("job rm spare: exit %d, %q %q", code, out, errs)
	}
	out, errs, code = runWith(t, env, "job", "rm", "--yes", "--force", "load")
	if code != 0 || out != "deleted job load\n" || !strings.Contains(errs, "warning: Job 'load' was deleted although workflow etl (node extract: job load) ran it") {
		t.Fatalf("job rm --force: exit %d, %q %q", code, out, errs)
	}
}
