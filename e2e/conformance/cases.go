package conformance

import (
	"net/http"
	"slices"
	"strings"
)

// gang: all shards of a job run together: each of the 3 starts before any of them ends, and
// each ends once, recorded as a success.
func gang(e *Env) {
	t, s, rec := e.T, e.S, e.rec
	s.register(t, transient("gang", 3, "sleep 3"))
	s.trigger(t, "gang")
	e.eventually(func() bool { return rec.count("gang", "end") == 3 }, "the 3 shards to end (reports %v)",
		late(func() any { return rec.events("gang") }))
	evs := rec.events("gang")
	lastStart, firstEnd := -1, len(evs)
	for i, ev := range evs {
		if ev.Kind == "start" {
			lastStart = i
		} else if ev.Kind == "end" && i < firstEnd {
			firstEnd = i
		}
	}
	if lastStart > firstEnd || len(rec.tasks("gang", "start")) != 3 {
		t.Errorf("the shards did not run together (each starts before any ends): %v", evs)
	}
	e.eventually(func() bool { return len(s.ended(t, "gang")) == 3 }, "the 3 ends in the history")
	items := map[int]bool{}
	for _, x := range s.ended(t, "gang") {
		items[x.ShardingItem] = x.Success
	}
	if len(items) != 3 || !items[0] || !items[1] || !items[2] {
		t.Errorf("history of the gang by item: %v, want 0, 1 and 2 succeeded", items)
	}
}

// history: a run that succeeds and one that fails reach the history, the failure with its
// cause (the process's exit code); the status traces hold each task's RUNNING and its end.
func history(e *Env) {
	t, s := e.T, e.S
	s.register(t, transient("works", 1, "sleep 0"))
	s.register(t, transient("fails", 1, "fail"))
	s.trigger(t, "works")
	s.trigger(t, "fails")
	e.eventually(func() bool { return len(s.ended(t, "works")) == 1 && len(s.ended(t, "fails")) == 1 },
		"both runs to end in the history")
	ok, bad := s.ended(t, "works")[0], s.ended(t, "fails")[0]
	if !ok.Success || ok.FailureCause != nil {
		t.Errorf("works: success %v cause %q, want a success", ok.Success, ok.cause())
	}
	if bad.Success || !strings.Contains(bad.cause(), "exit code 3") {
		t.Errorf("fails: success %v cause %q, want a failure saying exit code 3", bad.Success, bad.cause())
	}
	t.Logf("%s: the failure's cause: %q", e.Engine, bad.cause())
	for _, c := range []struct{ job, task, end string }{{"works", ok.TaskID, "TASK_FINISHED"}, {"fails", bad.TaskID, "TASK_FAILED"}} {
		e.eventually(func() bool {
			st := s.states(t, c.job, c.task)
			return st["TASK_RUNNING"] && st[c.end]
		}, "status traces of %s to hold TASK_RUNNING and %s (traces %v)", c.task, c.end,
			late(func() any { return s.traces(t, c.job) }))
	}
}

// kill: killing a job's run ends both running shards, killed (history says by whom, the
// traces TASK_KILLED); their processes are gone from the host, nothing of them reports an
// end and nothing is relaunched.
func kill(e *Env) {
	t, s, rec := e.T, e.S, e.rec
	s.register(t, transient("victim", 2, "sleep 300"))
	s.trigger(t, "victim")
	e.eventually(func() bool { return rec.count("victim", "start") == 2 && len(s.running(t, "victim")) == 2 },
		"both shards to run")
	for _, task := range rec.tasks("victim", "start") {
		if len(processesOf(task)) == 0 {
			t.Fatalf("no process of the running task %s found on this host", task)
		}
	}
	s.must(t, http.MethodPost, "/api/job/victim/kill", nil)
	e.eventually(func() bool { return len(s.ended(t, "victim")) == 2 && len(s.running(t, "victim")) == 0 },
		"both shards to end killed (running %v)", late(func() any { return s.running(t, "victim") }))
	for _, x := range s.ended(t, "victim") {
		if x.Success || !strings.HasPrefix(x.cause(), "killed by ") {
			t.Errorf("%s: success %v cause %q, want killed by someone", x.TaskID, x.Success, x.cause())
		}
		e.eventually(func() bool { return s.states(t, "victim", x.TaskID)["TASK_KILLED"] }, "TASK_KILLED of %s", x.TaskID)
	}
	for _, task := range rec.tasks("victim", "start") {
		e.eventually(func() bool { return len(processesOf(task)) == 0 }, "the processes of the killed task %s to be gone (%v)",
			task, late(func() any { return processesOf(task) }))
	}
	if n := rec.count("victim", "end"); n != 0 || s.failover(t, "victim") != 0 || rec.count("victim", "start") != 2 {
		t.Errorf("after the kill: %d ends, %d starts, %d shards to run again; want 0, 2, 0", n, rec.count("victim", "start"), s.failover(t, "victim"))
	}
}

