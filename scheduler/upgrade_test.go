package scheduler

import (
	"strings"
	"testing"

	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/store"
)

// The original's running entries (bare task ids): a live DAEMON task is
// killed once and its job queued again once; a TRANSIENT one is adopted
// (not killed) and its end recorded; this scheduler's own DAEMON tasks are
// never killed so.
func TestOriginalDaemonReplacedOnceTransientAdopted(t *testing.T) {
	for _, c := range []struct {
		name     string
		execType jobs.ExecutionType
		kills    int
	}{
		{"daemon", jobs.Daemon, 1},
		{"transient", jobs.Transient, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t)
			r.addApp("app", 1, 128)
			r.addJob(func(j *jobs.Config) { j.JobExecutionType, j.ShardingTotalCount, j.Cron = c.execType, 1, "* * * * * ?" })
			id := "job@-@0@-@READY@-@agent-1@-@5b1f7c0e-3a5d-4f0a-9d51-0c8e2b7a6d44"
			if err := r.kv.Commit(r.ctx, store.Put(registry.RunningPath+"/job/job@-@0", []byte(id))); err != nil {
				t.Fatal(err)
			}
			r.sched.st.reloadRunning()
			if e := r.running("job")[0]; e.TaskID != id || !registry.LeftByOriginal(e) {
				t.Fatalf("the original's entry read as %+v", e)
			}
			r.status(id, "TASK_RUNNING")
			r.status(id, "TASK_RUNNING") // a second answer (a periodic reconciliation)
			if len(r.drv.kills) != c.kills {
				t.Fatalf("kills %v, want %d", r.drv.kills, c.kills)
			}
			end := "TASK_FINISHED"
			if c.execType == jobs.Daemon {
				end = "TASK_KILLED"
			}
			r.status(id, end)
			if n := len(r.running("job")); n != 0 {
				t.Fatalf("%d tasks still running after the end", n)
			}
			if want := c.kills; r.readyCount("job") != want {
				t.Fatalf("ready %d after the end, want %d", r.readyCount("job"), want)
			}
		})
	}
	// A DAEMON task of this scheduler's own is left alone.
	r, run := launched(t, func(j *jobs.Config) { j.JobExecutionType, j.Cron = jobs.Daemon, "* * * * * ?" })
	r.status(run[0].TaskID, "TASK_RUNNING")
	if len(r.drv.kills) != 0 {
		t.Fatalf("this scheduler's own DAEMON task was killed: %v", r.drv.kills)
	}
}

// Issue 68 item 5: a task the original left running that the engine answers gone or unknown
// (the first reconciliation after an upgrade onto another cluster) ends as any task does,
// recorded, but raises no failure alert; one that fails by itself is alerted; a task of this
// scheduler's own that is lost is alerted as before.
func TestOriginalTaskLostIsRecordedNotAlerted(t *testing.T) {
	webhook := func(j *jobs.Config) {
		j.ShardingTotalCount, j.Failover, j.JobErrorHandlerType = 2, true, jobs.HandlerWebhook
		j.Props = map[string]string{"webhook.url": "http://127.0.0.1:1/hook", "webhook.format": "dingtalk"}
	}
	r := newRig(t)
	r.addApp("app", 1, 128)
	r.addJob(webhook)
	lost := "job@-@0@-@READY@-@agent-1@-@5b1f7c0e-3a5d-4f0a-9d51-0c8e2b7a6d44"
	failed := "job@-@1@-@READY@-@agent-1@-@6c2f8d1f-4b6e-4f1b-8e62-1d9f3c8b7e55"
	for p, id := range map[string]string{"job/job@-@0": lost, "job/job@-@1": failed} {
		if err := r.kv.Commit(r.ctx, store.Put(registry.RunningPath+"/"+p, []byte(id))); err != nil {
			t.Fatal(err)
		}
	}
	r.sched.st.reloadRunning()
	n := &recordingNotifier{}
	r.sched.status.notifier = n
	r.status(lost, "TASK_GONE")
	if len(n.got) != 0 {
		t.Fatalf("the original's vanished task raised %v", n.got)
	}
	if _, ok := r.running("job")[0]; ok {
		t.Fatal("the vanished task's entry is still there: its end was not recorded")
	}
	r.status(failed, "TASK_FAILED")
	if len(n.got) != 1 || !strings.HasPrefix(n.got[0], "job TASK_FAILED") {
		t.Fatalf("the original's task that failed by itself: notifications %v, want one", n.got)
	}

	own, run := launched(t, webhook)
	m := &recordingNotifier{}
	own.sched.status.notifier = m
	own.status(run[0].TaskID, "TASK_LOST")
	if len(m.got) != 1 {
		t.Fatalf("this scheduler's own lost task: notifications %v, want one", m.got)
	}
}
