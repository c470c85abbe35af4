package scheduler

import (
	"strings"
	"testing"

	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/namespace"
)

// An HTTP job that names no app runs under the shared HTTP executor and is
// charged only its small resources: 3 × 0.5 CPU + 0.1 fits 1.6 CPUs.
func TestHTTPJobWithoutAppChargesOnlyTheSmallExecutor(t *testing.T) {
	r := newRig(t)
	r.addJob(func(j *jobs.Config) {
		j.AppName, j.JobType, j.Props = "", jobs.TypeHTTP, map[string]string{"http.url": "http://127.0.0.1:1/run"}
	})
	r.trigger("job")
	r.offer("o1", 1.6, 64*3+app.HTTPOnlyMemoryMB)
	r.sched.launcher.round(r.ctx)
	if len(r.drv.accepts) != 1 || len(r.drv.accepts[0].launches) != 3 {
		t.Fatalf("accepts = %+v", r.drv.accepts)
	}
	for _, l := range r.drv.accepts[0].launches {
		if l.Executor.ID != app.HTTPOnlyName+"@-@agent-1" || l.Executor.CPUs != app.HTTPOnlyCPUs || l.Executor.MemMB != app.HTTPOnlyMemoryMB {
			t.Fatalf("executor %+v", l.Executor)
		}
		d, err := l.Task, l.Task.Check()
		if err != nil || d.App.AppName != app.HTTPOnlyName || d.App.AppURL != "" || d.Job.AppName != "" {
			t.Fatalf("task data %+v: %v", d, err)
		}
	}
}

// Each namespace's HTTP jobs that name no app run in an executor of their
// own namespace, never one shared with another team: its sandbox, user
// and caps are that namespace's, so another team's responses filling a
// sandbox stop only that team's executor.
func TestHTTPJobsWithoutAppRunInTheirNamespacesExecutor(t *testing.T) {
	r := newRig(t)
	for _, ns := range []string{"pay", "search"} {
		if _, err := r.reg.Tenancy().PutNamespace(r.ctx, namespace.Record{Name: ns}); err != nil {
			t.Fatal(err)
		}
		j := jobs.Default()
		j.JobName, j.JobType, j.CPUCount, j.MemoryMB = "ping", jobs.TypeHTTP, 0.1, 16
		j.Props = map[string]string{"http.url": "http://127.0.0.1:1/" + ns}
		if err := r.reg.In(ns).Config().AddJob(r.ctx, j); err != nil {
			t.Fatal(err)
		}
	}
	r.reload()
	r.trigger(namespace.Key("pay", "ping"))
	r.trigger(namespace.Key("search", "ping"))
	r.offer("o1", 4, 1024)
	r.sched.launcher.round(r.ctx)
	got := map[string]string{}
	for _, a := range r.drv.accepts {
		for _, l := range a.launches {
			job, _, _ := strings.Cut(l.TaskID, "@-@")
			got[job] = l.Executor.ID
		}
	}
	want := map[string]string{"pay~ping": "pay~elasticjob-http@-@agent-1", "search~ping": "search~elasticjob-http@-@agent-1"}
	if len(got) != len(want) || got["pay~ping"] != want["pay~ping"] || got["search~ping"] != want["search~ping"] {
		t.Fatalf("executors %v, want %v", got, want)
	}
}

// A non-HTTP job without an app (never accepted by validation, but written
// by some other tool) is not runnable.
func TestJobWithoutAppMustBeHTTP(t *testing.T) {
	r := newRig(t)
	r.addApp("app", 1, 128)
	r.addJob(nil)
	j, _ := r.reg.Config().Job(r.ctx, "job")
	j.AppName = ""
	r.sched.catalog.jobs["job"] = held[jobs.Config]{cfg: j}
	if _, _, ok := r.sched.catalog.Runnable("job"); ok {
		t.Fatal("a job without app or HTTP type is runnable")
	}
}

// ResolveAppURL rewrites the app's URL in the task payload at launch.
func TestLaunchResolvesTheAppURL(t *testing.T) {
	r := newRig(t)
	r.sched.deps.Options.ResolveAppURL = func(u string) string { return strings.Replace(u, "example.invalid", "leader:8899", 1) }
	r.addApp("app", 1, 128)
	r.addJob(func(j *jobs.Config) { j.ShardingTotalCount = 1 })
	r.trigger("job")
	r.offer("o1", 4, 1024)
	r.sched.launcher.round(r.ctx)
	if len(r.drv.accepts) != 1 {
		t.Fatalf("accepts = %+v", r.drv.accepts)
	}
	d, err := r.drv.accepts[0].launches[0].Task, r.drv.accepts[0].launches[0].Task.Check()
	if err != nil || d.App.AppURL != "http://leader:8899/app.tar.gz" {
		t.Fatalf("appURL in the payload = %q (%v)", d.App.AppURL, err)
	}
	if a, _ := r.reg.Config().App(r.ctx, "app"); a.AppURL != "http://example.invalid/app.tar.gz" {
		t.Fatalf("the registry's appURL changed to %s", a.AppURL)
	}
}
