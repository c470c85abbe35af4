package scheduler

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/store"
	"github.com/ejcloud/elasticjob/store/memory"
	"github.com/ejcloud/elasticjob/task"
)

// fakeDriver records every call the scheduler makes to Mesos.
type fakeDriver struct {
	mu         sync.Mutex
	accepts    []acceptCall
	tried      []acceptCall // every Accept, failed ones too
	declines   []declineCall
	suppress   int
	revive     int
	kills      []string
	reconciles [][]engine.TaskRef
	shutdowns  []string
	acceptErr  error
	reconErr   error  // Reconcile's result
	acceptHook func() // called by a failing Accept before it returns
	killHook   func() // called by Kill (the driver's lock is not held)
	calls      chan string
}

type acceptCall struct {
	offers   []string
	launches []engine.TaskLaunch
}

type declineCall struct {
	offers []string
	refuse time.Duration
}

func newFakeDriver() *fakeDriver { return &fakeDriver{calls: make(chan string, 1000)} }

func (d *fakeDriver) note(s string) {
	select {
	case d.calls <- s:
	default:
	}
}

// Capabilities are the Mesos model's: executors shared, one ACCEPT at a time.
func (d *fakeDriver) Capabilities() engine.Capabilities {
	return engine.Capabilities{ExecutorSharing: true}
}

func (d *fakeDriver) NamespaceCaps([]string) map[string]engine.NamespaceCap { return nil }

func (d *fakeDriver) Accept(_ context.Context, ids []string, l []engine.TaskLaunch, _ time.Duration) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.note("accept")
	d.tried = append(d.tried, acceptCall{ids, l})
	if d.acceptErr != nil {
		if d.acceptHook != nil {
			d.acceptHook()
		}
		return d.acceptErr
	}
	d.accepts = append(d.accepts, acceptCall{ids, l})
	return nil
}

func (d *fakeDriver) Decline(_ context.Context, ids []string, r time.Duration) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.declines = append(d.declines, declineCall{ids, r})
	d.note("decline")
	return nil
}

func (d *fakeDriver) Suppress(context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.suppress++
	d.note("suppress")
	return nil
}

func (d *fakeDriver) Revive(context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.revive++
	d.note("revive")
	return nil
}

func (d *fakeDriver) Kill(_ context.Context, taskID, _ string) error {
	d.mu.Lock()
	d.kills = append(d.kills, taskID)
	d.note("kill")
	hook := d.killHook
	d.mu.Unlock()
	if hook != nil {
		hook()
	}
	return nil
}

func (d *fakeDriver) Reconcile(_ context.Context, t []engine.TaskRef) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.reconciles = append(d.reconciles, t)
	d.note("reconcile")
	return d.reconErr
}

func (d *fakeDriver) Shutdown(_ context.Context, executorID, _ string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.shutdowns = append(d.shutdowns, executorID)
	d.note("shutdown")
	return nil
}

// rig is a scheduler over an in-memory store, a fake driver and a fake
// clock, driven synchronously (no loop goroutine) unless a test starts Run.
type rig struct {
	t     testing.TB
	ctx   context.Context
	reg   *registry.Registry
	kv    store.KV // the store under reg (the test's own, for raw writes)
	drv   *fakeDriver
	clk   *clock.Fake
	sched *Scheduler
}

var t0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

func newRig(t testing.TB) *rig {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	kv := memory.New()
	t.Cleanup(func() { kv.Close() })
	r := &rig{t: t, ctx: ctx, reg: registry.New(kv, registry.Options{Damage: registry.NewDamage(nil)}), kv: kv, drv: newFakeDriver(), clk: clock.NewFake(t0)}
	r.sched = New(Deps{Registry: r.reg, Driver: r.drv, Clock: r.clk,
		Options: Options{ExecutorCommand: "/bin/executor", Location: time.UTC}})
	r.sched.st.subscribed = true
	r.sched.recon.async = inline
	return r
}

// readInputs has the producer read the plans' inputs, as a term's start
// does (Producer.Run), for the tests that plan before or without one.
func (r *rig) readInputs() {
	r.t.Helper()
	r.sched.producer.init()
	if _, err := r.sched.producer.refreshInputs(r.ctx); err != nil {
		r.t.Fatal(err)
	}
}

func (r *rig) addApp(name string, cpu, mem float64) {
	r.t.Helper()
	a := app.Default()
	a.AppName, a.AppURL, a.BootstrapScript, a.CPUCount, a.MemoryMB = name, "http://example.invalid/app.tar.gz", "bin/start.sh", cpu, mem
	if err := r.reg.Config().AddApp(r.ctx, a); err != nil {
		r.t.Fatal(err)
	}
	r.reload()
}

func (r *rig) addJob(mod func(*jobs.Config)) jobs.Config {
	r.t.Helper()
	j := jobs.Default()
	j.JobName, j.AppName, j.CPUCount, j.MemoryMB, j.ShardingTotalCount = "job", "app", 0.5, 64, 3
	if mod != nil {
		mod(&j)
	}
	if err := j.Validate(); err != nil {
		r.t.Fatal(err)
	}
	if err := r.reg.Config().AddJob(r.ctx, j); err != nil {
		r.t.Fatal(err)
	}
	r.reload()
	return j
}

func (r *rig) reload() {
	r.t.Helper()
	if err := r.sched.catalog.Load(r.ctx); err != nil {
		r.t.Fatal(err)
	}
	r.readInputs()
}

func (r *rig) offer(id string, cpus, mem float64) {
	o := engine.Offer{ID: id, AgentID: "agent-1", Hostname: "host-1", CPUs: cpus, MemMB: mem}
	r.sched.st.offers[id] = o
	r.sched.st.noteOffers([]engine.Offer{o})
}

// agent tells the scheduler the engine's one agent's total (its inventory).
func (r *rig) agent(cpus, mem float64) {
	r.sched.st.agents = []engine.Agent{{ID: "agent-1", Hostname: "host-1", CPUs: cpus, MemMB: mem}}
}

// rebuild makes the rig's scheduler anew with changed dependencies.
func (r *rig) rebuild(mod func(*Deps)) {
	r.t.Helper()
	d := r.sched.deps
	mod(&d)
	r.sched = New(d)
	r.sched.st.subscribed = true
	r.sched.recon.async = inline
	r.reload()
}

func (r *rig) trigger(job string) {
	r.t.Helper()
	j, err := r.reg.Config().Job(r.ctx, job)
	if err != nil {
		r.t.Fatal(err)
	}
	if _, err := r.reg.Work().Trigger(r.ctx, job, j.Misfire, r.clk.Now()); err != nil {
		r.t.Fatal(err)
	}
}

func (r *rig) running(job string) map[int]task.Entry {
	r.t.Helper()
	m, err := r.reg.Work().RunningOf(r.ctx, job)
	if err != nil {
		r.t.Fatal(err)
	}
	return m
}

func (r *rig) readyCount(job string) int {
	r.t.Helper()
	q, err := r.reg.Work().ReadyQueue(r.ctx)
	if err != nil {
		r.t.Fatal(err)
	}
	for _, rd := range q {
		if rd.Job == job {
			return rd.Count
		}
	}
	return 0
}

func (r *rig) status(taskID, state string) {
	r.t.Helper()
	if err := r.sched.status.handle(r.ctx, r.reg, engine.Status{TaskID: taskID, AgentID: "agent-1", State: task.State(state)}); err != nil {
		r.t.Fatal(err)
	}
}

// inline runs the reconciler's off-loop calls at once (deterministic tests).
func inline(f func()) { f() }
