package scheduler

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/internal/testproxy"
	zkstore "github.com/ejcloud/elasticjob/store/zk"

	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/store"
)

// A value in any subtree that does not decode is set aside: the catalog
// loads every other app and job, a cron fire and a trigger queue the good
// job, a takeover reads the running tasks, and the round launches it.
func TestDamagedEntriesLeaveSchedulingWorking(t *testing.T) {
	t.Run("memory", func(t *testing.T) { damagedEntriesLeaveSchedulingWorking(t, newRig(t)) })
	t.Run("zookeeper", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		kv, err := zkstore.Open(ctx, zkstore.Options{Servers: strings.Split(testproxy.ZK(t), ","),
			Namespace: fmt.Sprintf("ejtest/sched-damaged-%d", time.Now().UnixNano())})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { kv.Close() })
		r := newRig(t)
		r.kv, r.reg = kv, registry.New(kv, registry.Options{Damage: registry.NewDamage(nil)})
		r.rebuild(func(d *Deps) { d.Registry = r.reg })
		damagedEntriesLeaveSchedulingWorking(t, r)
	})
}

func damagedEntriesLeaveSchedulingWorking(t *testing.T, r *rig) {
	r.addApp("app", 0.1, 32)
	r.addJob(func(c *jobs.Config) { c.ShardingTotalCount = 2 })
	damaged := []string{
		"/config/app/legacy_app", "/config/job/legacy_job", "/config/workflow/wf",
		"/state/ready/legacy_job", "/state/running/job/job@-@7", "/state/failover/job/job@-@5",
		"/state/runs/job", "/state/waiting/ready/job", "/state/workflow/wf/r1",
	}
	for _, p := range damaged {
		if err := r.kv.Commit(r.ctx, store.Put(p, []byte(`{"appName":"legacy_app","appURL":"http://h/a.t`))); err != nil {
			t.Fatal(err)
		}
	}
	r.rebuild(func(*Deps) {}) // a new term: the catalog loads anew
	if _, ok := r.sched.catalog.Job("job"); !ok {
		t.Fatal("the good job is not in the catalog")
	}
	if err := r.reg.Work().TriggerMany(r.ctx, map[string]bool{"job": false, "legacy_job": false}, r.clk.Now(), r.clk.Now(), nil); err != nil {
		t.Fatalf("cron fires with a damaged ready entry: %v", err)
	}
	r.offer("o1", 8, 4096)
	r.sched.launcher.round(r.ctx)
	if run := r.running("job"); len(run) != 2 {
		t.Fatalf("running = %+v, want the good job's 2 shards", run)
	}
	// its tasks end, its run count damaged (read as none, written anew on a change)
	for _, rt := range r.running("job") {
		r.status(rt.TaskID, "TASK_RUNNING")
		r.status(rt.TaskID, "TASK_FINISHED")
	}
	r.clk.Advance(time.Second)
	if n := r.reg.Damage().Len(); n == 0 {
		t.Error("nothing was set aside")
	}
	found, err := r.reg.Scan(r.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != len(damaged) {
		t.Errorf("scan found %d damaged entries, want %d: %+v", len(found), len(damaged), found)
	}
}
