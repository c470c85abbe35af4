package registry

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/queue"
	"github.com/ejcloud/elasticjob/store"
	"github.com/ejcloud/elasticjob/store/etcd"
	"github.com/ejcloud/elasticjob/store/etcd/etcdtest"
	"github.com/ejcloud/elasticjob/store/memory"
)

// landFirst is a store whose next commit lands after what before does:
// writes of others that reach the store between a writer's read and its
// commit.
type landFirst struct {
	store.KV
	before func()
}

func (k *landFirst) Commit(ctx context.Context, ops ...store.Op) error {
	if f := k.before; f != nil {
		k.before = nil
		f()
	}
	return k.KV.Commit(ctx, ops...)
}

// TestAnEntryMadeAnewIsNotTakenForTheOneRead: a trigger read a job's
// ready entry (one execution, serving a cron instant), and before its
// commit landed that execution launched (the entry went) and the next
// fire made the entry anew. The store numbers a node made anew from its
// first version again, so the trigger's write, conditional on the version
// it read, found the version it expected on another entry: written, it
// put back the execution that had launched (it ran a second time, serving
// its instant again) and dropped the fire (lost). The write must fail and
// be made again from the entry as it is.
func TestAnEntryMadeAnewIsNotTakenForTheOneRead(t *testing.T) {
	ctx := context.Background()
	kv := memory.New()
	t.Cleanup(func() { kv.Close() })
	r := New(kv)
	a := app.Default()
	a.AppName, a.AppURL, a.BootstrapScript = "app", "http://h/a.tgz", "bin/start.sh"
	if err := r.Config().AddApp(ctx, a); err != nil {
		t.Fatal(err)
	}
	j := jobs.Default()
	j.JobName, j.AppName = "j", "app"
	if err := r.Config().AddJob(ctx, j); err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 11, 28, 10, 44, 0, 0, time.UTC)
	caughtUp, next := t0.Add(6*time.Second), t0.Add(9*time.Second)
	if _, err := r.Work().TriggerServing(ctx, "j", false, t0.Add(7756*time.Millisecond), ByCatchUp, caughtUp); err != nil {
		t.Fatal(err)
	}
	read, ok, err := r.Work().ReadyOf(ctx, "j")
	if err != nil || !ok {
		t.Fatalf("the catch-up's entry: %v %v", ok, err)
	}
	others := func() {
		if err := r.Change().Dequeue(read, t0.Add(8270*time.Millisecond)).Commit(ctx); err != nil { // it launches
			t.Fatal(err)
		}
		if _, err := r.Work().TriggerFires(ctx, map[string]CronFire{"j": {At: next, Instant: next}}, next, nil); err != nil { // the next fire
			t.Fatal(err)
		}
	}
	trigger := New(&landFirst{KV: kv, before: others})
	run := queue.PendingRun{JobParameter: "p", IdempotencyKey: "k25"}
	if _, err := trigger.Work().TriggerRun(ctx, "j", run, t0.Add(8*time.Second)); err != nil {
		t.Fatal(err)
	}
	rd, ok, err := r.Work().ReadyOf(ctx, "j")
	if err != nil || !ok {
		t.Fatalf("entry: %v %v", ok, err)
	}
	if rd.Count != 2 || len(rd.Runs) != 1 || rd.Runs[0].IdempotencyKey != "k25" {
		t.Fatalf("entry %+v, want the fire and the triggered run", rd)
	}
	if len(rd.Nominal) != 1 || !rd.Nominal[0].At.Equal(next) || !rd.Since.Equal(next) {
		t.Errorf("entry serves %+v since %v, want the fire of %v alone (the catch-up's execution launched)", rd.Nominal, rd.Since, next)
	}
}

