package scheduler

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/internal/testproxy"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/store"
	"github.com/ejcloud/elasticjob/store/cache"
	"github.com/ejcloud/elasticjob/store/etcd"
	"github.com/ejcloud/elasticjob/store/etcd/etcdtest"
	"github.com/ejcloud/elasticjob/store/sqlite"
	zkstore "github.com/ejcloud/elasticjob/store/zk"
)

// landedButFailedKV applies the first fire commit (one that writes a ready
// entry) and then fails it with store.ErrUnavailable: the commit landed,
// its reply was lost (an etcd request that timed out after it applied, a
// ZooKeeper connection lost during the multi).
type landedButFailedKV struct {
	store.KV
	armed atomic.Bool
}

func (k *landedButFailedKV) Commit(ctx context.Context, ops ...store.Op) error {
	fire := slices.ContainsFunc(ops, func(op store.Op) bool { return strings.HasPrefix(op.Path, registry.ReadyPath+"/") })
	if err := k.KV.Commit(ctx, ops...); err != nil || !fire || !k.armed.CompareAndSwap(true, false) {
		return err
	}
	return fmt.Errorf("store: commit: %w (the reply was lost)", store.ErrUnavailable)
}

// eachBackend runs f on the stores the scheduler runs on, each under a
// landedButFailedKV: the embedded SQLite store, the scheduler's copy
// (store/cache) over it with the failure below the copy, etcd (one
// member) and ZooKeeper (EJ_TEST_ZK).
func eachBackend(t *testing.T, f func(t *testing.T, kv store.KV, fail *landedButFailedKV)) {
	openSQLite := func(t *testing.T) store.KV {
		kv, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "registry.db"), sqlite.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { kv.Close() })
		return kv
	}
	t.Run("sqlite", func(t *testing.T) {
		fail := &landedButFailedKV{KV: openSQLite(t)}
		f(t, fail, fail)
	})
	t.Run("cache over sqlite", func(t *testing.T) {
		fail := &landedButFailedKV{KV: openSQLite(t)}
		kv, err := cache.Open(context.Background(), fail, cache.Options{Roots: []string{"/config", "/state"}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { kv.Close() })
		f(t, kv, fail)
	})
	t.Run("etcd", func(t *testing.T) {
		if testing.Short() {
			t.Skip("starts an etcd member")
		}
		c := etcdtest.Start(t, 1)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		kv, err := etcd.Open(ctx, etcd.Options{Endpoints: c.Endpoints(), Prefix: "/scheduler-test"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { kv.Close() })
		fail := &landedButFailedKV{KV: kv}
		f(t, fail, fail)
	})
	t.Run("zookeeper", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		kv, err := zkstore.Open(ctx, zkstore.Options{Servers: strings.Split(testproxy.ZK(t), ","),
			Namespace: fmt.Sprintf("ejtest/firecommit-%d", time.Now().UnixNano())})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { kv.Close() })
		fail := &landedButFailedKV{KV: kv}
		f(t, fail, fail)
	})
}

// TestProducerRunsAFireOnceAfterAnAmbiguousCommit: the producer's fire
// commit lands but fails with an error whose outcome is unknown; the
// producer tries it again, and the misfire=true job has one execution for
// the instant, not two (the retry read the ready entry the first try
// wrote and added the instant again). The next instant fires as usual.
func TestProducerRunsAFireOnceAfterAnAmbiguousCommit(t *testing.T) {
	eachBackend(t, func(t *testing.T, kv store.KV, fail *landedButFailedKV) {
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		r := &rig{t: t, ctx: ctx, reg: registry.New(kv), kv: kv, drv: newFakeDriver(), clk: clock.NewFake(t0)}
		r.sched = New(Deps{Registry: r.reg, Driver: r.drv, Clock: r.clk, Options: Options{ExecutorCommand: "/bin/executor", Location: time.UTC}})
		r.sched.st.subscribed = true
		r.addApp("app", 1, 128)
		r.addJob(func(j *jobs.Config) { j.JobName = "grow"; j.Cron = "0/5 * * * * ?"; j.Misfire = true })
		fired := runProducer(t, r)
		armedAt(t, r, t0.Add(5*time.Second))
		fail.armed.Store(true)
		r.clk.Advance(5 * time.Second)
		if got := retriedUntilFired(t, r, fired); !slices.Equal(got, []string{"grow"}) {
			t.Fatalf("fired %v, want grow", got)
		}
		if fail.armed.Load() {
			t.Fatal("no fire commit failed")
		}
		if c := r.readyCount("grow"); c != 1 {
			t.Fatalf("ready count %d for the instant of 5 s, want 1: the landed try was repeated", c)
		}
		r.clk.Set(t0.Add(10 * time.Second)) // staged ahead by the lead the slow commit left, or at its instant
		nextFire(t, fired)
		if c := r.readyCount("grow"); c != 2 {
			t.Fatalf("ready count %d after the instant of 10 s, want 2", c)
		}
	})
}

// retriedUntilFired moves the fake clock to each retry the producer arms
// (its commit failed, or was refused while a copy of the registry lagged
// behind the store) until its fires are committed.
func retriedUntilFired(t *testing.T, r *rig, fired <-chan []string) []string {
	t.Helper()
	deadline := time.After(20 * time.Second) // failure bound only
	for {
		select {
		case j := <-fired:
			return j
		case <-r.clk.Changed:
			if at, ok := r.clk.Pending(); ok && at.After(r.clk.Now()) && at.Sub(r.clk.Now()) <= commitRetryMax {
				r.clk.Set(at)
			}
		case <-deadline:
			t.Fatal("the fire never committed")
			return nil
		}
	}
}
