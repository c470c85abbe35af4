package scheduler

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/store"
)

// catalogJob registers a job of app "app" through the rig's registry
// without touching the rig's scheduler.
func catalogJob(t *testing.T, r *rig, name string, shards int) jobs.Config {
	t.Helper()
	j := jobs.Default()
	j.JobName, j.AppName, j.CPUCount, j.MemoryMB, j.ShardingTotalCount = name, "app", 0.5, 64, shards
	if err := r.reg.Config().AddJob(r.ctx, j); err != nil {
		t.Fatal(err)
	}
	return j
}

func mustSync(t *testing.T, c *Catalog, ctx context.Context) int {
	t.Helper()
	if err := c.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	return c.lastSynced()
}

// A Sync decodes only the entries whose stored bytes changed, drops the
// ones gone and reads the flags: a term that takes a catalog kept current
// decodes nothing.
func TestCatalogSyncDecodesOnlyWhatChanged(t *testing.T) {
	r := newRig(t)
	r.addApp("app", 4, 4096)
	for _, n := range []string{"a", "b", "c"} {
		catalogJob(t, r, n, 2)
	}
	c := NewCatalog(r.reg)
	if n := mustSync(t, c, r.ctx); n != 4 {
		t.Fatalf("first sync decoded %d entries, want 4 (one app, three jobs)", n)
	}
	if n := mustSync(t, c, r.ctx); n != 0 {
		t.Fatalf("a sync with nothing changed decoded %d entries", n)
	}

	b, _ := c.Job("b")
	b.ShardingTotalCount = 7
	if err := r.reg.Config().UpdateJob(r.ctx, b); err != nil {
		t.Fatal(err)
	}
	if err := r.reg.Config().DeleteJob(r.ctx, "c"); err != nil {
		t.Fatal(err)
	}
	catalogJob(t, r, "d", 1)
	if err := r.reg.Config().SetDisabled(r.ctx, "job", "a", true, t0); err != nil {
		t.Fatal(err)
	}
	if n := mustSync(t, c, r.ctx); n != 2 {
		t.Fatalf("sync decoded %d entries, want 2 (b updated, d added)", n)
	}
	if got, _ := c.Job("b"); got.ShardingTotalCount != 7 {
		t.Fatalf("b has %d shards, want 7", got.ShardingTotalCount)
	}
	if _, ok := c.Job("c"); ok {
		t.Fatal("c was deleted but the catalog still holds it")
	}
	if _, ok := c.Job("d"); !ok {
		t.Fatal("d was added but the catalog does not hold it")
	}
	if !c.JobDisabled("a") {
		t.Fatal("a was disabled but the catalog does not say so")
	}
	if _, _, why := c.Lookup("a"); why == jobs.Runnable {
		t.Fatal("a disabled job is runnable")
	}
}

// A job deleted and registered again under its name (its stored version
// may start over) is decoded anew: the catalog compares what is stored,
// not versions.
func TestCatalogSyncSeesARegistrationAgain(t *testing.T) {
	r := newRig(t)
	r.addApp("app", 4, 4096)
	catalogJob(t, r, "a", 2)
	c := NewCatalog(r.reg)
	mustSync(t, c, r.ctx)
	if err := r.reg.Config().DeleteJob(r.ctx, "a"); err != nil {
		t.Fatal(err)
	}
	catalogJob(t, r, "a", 5)
	if n := mustSync(t, c, r.ctx); n != 1 {
		t.Fatalf("sync decoded %d entries, want 1", n)
	}
	if got, _ := c.Job("a"); got.ShardingTotalCount != 5 {
		t.Fatalf("a has %d shards, want the new registration's 5", got.ShardingTotalCount)
	}
}