// failoverOnLoss: the node or agent that runs a failover job's shard is lost; the shard runs
// again once, as a FAILOVER task, and the lost task ends in a failure state.
func failoverOnLoss(e *Env) {
	t, s, rec := e.T, e.S, e.rec
	j := transient("lost", 1, "sleep 300")
	j["failover"], j["timeoutSeconds"] = true, 600
	s.register(t, j)
	s.trigger(t, "lost")
	e.eventually(func() bool { return rec.count("lost", "start") == 1 && len(s.running(t, "lost")) == 1 }, "the shard to run")
	first := rec.tasks("lost", "start")[0]
	e.Cluster.Lose(t, s, first)
	e.eventually(func() bool { return len(processesOf(first)) == 0 }, "the processes of the lost task %s to be gone", first)
	e.eventually(func() bool { return rec.count("lost", "start") == 2 }, "the lost shard to run again (traces %v)",
		late(func() any { return s.traces(t, "lost") }))
	second := rec.tasks("lost", "start")[1]
	if !strings.Contains(second, "@-@FAILOVER@-@") {
		t.Errorf("the second run %s is not a FAILOVER task", second)
	}
	var lostAs string
	e.eventually(func() bool {
		for _, tr := range s.traces(t, "lost") {
			if tr.TaskID == first && slices.Contains(failureStates, tr.State) {
				lostAs = tr.State + " (" + tr.Message + ")"
				return true
			}
		}
		return false
	}, "a failure state of the lost task %s (traces %v)", first, late(func() any { return s.traces(t, "lost") }))
	t.Logf("%s: the lost task ended %s", e.Engine, lostAs)
	s.must(t, http.MethodPost, "/api/job/lost/kill", nil)
	e.eventually(func() bool { return len(s.running(t, "lost")) == 0 }, "the failover run to be killed")
	if n := rec.count("lost", "start"); n != 2 {
		t.Errorf("%d runs, want 2 (the lost one and its failover)", n)
	}
}

var failureStates = []string{"TASK_FAILED", "TASK_LOST", "TASK_ERROR", "TASK_DROPPED", "TASK_GONE", "TASK_GONE_BY_OPERATOR", "TASK_UNKNOWN"}

// daemon: a DAEMON job is launched once and runs its cron inside that one task, listed
// running; disabling the job ends the task.
func daemon(e *Env) {
	t, s, rec := e.T, e.S, e.rec
	j := transient("resident", 1, "sleep 0")
	j["jobExecutionType"], j["cron"] = "DAEMON", "0/2 * * * * ?"
	s.register(t, j)
	e.eventually(func() bool { return rec.count("resident", "end") >= 3 }, "three runs of the daemon (reports %v)",
		late(func() any { return rec.events("resident") }))
	tasks := rec.tasks("resident", "start")
	if len(tasks) != 1 {
		t.Fatalf("runs in %d tasks, want the one resident task: %v", len(tasks), tasks)
	}
	if r := s.running(t, "resident"); len(r) != 1 || r[0] != tasks[0] {
		t.Errorf("running %v, want the resident task %s", r, tasks[0])
	}
	if code, _ := s.api(t).Do(http.MethodPost, "/api/job/trigger", "resident"); code != http.StatusBadRequest {
		t.Errorf("trigger of a DAEMON job: %d, want 400", code)
	}
	s.must(t, http.MethodPost, "/api/job/resident/disable", nil)
	e.eventually(func() bool { return len(s.running(t, "resident")) == 0 }, "the daemon's task to end once disabled")
}

