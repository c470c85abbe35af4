package kube

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/jobs"
)

// TestPodGetsTheTypedPayload: the engine reads the launch's typed payload (no Mesos
// encoding to decode) and hands the executor the same JSON encoding in the pod's
// environment, with the app URL as the launcher made it and the pod templates left out; the caller's
// launch is not changed. A payload an executor could not run is refused with the task named.
func TestPodGetsTheTypedPayload(t *testing.T) {
	e := testEngine(clock.NewFake(t0))
	e.onNode(node("n1", "2", "4Gi", false))
	off := offered(e)[0]
	tid := jobs.NewTaskID("j", 1, jobs.KindReady, "n1").String()
	tmpl := app.PodTemplate(json.RawMessage(`{"metadata":{"labels":{"team":"pay"}}}`))
	td := jobs.TaskData{Version: jobs.TaskDataVersion, ExecutionSource: jobs.SourceFailover,
		ShardingContext: jobs.ShardingContext{JobName: "j", TaskID: tid, ShardingItem: 1, ShardingTotalCount: 2, ShardingParameter: "b"},
		Job:             jobs.Config{JobName: "j", AppName: "a", JobExecutionType: jobs.Transient, ShardingTotalCount: 2},
		App:             app.Config{AppName: "a", AppURL: "http://leader/packages/a.tar.gz", PodTemplate: tmpl}}
	launches := []engine.TaskLaunch{{TaskID: tid, AgentID: "n1", CPUs: 0.1, MemMB: 32, Task: td,
		Executor: engine.ExecutorSpec{ID: jobs.ExecutorID("a", "n1"), CPUs: 0.1, MemMB: 32}}}
	pods, _, err := e.prepare([]string{off.ID}, launches, -1)
	if err != nil {
		t.Fatal(err)
	}
	got, err := jobs.UnmarshalTaskData([]byte(envOf(pods[0].Spec.Containers[0])[EnvTaskData].Value))
	if err != nil {
		t.Fatalf("the pod's task data: %v", err)
	}
	want := td
	want.App.PodTemplate = nil // the URL as the launcher rewrote it (packages.LaunchURL)
	if string(got.Marshal()) != string(want.Marshal()) {
		t.Errorf("the pod's task data\n%s\nwant\n%s", got.Marshal(), want.Marshal())
	}
	if l := launches[0].Task; l.App.AppURL != td.App.AppURL || l.App.PodTemplate.Empty() {
		t.Errorf("the caller's launch was changed: %+v", l.App)
	}

	bad := launches[0]
	bad.TaskID, bad.Task.App.AppName = jobs.NewTaskID("j", 0, jobs.KindReady, "n1").String(), ""
	_, _, err = e.prepare([]string{offered(e)[0].ID}, []engine.TaskLaunch{bad}, -1)
	if err == nil || !strings.Contains(err.Error(), bad.TaskID) || !strings.Contains(err.Error(), "lacks the job or app") {
		t.Errorf("a payload without its app: %v", err)
	}
}
