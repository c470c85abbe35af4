package scheduler_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/engine/mesos"
	"github.com/ejcloud/elasticjob/engine/mesos/embedded"
	"github.com/ejcloud/elasticjob/internal/testbin"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/scheduler"
	"github.com/ejcloud/elasticjob/store/memory"

	"go.uber.org/goleak"
)

// executorBin is the real executor, built once for the integration tests.
var executorBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "ejc-sched-it-")
	if err != nil {
		panic(err)
	}
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..")
	if _, err := testbin.Commands(root, dir, "executor"); err != nil {
		os.RemoveAll(dir)
		panic(err)
	}
	executorBin = filepath.Join(dir, "executor")
	code := m.Run()
	os.RemoveAll(dir)
	if code == 0 {
		if err := goleak.Find(); err != nil { // a loop that outlives its test
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// TestLaunchPipelineAgainstEmbeddedMaster runs the whole launch path over
// real HTTP: the scheduler's loop and Mesos client against the embedded
// master+agent, which starts the real executor, which runs the shards.
func TestLaunchPipelineAgainstEmbeddedMaster(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cluster, log, work := startEmbeddedMaster(ctx, t)

	out := t.TempDir()
	script := filepath.Join(t.TempDir(), "run.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho \"$ELASTICJOB_SHARDING_ITEM $ELASTICJOB_SHARDING_PARAMETER\" > "+out+"/$ELASTICJOB_SHARDING_ITEM\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	kv := memory.New()
	defer kv.Close()
	reg := registry.New(kv)
	a := app.Default()
	a.AppName, a.AppURL, a.BootstrapScript, a.CPUCount, a.MemoryMB = "it-app", "file://"+script, "run.sh", 0.1, 32
	j := jobs.Default()
	j.JobName, j.AppName, j.ShardingTotalCount, j.CPUCount, j.MemoryMB = "it-job", "it-app", 3, 0.1, 16
	j.ShardingItemParameters = "0=a,1=b,2=c"
	if err := reg.Config().AddApp(ctx, a); err != nil {
		t.Fatal(err)
	}
	if err := reg.Config().AddJob(ctx, j); err != nil {
		t.Fatal(err)
	}

	// Without checkpointing the cluster's Close stops the executor and
	// waits for it; a checkpointing framework's executor would outlive the
	// test (the agent leaves it for its next start), as goleak saw.
	client := mesos.New(mesos.Config{URL: cluster.URL(), Logger: log, NoCheckpoint: true})
	sched := scheduler.New(scheduler.Deps{Registry: reg, Driver: client, Clock: clock.Real{}, Log: log,
		Options: scheduler.Options{ExecutorCommand: executorBin, Location: time.UTC, OfferHold: time.Second,
			ExecutorEnv: map[string]string{"ELASTICJOB_CACHE_DIR": filepath.Join(work, "cache")}}})
	go sched.Run(ctx)
	go client.Run(ctx, sched)

	if _, err := reg.Work().Trigger(ctx, "it-job", false, time.Now()); err != nil {
		t.Fatal(err)
	}
	sched.Wake()
	want := map[string]string{"0": "0 a\n", "1": "1 b\n", "2": "2 c\n"}
	waitFor(t, func() bool {
		for f, body := range want {
			if b, err := os.ReadFile(filepath.Join(out, f)); err != nil || string(b) != body {
				return false
			}
		}
		return true
	}, "every shard ran with its parameter")
	waitFor(t, func() bool {
		all, err := reg.Work().RunningTasks(ctx)
		return err == nil && len(all) == 0
	}, "the finished tasks left the running state")
	if fw, _ := reg.Term().FrameworkID(ctx); fw == "" {
		t.Fatal("framework id not persisted")
	}
}

// waitFor polls cond (real processes are involved) and fails at a
// generous bound; it never asserts on how long things took.
func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// startEmbeddedMaster starts the embedded master and agent (2 CPUs, 2 GB)
// in a temporary work directory, stopped at the test's end; log is quiet
// unless -v. It returns the cluster, the log and the work directory.
func startEmbeddedMaster(ctx context.Context, t *testing.T) (*embedded.Cluster, *slog.Logger, string) {
	t.Helper()
	log := slog.New(slog.DiscardHandler)
	if testing.Verbose() {
		log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	work := t.TempDir()
	cluster, err := embedded.New(embedded.Config{WorkDir: filepath.Join(work, "mesos"), CPUs: 2, MemMB: 2048, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	if err := cluster.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cluster.Close() })
	return cluster, log, work
}
