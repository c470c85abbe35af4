package mesos

import (
	"context"
	"errors"
	"testing"
	"time"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
	"github.com/mesos/mesos-go/api/v1/lib/scheduler"

	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/jobs"
)

// offersEvent is shaped like what a real agent offers (SPEC §9): cpus, mem, disk and ports with
// role "*" and allocation_info, plus resources the framework must not launch on.
const offersEvent = `{"type":"OFFERS","offers":{"offers":[
 {"id":{"value":"o1"},"framework_id":{"value":"fw-1"},"agent_id":{"value":"a1"},"hostname":"host1",
  "allocation_info":{"role":"jobs"},
  "resources":[
   {"name":"cpus","type":"SCALAR","scalar":{"value":1.5},"role":"*","allocation_info":{"role":"jobs"}},
   {"name":"cpus","type":"SCALAR","scalar":{"value":1},"allocation_info":{"role":"jobs"},
    "reservations":[{"type":"STATIC","role":"jobs"}]},
   {"name":"cpus","type":"SCALAR","scalar":{"value":8},"role":"*","revocable":{},"allocation_info":{"role":"jobs"}},
   {"name":"cpus","type":"SCALAR","scalar":{"value":4},"allocation_info":{"role":"other"}},
   {"name":"mem","type":"SCALAR","scalar":{"value":1024},"role":"*","allocation_info":{"role":"jobs"}},
   {"name":"disk","type":"SCALAR","scalar":{"value":5000},"role":"*","allocation_info":{"role":"jobs"}},
   {"name":"ports","type":"RANGES","ranges":{"range":[{"begin":31000,"end":32000}]},"role":"*","allocation_info":{"role":"jobs"}}
  ]},
 {"id":{"value":"o2"},"framework_id":{"value":"fw-1"},"agent_id":{"value":"a2"},"hostname":"host2",
  "resources":[{"name":"cpus","type":"SCALAR","scalar":{"value":2}},{"name":"mem","type":"SCALAR","scalar":{"value":512}}]}
]}}`

func subscribeWithOffers(t *testing.T) (*fakeMaster, *Client, *recHandler) {
	t.Helper()
	m, c, h, sub := subscribe(t, Config{Role: "jobs"}, "fw-1")
	sub.send(offersEvent)
	got := recv(t, h.offers, "Offers")
	want := []engine.Offer{
		{ID: "o1", AgentID: "a1", Hostname: "host1", CPUs: 2.5, MemMB: 1024},
		{ID: "o2", AgentID: "a2", Hostname: "host2", CPUs: 2, MemMB: 512},
	}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("offers = %+v, want %+v", got, want)
	}
	return m, c, h
}

// testPayload is the executor's payload of testLaunch's tasks.
var testPayload = jobs.TaskData{Version: jobs.TaskDataVersion, Job: jobs.Config{JobName: "job", AppName: "app"},
	App: app.Config{AppName: "app"}, ShardingContext: jobs.ShardingContext{JobName: "job", ShardingItem: 2, ShardingTotalCount: 3}}

func testLaunch(taskID string, cpus float64) engine.TaskLaunch {
	return engine.TaskLaunch{
		TaskID: taskID, Name: "job-" + taskID, AgentID: "a1", CPUs: cpus, MemMB: 128,
		Task: testPayload, KillGrace: 3 * time.Second,
		Executor: engine.ExecutorSpec{
			ID: "app@-@a1", Name: "app", CPUs: 0.25, MemMB: 64,
			Command: "./executor", Shell: true,
			URIs: []engine.URI{{Value: "http://x/app.tar.gz", Extract: true, Cache: true}},
			Env:  map[string]string{"B": "2", "A": "1"},
		},
	}
}

func TestAcceptCarvesResourcesFromOffer(t *testing.T) {
	m, c, _ := subscribeWithOffers(t)
	launches := []engine.TaskLaunch{testLaunch("t1", 1), testLaunch("t2", 1)}
	if err := c.Accept(context.Background(), []string{"o1"}, launches, 0); err != nil {
		t.Fatalf("Accept: %v", err)
	}
	rec := m.nextCall()
	acc := rec.call.GetAccept()
	if rec.call.Type != scheduler.Call_ACCEPT || len(acc.OfferIDs) != 1 || acc.OfferIDs[0].Value != "o1" {
		t.Fatalf("call = %s", rec.raw)
	}
	if acc.GetFilters().GetRefuseSeconds() != 5 || rec.call.GetFrameworkID().GetValue() != "fw-1" {
		t.Fatalf("filters/framework id wrong: %s", rec.raw)
	}
	tasks := acc.Operations[0].GetLaunch().TaskInfos
	if acc.Operations[0].Type != mesos.Offer_Operation_LAUNCH || len(tasks) != 2 {
		t.Fatalf("operations = %s", rec.raw)
	}
	// t1 takes 1 of the 1.5 unreserved cpus; t2 takes the remaining 0.5 plus 0.5 reserved.
	checkResources(t, tasks[0].Resources, []res{{"cpus", 1, "*", "jobs"}, {"mem", 128, "*", "jobs"}})
	checkResources(t, tasks[1].Resources, []res{{"cpus", 0.5, "*", "jobs"}, {"cpus", 0.5, "jobs", "jobs"}, {"mem", 128, "*", "jobs"}})
	checkTask(t, tasks[0])
	if u := tasks[0].Executor.GetCommand().User; u != nil {
		t.Fatalf("CommandInfo.user %q without a task user", *u)
	}
	if !tasks[0].Executor.Equal(tasks[1].Executor) {
		t.Fatalf("ExecutorInfo differs between tasks of one executor")
	}
	if _, err := c.heldOffers([]string{"o1"}); !errors.Is(err, ErrUnknownOffer) {
		t.Fatalf("accepted offer still held: %v", err)
	}
}

