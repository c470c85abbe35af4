package scheduler

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/store"
	"github.com/ejcloud/elasticjob/store/memory"
	"github.com/ejcloud/elasticjob/task"
)

// quorumKV is a store that can lose its quorum as etcd does: while lost,
// a commit times out with its outcome unknown and lands when the quorum
// comes back (it was proposed before), and a read fails unless reads
// stay (a read served before the loss was noticed).
type quorumKV struct {
	store.KV
	mu        sync.Mutex
	lost      bool
	readsStay bool
	held      [][]store.Op
}

var errTimedOut = errors.New("etcdserver: request timed out")

func (k *quorumKV) lose() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.lost = true
}

// heal brings the quorum back: the commits held land in their order.
func (k *quorumKV) heal(ctx context.Context) error {
	k.mu.Lock()
	held := k.held
	k.lost, k.held = false, nil
	k.mu.Unlock()
	for _, ops := range held {
		if err := k.KV.Commit(ctx, ops...); err != nil && !errors.Is(err, store.ErrConflict) {
			return err
		}
	}
	return nil
}

func (k *quorumKV) Commit(ctx context.Context, ops ...store.Op) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.lost {
		k.held = append(k.held, ops)
		return errTimedOut
	}
	return k.KV.Commit(ctx, ops...)
}

func (k *quorumKV) Get(ctx context.Context, path string) (store.Node, error) {
	k.mu.Lock()
	lost := k.lost && !k.readsStay
	k.mu.Unlock()
	if lost {
		return store.Node{}, errTimedOut
	}
	return k.KV.Get(ctx, path)
}

// A launch whose ACCEPT the fence refused as the store lost its quorum
// (the term's lease could not be proven) is rolled back as one: either
// the execution is queued again serving its instant, or its running entry
// stays, STAGING, for the reconciliation to run it again (a task the
// engine never got). Rolled back in two commits, the removal of the
// running entry landed when the quorum came back while the re-queue,
// refused, never did: a misfire=false fire neither ran nor was accounted
// for.
func TestRollbackDuringAQuorumLossLosesNoExecution(t *testing.T) {
	for _, readsStay := range []bool{false, true} {
		t.Run(fmt.Sprintf("reads_stay=%v", readsStay), func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			t.Cleanup(cancel)
			mem := memory.New()
			t.Cleanup(func() { mem.Close() })
			kv := &quorumKV{KV: mem, readsStay: readsStay}
			r := &rig{t: t, ctx: ctx, reg: registry.New(kv, registry.Options{Damage: registry.NewDamage(nil)}), kv: kv, drv: newFakeDriver(), clk: clock.NewFake(t0)}
			r.sched = New(Deps{Registry: r.reg, Driver: r.drv, Clock: r.clk, Options: Options{ExecutorCommand: "/bin/executor", Location: time.UTC}})
			r.sched.st.subscribed = true
			r.sched.recon.async = inline
			r.addApp("app", 1, 128)
			r.addJob(func(j *jobs.Config) { j.JobName = "c"; j.Cron = "0/6 * * * * ?"; j.ShardingTotalCount = 1 })
			fired := runProducer(t, r)
			armedAt(t, r, t0.Add(6*time.Second))
			r.clk.Advance(6 * time.Second)
			nextFire(t, fired)

			r.drv.acceptErr = fmt.Errorf("ACCEPT %w: %w", ErrRefused, errors.New("the term's lease is not proven"))
			r.drv.acceptHook = kv.lose
			r.offer("o1", 4, 1024)
			r.sched.launcher.round(r.ctx)
			if err := kv.heal(ctx); err != nil {
				t.Fatal(err)
			}

			want := t0.Add(6 * time.Second)
			rd, queued := r.readyOf("c"), false
			if rd.Count > 0 {
				if !rd.FirstNominal().Equal(want) {
					t.Fatalf("queued again serving %v, want %v: %+v", rd.FirstNominal(), want, rd)
				}
				queued = true
			}
			run := r.running("c")
			if e, ok := run[0]; ok && !e.Nominal.Equal(want) {
				t.Fatalf("running entry serves %v, want %v", e.Nominal, want)
			}
			switch {
			case queued && len(run) > 0:
				t.Fatalf("the execution both queued again and left running: %+v, %+v", rd, run)
			case !queued && len(run) == 0:
				t.Fatal("the execution of 6 s is gone: neither queued again nor left for the reconciliation")
			case queued:
				return
			}
			// The engine never got the task: the reconciliation hears it
			// lost, and it runs again serving its instant.
			if err := r.sched.status.handle(r.ctx, r.reg, engine.Status{TaskID: run[0].TaskID, AgentID: "agent-1", State: task.Lost,
				Source: task.SourceMaster, Reason: task.ReasonReconciliation}); err != nil {
				t.Fatal(err)
			}
			fo, err := r.reg.Work().FailoverQueue(r.ctx)
			if err != nil || len(fo) != 1 || !fo[0].Nominal.Equal(want) {
				t.Fatalf("failover queue %+v (%v), want the execution run again serving %v", fo, err, want)
			}
		})
	}
}
