package api_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/api"
)

// The curl commands of the manual (reference/003_4dbd97e3c7e25ce2.txt
// §4.2.5, §4.2.6, §6.2.4), with the PDF's wrapped lines joined. Bodies are
// byte for byte what curl -d sends; where the command's quoted body spans
// lines in the source code block, the newline and indentation are kept
// (curl sends them inside the single quotes).
const (
	// §4.2.5 and §6.2.4 "发布应用".
	manualPublishApp = `{"appName":"my_app","appURL":"http://app_host:8080/my-job.tar.gz","cpuCount":0.1,"memoryMB":64.0,"bootstrapScript":"bin/start.sh","appCacheEnable":true,"eventTraceSamplingCount":0}`
	// §4.2.6: the quick start's cron has a '?' in the year field.
	manualQuickStartJob = `{"jobName":"my_job","appName":"my_app","jobExecutionType":"TRANSIENT","cron":"0/5 * * * * * ?","shardingTotalCount":3,"cpuCount":0.1,"memoryMB":64.0}`
	// §6.2.4 "修改应用配置".
	manualModifyApp = "{\"appName\":\"my_app\",\n    \"appCacheEnable\":true}"
	// §6.2.4 "注册作业".
	manualRegisterJob = "{\"appName\":\"my_app\",\n   \"cpuCount\":0.1,\"memoryMB\":64.0,\"jobExecutionType\":\"TRANSIENT\",\"jobName\":\"my_job\",\n   \"cron\":\"0/5 * * * * ?\",\"shardingTotalCount\":5,\"failover\":true,\"misfire\":true}"
	// §6.2.4 "修改作业配置".
	manualUpdateJob = `{"appName":"my_app","jobName":"my_job","cpuCount":0.1,"memoryMB":64.0,"jobExecutionType":"TRANSIENT","cron":"0/5 * * * * ?","shardingTotalCount":5,"failover":true,"misfire":true}`
	// §6.2.4 "注销作业": the markdown shows my\_job and curl sends the backslash.
	manualDeregisterEscaped = `my\_job`
	// §6.2.4 "触发一次作业".
	manualTrigger = `my_job`
)

// TestManualQuickStart replays §4.2.5 and §4.2.6, then triggers and
// deregisters with the §6.2.4 commands.
func TestManualQuickStart(t *testing.T) {
	e := newEnv(t)
	r := e.must(http.StatusOK, http.MethodPost, "/api/app", manualPublishApp)
	golden(t, "manual_app", r.Body)
	// The PDF leaves the closing quote on its own line; a trailing newline
	// in the body is equally fine (on another name, to avoid the conflict).
	e.must(http.StatusOK, http.MethodPost, "/api/app",
		`{"appName":"my_app2","appURL":"http://app_host:8080/my-job.tar.gz","cpuCount":0.1,"memoryMB":64.0,"bootstrapScript":"bin/start.sh","appCacheEnable":true,"eventTraceSamplingCount":0}`+"\n")

	r = e.must(http.StatusOK, http.MethodPost, "/api/job/register", manualQuickStartJob)
	golden(t, "manual_quickstart_job", r.Body)
	r = e.must(http.StatusOK, http.MethodGet, "/api/job/jobs/my_job", "")
	golden(t, "manual_quickstart_job", r.Body)

	// misfire=false: two triggers collapse into one pending execution.
	e.must(http.StatusNoContent, http.MethodPost, "/api/job/trigger", manualTrigger)
	e.clock.Advance(1)
	e.must(http.StatusNoContent, http.MethodPost, "/api/job/trigger", manualTrigger)
	if got := e.ops.Wakes(); got != 1 {
		t.Errorf("Wake called %d times, want 1 (the second trigger collapsed: nothing new to launch)", got)
	}
	r = e.must(http.StatusOK, http.MethodGet, "/api/job/tasks/ready", "")
	golden(t, "manual_quickstart_ready", r.Body)

	e.must(http.StatusNoContent, http.MethodDelete, "/api/job/deregister", manualDeregisterEscaped)
	e.wantError(e.request(http.MethodGet, "/api/job/jobs/my_job", ""), http.StatusNotFound, "Cannot find job 'my_job'")
	if r := e.must(http.StatusOK, http.MethodGet, "/api/job/tasks/ready", ""); string(r.Body) != "[]" {
		t.Errorf("ready queue after deregister = %s, want []", r.Body)
	}
}