type res struct {
	name            string
	value           float64
	role, allocated string
}

func checkResources(t *testing.T, got []mesos.Resource, want []res) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("resources = %v, want %v", got, want)
	}
	for i, w := range want {
		g := got[i]
		if g.Name != w.name || g.GetScalar().GetValue() != w.value || resourceRole(&g) != w.role ||
			g.GetAllocationInfo().GetRole() != w.allocated || g.GetType() != mesos.SCALAR {
			t.Errorf("resource %d = %v, want %+v", i, g, w)
		}
	}
}

func checkTask(t *testing.T, ti mesos.TaskInfo) {
	t.Helper()
	if ti.TaskID.Value != "t1" || ti.Name != "job-t1" || ti.AgentID.Value != "a1" ||
		ti.GetKillPolicy().GetGracePeriod().GetNanoseconds() != 3e9 {
		t.Errorf("task info = %v", ti)
	}
	// The launch's typed payload is encoded at this edge, in the format the executor decodes.
	if d, err := jobs.UnmarshalTaskData(ti.Data); err != nil || string(ti.Data) != string(testPayload.Marshal()) ||
		d.ShardingContext.ShardingItem != 2 || d.App.AppName != "app" {
		t.Errorf("task data %s: %+v, %v", ti.Data, d, err)
	}
	ei := ti.Executor
	cmd := ei.GetCommand()
	if ei.ExecutorID.Value != "app@-@a1" || ei.GetFrameworkID().GetValue() != "fw-1" ||
		ei.Type != mesos.ExecutorInfo_CUSTOM || ei.GetName() != "app" ||
		cmd.GetValue() != "./executor" || !cmd.GetShell() || len(cmd.URIs) != 1 ||
		cmd.URIs[0].Value != "http://x/app.tar.gz" || !cmd.URIs[0].GetExtract() || !cmd.URIs[0].GetCache() ||
		cmd.URIs[0].GetExecutable() {
		t.Errorf("executor info = %v", ei)
	}
	vars := cmd.GetEnvironment().GetVariables()
	if len(vars) != 2 || vars[0].Name != "A" || vars[0].GetValue() != "1" || vars[1].Name != "B" {
		t.Errorf("environment = %v", vars)
	}
	checkResources(t, ei.Resources, []res{{"cpus", 0.25, "*", "jobs"}, {"mem", 64, "*", "jobs"}})
}

func TestAcceptRejectsWhatTheOfferCannotCover(t *testing.T) {
	m, c, _ := subscribeWithOffers(t)
	err := c.Accept(context.Background(), []string{"o1"}, []engine.TaskLaunch{testLaunch("t1", 3)}, 0)
	if !errors.Is(err, ErrInsufficient) {
		t.Fatalf("Accept 3 cpus of 2.5: %v", err)
	}
	if err := c.Accept(context.Background(), []string{"nope"}, nil, 0); !errors.Is(err, ErrUnknownOffer) {
		t.Fatalf("Accept unknown offer: %v", err)
	}
	m.noCall()
	if _, err := c.heldOffers([]string{"o1"}); err != nil {
		t.Fatalf("failed Accept must keep the offer: %v", err)
	}
}

func TestDeclineWithRefuseFilter(t *testing.T) {
	m, c, _ := subscribeWithOffers(t)
	ctx := context.Background()
	if err := c.Decline(ctx, []string{"o1", "o2"}, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	rec := m.nextCall()
	d := rec.call.GetDecline()
	if rec.call.Type != scheduler.Call_DECLINE || len(d.OfferIDs) != 2 || d.GetFilters().GetRefuseSeconds() != 30 {
		t.Fatalf("decline = %s", rec.raw)
	}
	if err := c.Accept(ctx, []string{"o2"}, nil, 0); !errors.Is(err, ErrUnknownOffer) {
		t.Fatalf("declined offer still held: %v", err)
	}
}

func TestRescindAndDisconnectVoidOffers(t *testing.T) {
	m, c, h, sub := subscribe(t, Config{Role: "jobs"}, "fw-1")
	sub.send(offersEvent, `{"type":"RESCIND","rescind":{"offer_id":{"value":"o1"}}}`)
	recv(t, h.offers, "Offers")
	if got := recv(t, h.rescinded, "Rescinded"); got != "o1" {
		t.Fatalf("Rescinded(%q)", got)
	}
	if _, err := c.heldOffers([]string{"o1"}); !errors.Is(err, ErrUnknownOffer) {
		t.Fatalf("rescinded offer still held: %v", err)
	}
	close(sub.end)
	recv(t, h.disconnected, "Disconnected")
	if _, err := c.heldOffers([]string{"o2"}); !errors.Is(err, ErrUnknownOffer) {
		t.Fatalf("offer survived the disconnection: %v", err)
	}
	m.nextSub()
}

// TestTaskUserInCommandInfo: an executor spec's user (its namespace's mesos_task_users
// entry) is its CommandInfo.user, which the agent runs the executor and its tasks as.
func TestTaskUserInCommandInfo(t *testing.T) {
	spec := testLaunch("t1", 1).Executor
	spec.User = "pay-jobs"
	if ci := commandInfo(spec); ci.GetUser() != "pay-jobs" {
		t.Fatalf("CommandInfo.user = %q", ci.GetUser())
	}
}