// logs: a running shard's stdout is read live; after its end stdout and stderr are still
// there (where the engine removed the pod or sandbox, from what the scheduler kept).
func logs(e *Env) {
	t, s, rec := e.T, e.S, e.rec
	s.register(t, transient("talker", 1, "sleep 8"))
	s.trigger(t, "talker")
	e.eventually(func() bool { return rec.count("talker", "start") == 1 }, "the shard to start")
	task := rec.tasks("talker", "start")[0]
	live := "conformance: shard 0 of talker runs"
	e.eventually(func() bool { _, out := s.log(t, task, "stdout"); return strings.Contains(out, live) },
		"the live stdout of %s to hold %q", task, live)
	if rec.count("talker", "end") != 0 {
		t.Errorf("the log was read only after the run ended: not live")
	}
	// The engine declares logs, sandboxes and a cluster view, and has them: while the shard
	// runs its app's sandbox is listed on the task's agent (or node), which the cluster page
	// names.
	name, caps, page := s.clusterPage(t)
	if name == "" || !caps["logs"] || !caps["sandboxes"] || !caps["clusterView"] || !caps["capacity"] {
		t.Errorf("engine %q declares %v, want logs, sandboxes, clusterView and capacity", name, caps)
	}
	agent := s.AgentOf(t, task) // a fire's task id names no agent (jobs.FireTaskID)
	if agent == "" {
		t.Errorf("%s runs on no agent the running tasks name", task)
	}
	if boxes := s.sandboxes(t, appName); !slices.ContainsFunc(boxes, func(b sandbox) bool { return b.AgentID == agent && b.Path != "" }) {
		t.Errorf("sandboxes of %s while %s runs on %s: %+v", appName, task, agent, boxes)
	}
	if !strings.Contains(page, `"`+agent+`"`) {
		t.Errorf("the cluster page does not name agent %s of the running task:\n%s", agent, page)
	}
	e.eventually(func() bool { return len(s.ended(t, "talker")) == 1 }, "the run to end")
	e.eventually(func() bool {
		_, out := s.log(t, task, "stdout")
		_, errs := s.log(t, task, "stderr")
		return strings.Contains(out, "conformance: shard 0 done") && strings.Contains(errs, "conformance: a line on stderr")
	}, "stdout and stderr of %s after its end (stdout %v)", task, late(func() any { c, out := s.log(t, task, "stdout"); return []any{c, out} }))
}

// reconcile: the scheduler is killed with SIGKILL while two shards run and started again on
// its data: the running work is kept (not launched again), ends once and is recorded.
func reconcile(e *Env) {
	t, s, rec := e.T, e.S, e.rec
	s.register(t, transient("survivor", 2, "sleep 10"))
	s.trigger(t, "survivor")
	e.eventually(func() bool { return rec.count("survivor", "start") == 2 }, "both shards to start")
	started := rec.tasks("survivor", "start")
	if _, caps, _ := s.clusterPage(t); !caps["checkpointing"] {
		t.Errorf("the engine's tasks are to survive the restart, and it does not declare checkpointing: %v", caps)
	}
	s.Kill9()
	s2 := e.Cluster.Start(t, e.DataDir)
	e.S = s2
	e.eventually(func() bool { return rec.count("survivor", "end") == 2 }, "both shards to end")
	e.eventually(func() bool {
		n := 0
		for _, x := range s2.ended(t, "survivor") {
			if x.Success {
				n++
			}
		}
		return n == 2 && len(s2.running(t, "survivor")) == 0
	}, "the restarted scheduler to record both ends (history %v, running %v)",
		late(func() any { return s2.ended(t, "survivor") }), late(func() any { return s2.running(t, "survivor") }))
	if got := rec.tasks("survivor", "start"); !slices.Equal(got, started) || rec.count("survivor", "start") != 2 {
		t.Errorf("runs started %v, want only the 2 of before the restart %v", rec.events("survivor"), started)
	}
	if n := s2.failover(t, "survivor"); n != 0 {
		t.Errorf("%d shards to run again", n)
	}
}

// whyWaiting: a gang that does not fit beside running work waits whole (none of its shards
// starts) and says why; once the work holding the room is killed, all its shards run.
func whyWaiting(e *Env) {
	t, s, rec := e.T, e.S, e.rec
	blocker := transient("blocker", 1, "sleep 300")
	blocker["cpuCount"] = e.Caps.CPUs * 0.6
	s.register(t, blocker)
	// 4 × 10% of the node, beside 60% and the app's executor: one shard short of room.
	g := transient("gang4", 4, "sleep 0")
	g["cpuCount"] = e.Caps.CPUs * 0.1
	s.register(t, g)
	s.trigger(t, "blocker")
	e.eventually(func() bool { return rec.count("blocker", "start") == 1 }, "the blocker to run")
	s.trigger(t, "gang4")
	var w *wait
	e.eventually(func() bool {
		w = s.waiting(t, "gang4")
		return w != nil && slices.Contains(resourceWaits, w.Reason)
	}, "the gang to wait for resources with its reason (waiting %v)", late(func() any { return s.waiting(t, "gang4") }))
	t.Logf("%s: the gang waits: %s: %s", e.Engine, w.Reason, w.Message)
	if w.Message == "" || !strings.Contains(strings.ToLower(w.Message+w.Summary), "cpu") {
		t.Errorf("waiting %+v does not say it is CPU that is short", w)
	}
	if n := rec.count("gang4", "start"); n != 0 {
		t.Fatalf("%d shards of a gang that does not fit started", n)
	}
	s.must(t, http.MethodPost, "/api/job/blocker/kill", nil)
	e.eventually(func() bool { return rec.count("gang4", "end") == 4 }, "the 4 shards to run once there is room (waiting %v)",
		late(func() any { return s.waiting(t, "gang4") }))
}

var resourceWaits = []string{"insufficient_cpu", "insufficient_resources", "gang_does_not_fit", "reserved"}