// TestManualConfigurationGuide replays every command of §6.2.4 in order.
func TestManualConfigurationGuide(t *testing.T) {
	e := newEnv(t)
	e.must(http.StatusOK, http.MethodPost, "/api/app", manualPublishApp)

	// PUT with only appName and appCacheEnable merges onto the stored app.
	r := e.must(http.StatusOK, http.MethodPut, "/api/app", manualModifyApp)
	golden(t, "manual_app", r.Body)
	r = e.must(http.StatusOK, http.MethodGet, "/api/app/my_app", "")
	golden(t, "manual_app", r.Body)

	r = e.must(http.StatusOK, http.MethodPost, "/api/job/register", manualRegisterJob)
	golden(t, "manual_job", r.Body)
	e.wantError(e.request(http.MethodPost, "/api/job/register", manualRegisterJob), http.StatusConflict, "Job 'my_job' already existed.")

	r = e.must(http.StatusOK, http.MethodPut, "/api/job/update", manualUpdateJob)
	golden(t, "manual_job", r.Body)

	// misfire=true: every trigger adds a pending execution.
	e.must(http.StatusNoContent, http.MethodPost, "/api/job/trigger", manualTrigger)
	e.must(http.StatusNoContent, http.MethodPost, "/api/job/trigger", manualTrigger)
	r = e.must(http.StatusOK, http.MethodGet, "/api/job/tasks/ready", "")
	golden(t, "manual_guide_ready", r.Body)

	// Update clears the job's pending executions (it is rescheduled).
	e.must(http.StatusOK, http.MethodPut, "/api/job/update", manualUpdateJob)
	if r := e.must(http.StatusOK, http.MethodGet, "/api/job/tasks/ready", ""); string(r.Body) != "[]" {
		t.Errorf("ready queue after update = %s, want []", r.Body)
	}

	e.must(http.StatusNoContent, http.MethodDelete, "/api/job/deregister", manualTrigger)
	e.wantError(e.request(http.MethodDelete, "/api/job/deregister", manualDeregisterEscaped), http.StatusNotFound, "Cannot find job 'my_job'")
}

// TestNameBodyForms: the trigger and deregister bodies may be plain text,
// the manual's escaped form, a JSON string or a JSON object.
func TestNameBodyForms(t *testing.T) {
	for _, body := range []string{`my_job`, `my\_job`, " my_job\n", `"my_job"`, `{"jobName":"my_job"}`} {
		t.Run(body, func(t *testing.T) {
			e := newEnv(t)
			e.must(http.StatusOK, http.MethodPost, "/api/app", manualPublishApp)
			e.must(http.StatusOK, http.MethodPost, "/api/job/register", manualQuickStartJob)
			e.must(http.StatusNoContent, http.MethodPost, "/api/job/trigger", body)
			q := decode[[]map[string]any](t, e.must(http.StatusOK, http.MethodGet, "/api/job/tasks/ready", ""))
			if len(q) != 1 || q[0]["jobName"] != "my_job" {
				t.Errorf("ready queue = %v, want my_job", q)
			}
			e.must(http.StatusNoContent, http.MethodDelete, "/api/job/deregister", body)
			e.must(http.StatusNotFound, http.MethodGet, "/api/job/jobs/my_job", "")
		})
	}
}

func TestTriggerWithParameterAndIdempotencyKey(t *testing.T) {
	e := newEnv(t)
	e.must(http.StatusOK, http.MethodPost, "/api/app", manualPublishApp)
	e.must(http.StatusOK, http.MethodPost, "/api/job/register", manualQuickStartJob)
	body := `{"jobName":"my_job","jobParameter":"date=2026-11-01","idempotencyKey":"rerun-2026-11-01"}`
	r := decode[map[string]any](t, e.must(http.StatusOK, http.MethodPost, "/api/job/trigger", body))
	if r["queued"] != true || r["duplicate"] != false {
		t.Fatalf("first trigger = %v", r)
	}
	r = decode[map[string]any](t, e.must(http.StatusOK, http.MethodPost, "/api/job/trigger", body))
	if r["queued"] != false || r["duplicate"] != true {
		t.Fatalf("retried trigger = %v, want a duplicate", r)
	}
	// A second parameterized run does not collapse into the first (misfire=false).
	e.must(http.StatusOK, http.MethodPost, "/api/job/trigger", `{"jobName":"my_job","jobParameter":"date=2026-11-02"}`)
	q, err := e.reg.Work().ReadyQueue(context.Background())
	if err != nil || len(q) != 1 || q[0].Count != 2 || len(q[0].Runs) != 2 {
		t.Fatalf("ready = %+v %v", q, err)
	}
	if q[0].Runs[0].JobParameter != "date=2026-11-01" || q[0].Runs[1].JobParameter != "date=2026-11-02" {
		t.Fatalf("runs = %+v", q[0].Runs)
	}
	if e.ops.Wakes() != 2 {
		t.Fatalf("wakes = %d: a duplicate must not wake the launcher", e.ops.Wakes())
	}
}

// A trigger that collapses into an execution already waiting (misfire
// false) writes nothing: it neither wakes the launcher nor counts as a
// commit in the launch-stage figures.
func TestCollapsedTriggerWakesNothing(t *testing.T) {
	var commits []string
	e := newEnv(t, func(o *api.Options, _ *api.Credentials) {
		o.Jobs.TriggerCommitted = func(job string, _, _ time.Time) { commits = append(commits, job) }
	})
	e.must(http.StatusOK, http.MethodPost, "/api/app", manualPublishApp)
	e.must(http.StatusOK, http.MethodPost, "/api/job/register", manualQuickStartJob)
	for range 3 {
		e.must(http.StatusNoContent, http.MethodPost, "/api/job/trigger", "my_job")
	}
	q, err := e.reg.Work().ReadyQueue(t.Context())
	if err != nil || len(q) != 1 || q[0].Count != 1 {
		t.Fatalf("ready = %+v %v, want one execution", q, err)
	}
	if e.ops.Wakes() != 1 || len(commits) != 1 {
		t.Fatalf("wakes = %d, commits observed = %v: only the first trigger queued anything", e.ops.Wakes(), commits)
	}
}