// A stored job whose name differs from its key (written by some other
// tool; the API never stores one) is held once, under its key: the name a
// change carries and the queues' paths use, whether a Sync or a reload
// decoded it.
func TestCatalogHoldsAJobUnderItsKey(t *testing.T) {
	r := newRig(t)
	r.addApp("app", 4, 4096)
	j := jobs.Default()
	j.JobName, j.AppName, j.CPUCount, j.MemoryMB, j.ShardingTotalCount = "other", "app", 0.5, 64, 2
	b, err := json.Marshal(j)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.kv.Commit(r.ctx, store.Put(registry.JobsPath+"/a", b)); err != nil {
		t.Fatal(err)
	}
	c := NewCatalog(r.reg)
	mustSync(t, c, r.ctx)
	if err := c.apply(r.ctx, registry.ConfigChange{Kind: registry.ConfigJob, Name: "a"}); err != nil {
		t.Fatal(err)
	}
	if n := mustSync(t, c, r.ctx); n != 0 {
		t.Fatalf("a sync after the reload decoded %d entries, want 0", n)
	}
	if got, ok := c.Job("a"); !ok || got.JobName != "other" {
		t.Fatalf("under its key the catalog holds %+v (%v), want the stored config", got.JobName, ok)
	}
	if names := c.JobNames(); len(names) != 1 || names[0] != "a" {
		t.Fatalf("the catalog holds jobs %v, want [a]", names)
	}
}

// A single change applied (a reload) records what it decoded, so a later
// Sync neither decodes it again nor keeps a value the registry no longer
// holds when the job changes back.
func TestCatalogReloadKeepsSyncCurrent(t *testing.T) {
	r := newRig(t)
	r.addApp("app", 4, 4096)
	j := catalogJob(t, r, "a", 2)
	c := NewCatalog(r.reg)
	mustSync(t, c, r.ctx)
	j.ShardingTotalCount = 3
	if err := r.reg.Config().UpdateJob(r.ctx, j); err != nil {
		t.Fatal(err)
	}
	if err := c.apply(r.ctx, registry.ConfigChange{Kind: registry.ConfigJob, Name: "a"}); err != nil {
		t.Fatal(err)
	}
	if n := mustSync(t, c, r.ctx); n != 0 {
		t.Fatalf("sync after a reload decoded %d entries, want 0", n)
	}
	j.ShardingTotalCount = 2 // back to the bytes first synced; the change is not applied
	if err := r.reg.Config().UpdateJob(r.ctx, j); err != nil {
		t.Fatal(err)
	}
	mustSync(t, c, r.ctx)
	if got, _ := c.Job("a"); got.ShardingTotalCount != 2 {
		t.Fatalf("a has %d shards, want 2", got.ShardingTotalCount)
	}
}

// While a term holds the catalog, a standby's change is not applied (the
// term's loop applies it with its reaction); release syncs what changed
// meanwhile and hands the catalog back.
func TestCatalogTakeHoldsStandbyChanges(t *testing.T) {
	r := newRig(t)
	r.addApp("app", 4, 4096)
	j := catalogJob(t, r, "a", 2)
	c := NewCatalog(r.reg)
	ch := registry.ConfigChange{Kind: registry.ConfigJob, Name: "a"}
	if err := c.standby(r.ctx, registry.ConfigChange{Kind: registry.ConfigAll}); err != nil {
		t.Fatal(err)
	}
	c.take()
	j.ShardingTotalCount = 4
	if err := r.reg.Config().UpdateJob(r.ctx, j); err != nil {
		t.Fatal(err)
	}
	if err := c.standby(r.ctx, ch); err != nil {
		t.Fatal(err)
	}
	if got, _ := c.Job("a"); got.ShardingTotalCount != 2 {
		t.Fatalf("a standby change was applied while a term held the catalog (%d shards)", got.ShardingTotalCount)
	}
	if err := c.release(r.ctx); err != nil {
		t.Fatal(err)
	}
	if got, _ := c.Job("a"); got.ShardingTotalCount != 4 {
		t.Fatalf("after release a has %d shards, want 4", got.ShardingTotalCount)
	}
	j.ShardingTotalCount = 6
	if err := r.reg.Config().UpdateJob(r.ctx, j); err != nil {
		t.Fatal(err)
	}
	if err := c.standby(r.ctx, ch); err != nil {
		t.Fatal(err)
	}
	if got, _ := c.Job("a"); got.ShardingTotalCount != 6 {
		t.Fatalf("a standby change after release was not applied (%d shards)", got.ShardingTotalCount)
	}
}

