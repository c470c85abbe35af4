package scheduler_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
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

// lostAnswer is the test hook whose first ACCEPT of job "lost" reaches the
// master (its tasks launch) but fails for the scheduler, as an answer lost
// on the way back (a connection reset) would; it records the task ids of
// every ACCEPT of the job.
type lostAnswer struct {
	engine.Driver
	mu   sync.Mutex
	sent [][]string
}

func (d *lostAnswer) Accept(ctx context.Context, offerIDs []string, launches []engine.TaskLaunch, refuse time.Duration) error {
	err := d.Driver.Accept(ctx, offerIDs, launches, refuse)
	if len(launches) == 0 || launches[0].Task.Job.JobName != "lost" {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	var ids []string
	for _, l := range launches {
		ids = append(ids, l.TaskID)
	}
	slices.Sort(ids)
	d.sent = append(d.sent, ids)
	if err == nil && len(d.sent) == 1 {
		return errors.New("accept: connection reset by peer (the master got the call)")
	}
	return err
}

// TestRolledBackLaunchRelaunchedUnderItsIDs: a launch rolled back after
// its ACCEPT failed is launched again under the same task ids, so when
// that ACCEPT did reach the master (its answer was lost) the master
// refuses the second launch as a duplicate and each shard of the fire runs
// once; the first launch's updates, arriving while the relaunch waits, do
// not kill it. Before, the relaunch had new ids and the fire ran twice.
func TestRolledBackLaunchRelaunchedUnderItsIDs(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cluster, log, work := startEmbeddedMaster(ctx, t)

	out := t.TempDir()
	script := filepath.Join(t.TempDir(), "run.sh")
	// Each run appends a line and lasts a while, so it is active when its
	// relaunch arrives.
	body := "#!/bin/sh\necho run >> " + out + "/$ELASTICJOB_JOB_NAME-$ELASTICJOB_SHARDING_ITEM\nsleep 1\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	kv := memory.New()
	defer kv.Close()
	reg := registry.New(kv)
	a := app.Default()
	a.AppName, a.AppURL, a.BootstrapScript, a.CPUCount, a.MemoryMB = "lost-app", "file://"+script, "run.sh", 0.1, 32
	if err := reg.Config().AddApp(ctx, a); err != nil {
		t.Fatal(err)
	}
	j := jobs.Default()
	j.JobName, j.AppName, j.ShardingTotalCount, j.CPUCount, j.MemoryMB, j.Failover = "lost", "lost-app", 2, 0.1, 16, true
	if err := reg.Config().AddJob(ctx, j); err != nil {
		t.Fatal(err)
	}
	client := mesos.New(mesos.Config{URL: cluster.URL(), Logger: log, NoCheckpoint: true})
	hook := &lostAnswer{Driver: client}
	sched := scheduler.New(scheduler.Deps{Registry: reg, Driver: hook, Clock: clock.Real{}, Log: log,
		Options: scheduler.Options{ExecutorCommand: executorBin, Location: time.UTC, OfferHold: time.Second,
			ExecutorEnv: map[string]string{"ELASTICJOB_CACHE_DIR": filepath.Join(work, "cache")}}})
	go sched.Run(ctx)
	go client.Run(ctx, sched)

	if _, err := reg.Work().Trigger(ctx, "lost", false, time.Now()); err != nil {
		t.Fatal(err)
	}
	sched.Wake()
	waitFor(t, func() bool {
		hook.mu.Lock()
		defer hook.mu.Unlock()
		return len(hook.sent) >= 2
	}, "the rolled-back launch to be sent again")
	waitFor(t, func() bool {
		all, err := reg.Work().RunningTasks(ctx)
		rd, queued, _ := reg.Work().ReadyOf(ctx, "lost")
		return err == nil && len(all) == 0 && (!queued || rd.Count == 0) && exists(out, "lost-0") && exists(out, "lost-1")
	}, "the fire's tasks ended")
	hook.mu.Lock()
	sent := slices.Clone(hook.sent)
	hook.mu.Unlock()
	if !slices.Equal(sent[0], sent[1]) {
		t.Fatalf("the relaunch's ids %v differ from the rolled-back launch's %v", sent[1], sent[0])
	}
	for _, f := range []string{"lost-0", "lost-1"} {
		b, err := os.ReadFile(filepath.Join(out, f))
		if err != nil || strings.Count(string(b), "run\n") != 1 {
			t.Fatalf("%s ran %q (%v), want once", f, b, err)
		}
	}
	if fs, err := reg.Work().FailoverOf(ctx, "lost"); err != nil || len(fs) != 0 {
		t.Fatalf("failover entries of lost: %+v, %v", fs, err)
	}
}
