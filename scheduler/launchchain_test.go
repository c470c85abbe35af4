package scheduler

import (
	"context"
	"fmt"
	"testing"

	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/store"
)

// failingKV fails every Commit that writes path (a conflicting write).
type failingKV struct {
	store.KV
	path string
}

func (f failingKV) Commit(ctx context.Context, ops ...store.Op) error {
	for _, op := range ops {
		if op.Path == f.path {
			return fmt.Errorf("commit %s: %w", op.Path, store.ErrConflict)
		}
	}
	return f.KV.Commit(ctx, ops...)
}

// chainRig has three jobs waiting: a and b of 2 shards, c of 5, and
// launch commits of at most 3 launches.
func chainRig(t *testing.T, kv func(store.KV) store.KV) *rig {
	r := newRig(t)
	r.addApp("app", 0.01, 16)
	for _, j := range []struct {
		name   string
		shards int
	}{{"a", 2}, {"b", 2}, {"c", 5}} {
		r.addJob(func(c *jobs.Config) {
			c.JobName, c.ShardingTotalCount, c.CPUCount, c.MemoryMB = j.name, j.shards, 0.01, 1
		})
		r.trigger(j.name)
	}
	r.rebuild(func(d *Deps) {
		d.Options.MaxRoundTasks, d.Options.MaxCommitTasks = 100, 3
		if kv != nil {
			d.Registry = registry.New(kv(r.kv))
		}
	})
	r.offer("o1", 64, 65536)
	return r
}

func (r *rig) accepted() int {
	n := 0
	for _, a := range r.drv.accepts {
		n += len(a.launches)
	}
	return n
}

// TestLaunchRoundLargerThanACommitIsChained: a round of more launches than
// a commit holds is committed as a chain of parts cut at executions; an
// execution larger than a part spans parts as a gang, marked in its last.
func TestLaunchRoundLargerThanACommitIsChained(t *testing.T) {
	r := chainRig(t, nil)
	r.sched.launcher.round(r.ctx)
	for job, want := range map[string]int{"a": 2, "b": 2, "c": 5} {
		if got := len(r.running(job)); got != want || r.readyCount(job) != 0 {
			t.Fatalf("job %s: %d running, %d ready; want %d running, none ready", job, got, r.readyCount(job), want)
		}
	}
	c := r.running("c")
	marks, err := r.reg.Work().GangMarks(r.ctx)
	if err != nil || c[0].Gang == "" || marks["c"] != c[0].Gang || c[4].Gang != c[0].Gang {
		t.Fatalf("c's entries gang %q/%q, marks %v, %v: want one gang, marked", c[0].Gang, c[4].Gang, marks, err)
	}
	if r.running("a")[0].Gang != "" {
		t.Fatal("a, whole in one part, carries a gang")
	}
	if n := r.accepted(); n != 9 {
		t.Fatalf("%d tasks accepted, want 9", n)
	}
}

// TestFailedLaunchPartLaunchesThePartsBefore: when a part of the chain
// fails (b's dequeue conflicts), the executions of the parts before it are
// launched, and nothing of that part or after it is recorded or sent.
func TestFailedLaunchPartLaunchesThePartsBefore(t *testing.T) {
	r := chainRig(t, func(kv store.KV) store.KV { return failingKV{KV: kv, path: registry.ReadyPath + "/b"} })
	r.sched.launcher.round(r.ctx)
	if len(r.running("a")) != 2 || r.readyCount("a") != 0 {
		t.Fatalf("a: %d running, %d ready; want launched", len(r.running("a")), r.readyCount("a"))
	}
	for _, job := range []string{"b", "c"} {
		if len(r.running(job)) != 0 || r.readyCount(job) != 1 {
			t.Fatalf("%s: %d running, %d ready; want still waiting", job, len(r.running(job)), r.readyCount(job))
		}
	}
	if n := r.accepted(); n != 2 {
		t.Fatalf("%d tasks accepted, want a's 2", n)
	}
}