// A scheduler given the instance's catalog takes it for its term, syncs
// it (decoding only what changed since it was kept current) and hands it
// back when the term ends.
func TestSchedulerTakesTheWarmCatalog(t *testing.T) {
	r := newRig(t)
	r.addApp("app", 4, 4096)
	catalogJob(t, r, "a", 2)
	warm := NewCatalog(r.reg)
	mustSync(t, warm, r.ctx)
	catalogJob(t, r, "b", 1) // registered after the standby's last change applied

	s := New(Deps{Registry: r.reg, Driver: r.drv, Clock: r.clk, Catalog: warm})
	if s.Catalog() != warm {
		t.Fatal("the scheduler does not use the catalog it was given")
	}
	ctx, cancel := context.WithCancel(r.ctx)
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	select {
	case <-s.ready:
	case err := <-done:
		t.Fatalf("Run ended before loading: %v", err)
	}
	warm.wmu.Lock()
	taken, decoded := warm.taken, warm.synced
	warm.wmu.Unlock()
	if !taken {
		t.Fatal("the term does not hold the catalog")
	}
	if decoded != 1 {
		t.Fatalf("the term's sync decoded %d entries, want 1 (b)", decoded)
	}
	if _, ok := warm.Job("b"); !ok {
		t.Fatal("the term's catalog misses b")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	warm.wmu.Lock()
	taken = warm.taken
	warm.wmu.Unlock()
	if taken {
		t.Fatal("the catalog is still held after the term ended")
	}
}

// A cron is parsed once per expression: the jobs that share it share the
// schedule, which a catalog's decode parses ahead of a term's producer.
func TestCatalogSchedulesParsedOnce(t *testing.T) {
	r := newRig(t)
	r.addApp("app", 4, 4096)
	for _, n := range []string{"a", "b"} {
		j := jobs.Default()
		j.JobName, j.AppName, j.CPUCount, j.MemoryMB, j.ShardingTotalCount, j.Cron = n, "app", 0.5, 64, 1, "7 * * * * ?"
		if err := r.reg.Config().AddJob(r.ctx, j); err != nil {
			t.Fatal(err)
		}
	}
	c := NewCatalog(r.reg)
	mustSync(t, c, r.ctx)
	c.smu.Lock()
	n := len(c.schedules)
	c.smu.Unlock()
	if n != 1 {
		t.Fatalf("the catalog holds %d parsed crons after its load, want 1", n)
	}
	a, _ := c.Job("a")
	b, _ := c.Job("b")
	sa, err := c.Plan(a, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	sb, _ := c.Plan(b, nil, 0)
	if sa == nil || sa.Crons[0] != sb.Crons[0] {
		t.Fatal("two jobs of one cron do not share its parsed schedule")
	}
	if got := sa.Next(t0, time.UTC); !got.Equal(t0.Add(7 * time.Second)) {
		t.Fatalf("next fire %v, want %v", got, t0.Add(7*time.Second))
	}
	none := jobs.Default()
	if s, err := c.Plan(none, nil, 0); s != nil || err != nil {
		t.Fatalf("a job without cron: %v, %v", s, err)
	}
}

// Between terms the catalog keeps the ready queue decoded (warmQueues,
// every queuesEvery from Follow), so a term's first round decodes only
// what changed since; while a term holds it, the memo is the term's.
func TestCatalogKeepsTheQueuesWarmBetweenTerms(t *testing.T) {
	r := newRig(t)
	r.addApp("app", 4, 4096)
	catalogJob(t, r, "a", 1)
	catalogJob(t, r, "b", 1)
	if _, err := r.reg.Work().Trigger(r.ctx, "a", false, t0); err != nil {
		t.Fatal(err)
	}
	c := NewCatalog(r.reg)
	if err := c.warmQueues(r.ctx); err != nil {
		t.Fatal(err)
	}
	if n := c.QueueMemo().ReadyHeld(); n != 1 {
		t.Fatalf("the memo holds %d ready entries, want 1", n)
	}
	c.take()
	if _, err := r.reg.Work().Trigger(r.ctx, "b", false, t0); err != nil {
		t.Fatal(err)
	}
	if err := c.warmQueues(r.ctx); err != nil {
		t.Fatal(err)
	}
	if n := c.QueueMemo().ReadyHeld(); n != 1 {
		t.Fatalf("a standby read the queues into the memo of a term (%d entries)", n)
	}
	s := New(Deps{Registry: r.reg, Driver: r.drv, Clock: r.clk, Catalog: c})
	if s.queues.memo != c.QueueMemo() {
		t.Fatal("the term does not read the queues through the instance's memo")
	}
	if err := c.release(r.ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.warmQueues(r.ctx); err != nil {
		t.Fatal(err)
	}
	if n := c.QueueMemo().ReadyHeld(); n != 2 {
		t.Fatalf("after the term the memo holds %d ready entries, want 2", n)
	}
}
