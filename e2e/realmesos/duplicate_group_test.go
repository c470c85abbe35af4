//go:build e2e

package realmesos

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/engine/mesos"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/task"
)

// groupProxy forwards the scheduler API to the master and, while group is
// set, sends an ACCEPT's LAUNCH as one LAUNCH_GROUP of the same tasks (the
// scheduler itself launches a gang's shards as one LAUNCH, one TaskInfo
// each): what a real master answers to a duplicate inside a group.
func groupProxy(t *testing.T, master string, group *atomic.Bool) string {
	t.Helper()
	target, err := url.Parse(master)
	if err != nil {
		t.Fatal(err)
	}
	p := httputil.NewSingleHostReverseProxy(target)
	p.FlushInterval = -1 // the subscription is a stream
	next := p.Director
	p.Director = func(r *http.Request) {
		next(r)
		if !group.Load() || r.Body == nil || !strings.HasSuffix(r.URL.Path, "/api/v1/scheduler") {
			return
		}
		body, _ := io.ReadAll(r.Body)
		body = launchAsGroup(t, body)
		r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
		r.Header.Del("Content-Length")
	}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	return srv.URL
}

// launchAsGroup rewrites an ACCEPT call's LAUNCH operations (JSON) into
// LAUNCH_GROUPs with the first task's executor; any other call is kept.
func launchAsGroup(t *testing.T, body []byte) []byte {
	var call map[string]any
	if err := json.Unmarshal(body, &call); err != nil || call["type"] != "ACCEPT" {
		return body
	}
	accept, _ := call["accept"].(map[string]any)
	ops, _ := accept["operations"].([]any)
	for i, o := range ops {
		op, _ := o.(map[string]any)
		launch, _ := op["launch"].(map[string]any)
		if op["type"] != "LAUNCH" || launch == nil {
			continue
		}
		tasks, _ := launch["task_infos"].([]any)
		if len(tasks) == 0 {
			continue
		}
		exec := tasks[0].(map[string]any)["executor"]
		ops[i] = map[string]any{"type": "LAUNCH_GROUP", "launch_group": map[string]any{"executor": exec, "task_group": map[string]any{"tasks": tasks}}}
	}
	out, err := json.Marshal(call)
	if err != nil {
		t.Errorf("rewrite an ACCEPT: %v", err)
		return body
	}
	return out
}