// abaStores runs f on every store (eachStore's, and etcd's): the
// generation of a ready entry must hold on each, whatever it numbers.
func abaStores(t *testing.T, f func(t *testing.T, kv store.KV)) {
	eachStore(t, f)
	t.Run("etcd", func(t *testing.T) {
		c := etcdtest.Start(t, 1)
		kv, err := etcd.Open(context.Background(), etcd.Options{Client: c.Client()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { kv.Close() })
		f(t, kv)
	})
}

// abaJob registers job "j" (misfire as given) in kv at t0, its gate open
// from then on.
func abaJob(t *testing.T, kv store.KV, misfire bool, t0 time.Time) *Registry {
	t.Helper()
	ctx := context.Background()
	r := New(kv)
	a := app.Default()
	a.AppName, a.AppURL, a.BootstrapScript = "app", "http://h/a.tgz", "bin/start.sh"
	if err := r.Config().AddApp(ctx, a); err != nil {
		t.Fatal(err)
	}
	j := jobs.Default()
	j.JobName, j.AppName, j.Misfire = "j", "app", misfire
	if err := r.Config().AddJobAt(ctx, j, t0); err != nil {
		t.Fatal(err)
	}
	return r
}

// cronOf is job j's cron fire of instant at (misfire=true but in
// TestAPlainCatchUpDoesNotCollapseIntoARun).
func cronOf(at time.Time) map[string]CronFire {
	return map[string]CronFire{"j": {Misfire: true, At: at, Instant: at}}
}

// servesOnly fails unless j's entry holds, in order, executions serving
// exactly the instants want (zero: none recorded).
func servesOnly(t *testing.T, r *Registry, want ...time.Time) queue.Ready {
	t.Helper()
	rd, ok, err := r.Work().ReadyOf(context.Background(), "j")
	if err != nil || !ok {
		t.Fatalf("entry: %v %v", ok, err)
	}
	got := rd.NominalInstants()
	if rd.Count != len(want) || len(got) != len(want) {
		t.Fatalf("entry %+v serves %v, want %v", rd, got, want)
	}
	for i := range want {
		if !got[i].Equal(want[i]) {
			t.Fatalf("entry %+v serves %v, want %v", rd, got, want)
		}
	}
	return rd
}

// launchThenFire is what lands between a writer's read and its commit:
// the execution the entry holds launches (the entry goes, taken at read)
// and the fire of next makes the entry anew.
func launchThenFire(t *testing.T, r *Registry, read, next time.Time) func() {
	return func() {
		ctx := context.Background()
		rd, _, err := r.Work().ReadyOf(ctx, "j")
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Change().Dequeue(rd, read).Commit(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Work().TriggerFires(ctx, cronOf(next), next, nil); err != nil {
			t.Fatal(err)
		}
	}
}

// TestARequeueIsNotTakenForTheOneRead: a launch rolled back puts its
// execution back on the entry it reads; when the execution that entry
// held launched and the next fire made the entry anew before the
// re-queue's commit, the re-queue must not write the entry it read back
// over the new one (the launched execution would run again, the fire be
// lost).
func TestARequeueIsNotTakenForTheOneRead(t *testing.T) {
	abaStores(t, func(t *testing.T, kv store.KV) {
		ctx := context.Background()
		t0 := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
		r := abaJob(t, kv, true, t0)
		back, read, next := t0.Add(time.Second), t0.Add(2*time.Second), t0.Add(3*time.Second)
		if _, err := r.Work().TriggerFires(ctx, cronOf(read), read, nil); err != nil {
			t.Fatal(err)
		}
		requeue := New(&landFirst{KV: kv, before: launchThenFire(t, r, read, next)})
		if err := requeue.Work().Requeue(ctx, nil, "j", nil, ByCron, true, back, back, read, nil); err != nil {
			t.Fatal(err)
		}
		servesOnly(t, r, back, next)
	})
}

// TestACatchUpIsNotTakenForTheOneRead: a takeover's catch-up adds to the
// entry it reads; an entry made anew before its commit must not be taken
// for it.
func TestACatchUpIsNotTakenForTheOneRead(t *testing.T) {
	abaStores(t, func(t *testing.T, kv store.KV) {
		ctx := context.Background()
		t0 := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
		r := abaJob(t, kv, true, t0)
		read, missed, next := t0.Add(time.Second), t0.Add(2*time.Second), t0.Add(3*time.Second)
		if _, err := r.Work().TriggerFires(ctx, cronOf(read), read, nil); err != nil {
			t.Fatal(err)
		}
		catchUp := New(&landFirst{KV: kv, before: launchThenFire(t, r, read, next)})
		m := map[string]Missed{"j": {Fires: 1, Misfire: true, After: read, Instants: []time.Time{missed}}}
		if err := catchUp.Schedule().TriggerMissed(ctx, m, missed); err != nil {
			t.Fatal(err)
		}
		servesOnly(t, r, next, missed)
	})
}

// TestALaunchIsNotTakenFromAnEntryMadeAnew: the launcher takes an
// execution from the entry as its view holds it; when that entry went
// (cleared) and the next fire made it anew at the same version, the take
// must fail rather than delete the new entry (its fire lost) and launch
// what was cleared.
func TestALaunchIsNotTakenFromAnEntryMadeAnew(t *testing.T) {
	abaStores(t, func(t *testing.T, kv store.KV) {
		ctx := context.Background()
		t0 := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
		r := abaJob(t, kv, true, t0)
		read, next := t0.Add(time.Second), t0.Add(2*time.Second)
		for _, count := range []int{1, 2} { // the take deletes the entry, or rewrites it
			if err := r.Work().ClearReady(ctx, "j"); err != nil {
				t.Fatal(err)
			}
			for k := range count {
				at := read.Add(time.Duration(k) * time.Millisecond)
				if _, err := r.Work().TriggerFires(ctx, cronOf(at), at, nil); err != nil {
					t.Fatal(err)
				}
			}
			q, err := r.Work().ReadyQueue(ctx) // the launcher's view
			if err != nil || len(q) != 1 {
				t.Fatalf("queue %+v %v", q, err)
			}
			if err := r.Work().ClearReady(ctx, "j"); err != nil {
				t.Fatal(err)
			}
			for k := range count {
				at := next.Add(time.Duration(k) * time.Millisecond)
				if _, err := r.Work().TriggerFires(ctx, cronOf(at), at, nil); err != nil {
					t.Fatal(err)
				}
			}
			if err := r.Change().Dequeue(q[0], next).Commit(ctx); !errors.Is(err, ErrConflict) {
				t.Fatalf("a take of %d from the entry cleared: %v, want a conflict", count, err)
			}
			want := []time.Time{next}
			if count == 2 {
				want = append(want, next.Add(time.Millisecond))
			}
			servesOnly(t, r, want...)
		}
	})
}

// TestAnEntryWithoutAGenerationIsTakenUp: an entry written before
// generations (the original's decimal count) is read and taken from as
// before, and the next write that reads it records its generation.
func TestAnEntryWithoutAGenerationIsTakenUp(t *testing.T) {
	ctx := context.Background()
	kv := memory.New()
	t.Cleanup(func() { kv.Close() })
	t0 := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	r := abaJob(t, kv, true, t0)
	if err := kv.Commit(ctx, store.Put(ReadyPath+"/j", []byte("2"))); err != nil {
		t.Fatal(err)
	}
	rd, ok, err := r.Work().ReadyOf(ctx, "j")
	if err != nil || !ok || rd.Count != 2 || rd.Gen != 0 {
		t.Fatalf("legacy entry %+v %v %v", rd, ok, err)
	}
	if err := r.Change().Dequeue(rd, t0).Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Work().TriggerRun(ctx, "j", queue.PendingRun{JobParameter: "p"}, t0); err != nil {
		t.Fatal(err)
	}
	rd, _, _ = r.Work().ReadyOf(ctx, "j")
	g, err := kv.Get(ctx, readyGenOf("j"))
	if err != nil || rd.Count != 2 || rd.Gen != g.Version+1 {
		t.Fatalf("entry %+v, generation node %+v %v: want the entry's generation recorded", rd, g, err)
	}
	for range 2 {
		rd, _, _ = r.Work().ReadyOf(ctx, "j")
		if err := r.Change().Dequeue(rd, t0).Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if after, err := kv.Get(ctx, readyGenOf("j")); err != nil || after.Version != g.Version+1 {
		t.Fatalf("generation node %+v %v after the entry went, want version %d", after, err, g.Version+1)
	}
}

// TestAPlainCatchUpDoesNotCollapseIntoARun: a misfire=false job's
// catch-up (or fire) finding only a triggered run pending (its own
// parameter, serving no instant) is queued behind it: collapsed into the
// run, its instant would be served by nothing.
func TestAPlainCatchUpDoesNotCollapseIntoARun(t *testing.T) {
	ctx := context.Background()
	kv := memory.New()
	t.Cleanup(func() { kv.Close() })
	t0 := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	r := abaJob(t, kv, false, t0)
	if _, err := r.Work().TriggerRun(ctx, "j", queue.PendingRun{JobParameter: "p"}, t0.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	missed := t0.Add(2 * time.Second)
	m := map[string]Missed{"j": {Fires: 1, After: t0, Instants: []time.Time{missed}}}
	if err := r.Schedule().TriggerMissed(ctx, m, missed); err != nil {
		t.Fatal(err)
	}
	rd, _, _ := r.Work().ReadyOf(ctx, "j")
	if rd.Count != 2 || len(rd.Runs) != 1 {
		t.Fatalf("entry %+v: want the run and the catch-up's execution", rd)
	}
	if got := rd.NominalInstants(); len(got) != 1 || !got[0].Equal(missed) {
		t.Fatalf("entry serves %v, want %v", got, missed)
	}
	// A fire of the next instant collapses into the catch-up's execution.
	at := missed.Add(time.Second)
	if _, err := r.Work().TriggerFires(ctx, map[string]CronFire{"j": {At: at, Instant: at}}, at, nil); err != nil {
		t.Fatal(err)
	}
	if rd, _, _ := r.Work().ReadyOf(ctx, "j"); rd.Count != 2 {
		t.Fatalf("entry %+v after the next fire: want it collapsed into the plain execution pending", rd)
	}
}

// TestARepairedReadyEntryHasTheRegistrysGeneration: a damaged ready entry
// replaced through the repair API keeps no generation of the replacement's
// (a wrong one would fail every later write's check): the next write
// records it. Removed, its generation ends.
func TestARepairedReadyEntryHasTheRegistrysGeneration(t *testing.T) {
	ctx := context.Background()
	kv := memory.New()
	t.Cleanup(func() { kv.Close() })
	t0 := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	r := abaJob(t, kv, true, t0)
	p := ReadyPath + "/j"
	if err := kv.Commit(ctx, store.Put(p, []byte("{damaged"))); err != nil {
		t.Fatal(err)
	}
	if err := r.RepairDamaged(ctx, p, []byte(`{"count":1,"since":"2026-11-28T10:00:00Z","gen":7}`)); err != nil {
		t.Fatal(err)
	}
	rd, ok, err := r.Work().ReadyOf(ctx, "j")
	if err != nil || !ok || rd.Count != 1 || rd.Gen != 0 {
		t.Fatalf("repaired entry %+v %v %v: want no generation", rd, ok, err)
	}
	if _, err := r.Work().TriggerRun(ctx, "j", queue.PendingRun{JobParameter: "p"}, t0); err != nil {
		t.Fatal(err)
	}
	if rd, _, _ = r.Work().ReadyOf(ctx, "j"); rd.Count != 2 || rd.Gen != 1 {
		t.Fatalf("entry %+v: want its generation recorded", rd)
	}
	if err := kv.Commit(ctx, store.Put(p, []byte("{damaged"))); err != nil {
		t.Fatal(err)
	}
	if err := r.RemoveDamaged(ctx, p); err != nil {
		t.Fatal(err)
	}
	if g, err := kv.Get(ctx, readyGenOf("j")); err != nil || g.Version != 1 {
		t.Fatalf("generation node %+v %v: want it moved on with the entry removed", g, err)
	}
}
