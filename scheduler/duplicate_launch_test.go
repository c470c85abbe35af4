package scheduler_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/engine/mesos"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/scheduler"
	"github.com/ejcloud/elasticjob/store/memory"
)

// doubling is the test hook that launches job "dup-a"'s fire twice more:
// its ACCEPT is replayed at once with the offers it used (refused: the
// offers are gone), and its tasks ride
// along with the next ACCEPT, of job "dup-b", on valid offers (the master
// refuses them: TASK_ERROR "Task has duplicate ID").
type doubling struct {
	engine.Driver
	mu       sync.Mutex
	held     []engine.TaskLaunch
	replayed bool
	appended bool
}

func (d *doubling) Accept(ctx context.Context, offerIDs []string, launches []engine.TaskLaunch, refuse time.Duration) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(launches) > 0 && !d.appended && len(d.held) > 0 && launches[0].Task.Job.JobName == "dup-b" {
		for _, l := range d.held {
			l.AgentID = launches[0].AgentID
			launches = append(launches, l)
		}
		d.appended = true
	}
	if err := d.Driver.Accept(ctx, offerIDs, launches, refuse); err != nil {
		return err
	}
	if len(launches) > 0 && launches[0].Task.Job.JobName == "dup-a" && !d.replayed {
		d.replayed = true
		d.held = append([]engine.TaskLaunch(nil), launches...)
		// Another leader's call as far as this one knows: its error (the
		// offers are used) is not this launch's.
		_ = d.Driver.Accept(ctx, offerIDs, launches, refuse)
	}
	return nil
}

// TestFireLaunchedThreeTimesRunsOnce: a fire's task id is the same at every
// launch, so the embedded master (like real Mesos) refuses the second and
// third launch, and the scheduler neither ends nor fails over the task that
// runs: each shard of the fire runs once, nothing waits for failover.
func TestFireLaunchedThreeTimesRunsOnce(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cluster, log, work := startEmbeddedMaster(ctx, t)

	out := t.TempDir()
	script := filepath.Join(t.TempDir(), "run.sh")
	// Each run appends a line; dup-a's runs last until dup-b has run, so
	// its tasks are active when their duplicates arrive.
	body := "#!/bin/sh\necho run >> " + out + "/$ELASTICJOB_JOB_NAME-$ELASTICJOB_SHARDING_ITEM\n" +
		"if [ \"$ELASTICJOB_JOB_NAME\" = dup-a ]; then i=0; while [ ! -e " + out + "/dup-b-0 ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done; sleep 0.5; fi\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	kv := memory.New()
	defer kv.Close()
	reg := registry.New(kv)
	a := app.Default()
	a.AppName, a.AppURL, a.BootstrapScript, a.CPUCount, a.MemoryMB = "dup-app", "file://"+script, "run.sh", 0.1, 32
	if err := reg.Config().AddApp(ctx, a); err != nil {
		t.Fatal(err)
	}
	for name, shards := range map[string]int{"dup-a": 2, "dup-b": 1} {
		j := jobs.Default()
		j.JobName, j.AppName, j.ShardingTotalCount, j.CPUCount, j.MemoryMB, j.Failover = name, "dup-app", shards, 0.1, 16, true
		if err := reg.Config().AddJob(ctx, j); err != nil {
			t.Fatal(err)
		}
	}
	client := mesos.New(mesos.Config{URL: cluster.URL(), Logger: log, NoCheckpoint: true})
	hook := &doubling{Driver: client}
	sched := scheduler.New(scheduler.Deps{Registry: reg, Driver: hook, Clock: clock.Real{}, Log: log,
		Options: scheduler.Options{ExecutorCommand: executorBin, Location: time.UTC, OfferHold: time.Second,
			ExecutorEnv: map[string]string{"ELASTICJOB_CACHE_DIR": filepath.Join(work, "cache")}}})
	go sched.Run(ctx)
	go client.Run(ctx, sched)

	if _, err := reg.Work().Trigger(ctx, "dup-a", false, time.Now()); err != nil {
		t.Fatal(err)
	}
	sched.Wake()
	waitFor(t, func() bool { return exists(out, "dup-a-0") && exists(out, "dup-a-1") }, "dup-a's shards started")
	if _, err := reg.Work().Trigger(ctx, "dup-b", false, time.Now()); err != nil {
		t.Fatal(err)
	}
	sched.Wake()
	waitFor(t, func() bool {
		all, err := reg.Work().RunningTasks(ctx)
		return err == nil && len(all) == 0 && exists(out, "dup-b-0")
	}, "every task ended")
	hook.mu.Lock()
	replayed, appended := hook.replayed, hook.appended
	hook.mu.Unlock()
	if !replayed || !appended {
		t.Fatalf("the hook did not launch dup-a's fire twice more (replayed %v, appended %v)", replayed, appended)
	}
	for _, f := range []string{"dup-a-0", "dup-a-1", "dup-b-0"} {
		b, err := os.ReadFile(filepath.Join(out, f))
		if err != nil || strings.Count(string(b), "run\n") != 1 {
			t.Fatalf("%s ran %q (%v), want once", f, b, err)
		}
	}
	if fs, err := reg.Work().FailoverOf(ctx, "dup-a"); err != nil || len(fs) != 0 {
		t.Fatalf("failover entries of dup-a: %+v, %v", fs, err)
	}
}

func exists(dir, name string) bool {
	_, err := os.Stat(filepath.Join(dir, name))
	return err == nil
}