// TestDuplicateInAGangAndAGroupOnMesos: what real Mesos 1.11 answers to a
// duplicate task id among other tasks. In one LAUNCH (how the scheduler
// launches a gang's shards) only the duplicate is refused (TASK_ERROR,
// REASON_TASK_INVALID) and the other task launches. In a LAUNCH_GROUP the
// whole group is refused: every task gets TASK_ERROR,
// REASON_TASK_GROUP_INVALID, "Task '<dup>' is invalid: Task has duplicate
// ID: <dup>", which task.DuplicateLaunch (the duplicate's) and
// task.RefusedWithItsGroup (the others') tell apart; nothing of the group
// launches and the task that runs under the id goes on.
func TestDuplicateInAGangAndAGroupOnMesos(t *testing.T) {
	m := startMesos(t, mesosOpts{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var group atomic.Bool
	client := mesos.New(mesos.Config{URL: groupProxy(t, m.masterURL(), &group), Logger: slog.New(slog.DiscardHandler), NoCheckpoint: true, FailoverTimeout: time.Second})
	rec := &recorder{}
	done := make(chan struct{})
	go func() { defer close(done); _ = client.Run(ctx, rec) }()
	defer func() { cancel(); <-done }()

	now := time.Now()
	ids := []string{
		jobs.FireTaskID("gang", 0, jobs.KindReady, "ready|1", now).String(),
		jobs.FireTaskID("gang", 1, jobs.KindReady, "ready|1", now).String(),
		jobs.FireTaskID("gang", 2, jobs.KindReady, "ready|1", now).String(),
	}
	launchOf := func(id string, item int, agent string) engine.TaskLaunch {
		return engine.TaskLaunch{TaskID: id, Name: "gang", AgentID: agent, CPUs: 0.1, MemMB: 32,
			Task:     jobs.TaskData{Version: jobs.TaskDataVersion, ShardingContext: jobs.ShardingContext{JobName: "gang", TaskID: id, ShardingTotalCount: 3, ShardingItem: item}},
			Executor: engine.ExecutorSpec{ID: jobs.ExecutorID("gang-app", agent), Name: "gang", CPUs: 0.1, MemMB: 32, Command: "sleep 60", Shell: true}}
	}
	accept := func(what string, items ...int) {
		t.Helper()
		var o engine.Offer
		eventually(t, waitLong, func() bool { var ok bool; o, ok = rec.takeOffer(); return ok }, "an offer for the %s launch", what)
		var ls []engine.TaskLaunch
		for _, i := range items {
			ls = append(ls, launchOf(ids[i], i, o.AgentID))
		}
		if err := client.Accept(ctx, []string{o.ID}, ls, 0); err != nil {
			t.Fatalf("%s ACCEPT: %v", what, err)
		}
	}
	active := func() []string {
		var out []string
		for _, tk := range framework(t, m, "elasticjob-cloud").Tasks {
			out = append(out, tk.ID)
		}
		slices.Sort(out)
		return out
	}
	refusal := func(id string, reason task.Reason) engine.Status {
		t.Helper()
		var st engine.Status
		eventually(t, waitLong, func() bool {
			rec.mu.Lock()
			defer rec.mu.Unlock()
			for _, u := range rec.updates {
				if u.TaskID == id && u.State == task.Error && u.Reason == reason {
					st = u
					return true
				}
			}
			return false
		}, "the master's refusal of %s (%s)", id, reason)
		return st
	}
	update := func(st engine.Status) task.Update {
		return task.Update{TaskID: st.TaskID, State: st.State, Reason: st.Reason, Source: st.Source, Message: st.Message}
	}

	accept("first", 0)
	eventually(t, waitLong, func() bool { return len(active()) == 1 }, "shard 0 to be active at the master")

	accept("gang's", 0, 1) // shard 0 again beside shard 1, in one LAUNCH
	if st := refusal(ids[0], task.ReasonTaskInvalid); !task.DuplicateLaunch(update(st)) {
		t.Fatalf("the duplicate in a LAUNCH: %+v", st)
	}
	eventually(t, waitLong, func() bool { return slices.Equal(active(), []string{ids[0], ids[1]}) }, "shard 1 to launch beside the refused duplicate")

	group.Store(true)
	accept("group's", 0, 2) // shard 0 again beside shard 2, in one LAUNCH_GROUP
	want := "Task '" + ids[0] + "' is invalid: Task has duplicate ID: " + ids[0]
	dup, other := refusal(ids[0], task.ReasonTaskGroupInvalid), refusal(ids[2], task.ReasonTaskGroupInvalid)
	for _, st := range []engine.Status{dup, other} {
		if st.Reason != task.ReasonTaskGroupInvalid || st.Source != task.SourceMaster || st.Message != want {
			t.Fatalf("a refusal of the group: %+v, want TASK_ERROR REASON_TASK_GROUP_INVALID from the master, %q", st, want)
		}
	}
	if !task.DuplicateLaunch(update(dup)) || task.RefusedWithItsGroup(update(dup)) {
		t.Fatalf("the duplicate's own refusal in a group is not told as a duplicate launch: %+v", dup)
	}
	if !task.RefusedWithItsGroup(update(other)) || task.DuplicateLaunch(update(other)) {
		t.Fatalf("the other task's refusal in a group is not told as refused with its group: %+v", other)
	}
	if got := active(); !slices.Equal(got, []string{ids[0], ids[1]}) {
		t.Fatalf("active at the master: %v, want shards 0 and 1 (nothing of the group)", got)
	}
}
