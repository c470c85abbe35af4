package scheduler

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/queue"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/round"
	"github.com/ejcloud/elasticjob/store"
)

// hookedDriver runs a hook as each ACCEPT is sent.
type hookedDriver struct {
	*fakeDriver
	onAccept func()
}

func (d *hookedDriver) Accept(ctx context.Context, ids []string, l []engine.TaskLaunch, refuse time.Duration) error {
	d.onAccept()
	return d.fakeDriver.Accept(ctx, ids, l, refuse)
}

// TestBacklogsRestIsWorkedOutAfterTheLaunch: a round over a backlog
// larger than its head (round.Begin) sends its ACCEPT before the rest of
// the backlog has its reasons: a stale entry at the backlog's end (its job
// gone from the registry) is still queued when the ACCEPT goes, and
// removed in the same round after it; every entry of the rest has its
// reason once the round is over, and the round launched what the whole
// backlog's round launches.
func TestBacklogsRestIsWorkedOutAfterTheLaunch(t *testing.T) {
	r := newRig(t)
	r.sched.deps.Options.MaxRoundTasks = 4
	r.addApp("app", 0.1, 16)
	const n = 400 // the head: 256 entries at a bound of 4
	for i := range n {
		name := fmt.Sprintf("j%03d", i)
		r.addJob(func(j *jobs.Config) { j.JobName, j.ShardingTotalCount, j.CPUCount, j.MemoryMB = name, 2, 0.1, 16 })
		r.trigger(name)
		r.clk.Advance(time.Millisecond) // queued in this order
	}
	r.addJob(func(j *jobs.Config) { j.JobName, j.ShardingTotalCount, j.CPUCount, j.MemoryMB = "zgone", 1, 0.1, 16 })
	r.trigger("zgone") // the youngest entry
	if err := r.kv.Commit(r.ctx, store.Delete(registry.JobsPath+"/zgone", store.AnyVersion)); err != nil {
		t.Fatal(err)
	}
	r.reload() // the catalog no longer has it: its entry is stale
	queued := func() bool { return r.readyCount("zgone") > 0 }
	atAccept := map[string]bool{}
	drv := &hookedDriver{fakeDriver: r.drv, onAccept: func() { atAccept["queued"] = queued() }}
	r.rebuild(func(d *Deps) { d.Driver = drv })
	r.sched.deps.Options.MaxRoundTasks = 4
	r.offer("o1", 1000, 1<<20)

	v, err := r.sched.launcher.view(r.ctx)
	if err != nil {
		t.Fatal(err)
	}
	p, rest := round.Begin(v)
	if rest == nil {
		t.Fatal("a round over 401 ready entries at a bound of 4 was decided over the whole backlog")
	}
	r.sched.launcher.round(r.ctx)
	if len(r.drv.accepts) != 1 || len(r.drv.accepts[0].launches) != len(p.Launches) || len(p.Launches) != 4 {
		t.Fatalf("%d accepts; want one of the head's 4 launches", len(r.drv.accepts))
	}
	if !atAccept["queued"] {
		t.Fatal("the stale entry at the backlog's end was removed before the ACCEPT: the rest was worked out before the launch")
	}
	if queued() {
		t.Fatal("the stale entry is still queued after the round: the rest was not worked out")
	}
	want := n - 2 // launched: two jobs of two shards
	if got := r.sched.launcher.scratch; len(got) != want {
		t.Fatalf("%d entries have a reason after the round, want %d", len(got), want)
	}
	if w := r.sched.launcher.scratch["ready/j399"]; w.Reason != queue.WaitBehind {
		t.Fatalf("the youngest entry waits with %+v, want behind older work", w)
	}
}

// TestFirstLaunchRoundLogsTheTermsWay: the term's first launch round logs
// where the term's time went before it: its loop turns, the rounds held
// and by what (here the producer's catch-up), and when the catch-up
// committed.
func TestFirstLaunchRoundLogsTheTermsWay(t *testing.T) {
	r := newRig(t)
	var buf bytes.Buffer
	r.rebuild(func(d *Deps) { d.Log = slog.New(slog.NewTextHandler(&buf, nil)) })
	r.addApp("app", 0.1, 16)
	r.addJob(func(j *jobs.Config) { j.JobName, j.ShardingTotalCount, j.CPUCount, j.MemoryMB = "j", 1, 0.1, 16 })
	r.trigger("j")
	r.offer("o1", 4, 1024)
	s := r.sched
	s.st.catchingUp = true
	s.launcher.start.began = time.Now()
	ts := turnState{since: r.clk.Now()}
	s.turn(r.ctx, &ts, true)
	if len(r.drv.accepts) != 0 {
		t.Fatal("a round launched before the producer's catch-up committed")
	}
	s.producer.events().CaughtUp(r.ctx) // posted to the loop
	s.turn(r.ctx, &ts, true)
	if len(r.drv.accepts) != 1 {
		t.Fatalf("%d accepts after the catch-up, want 1", len(r.drv.accepts))
	}
	if !strings.Contains(buf.String(), "the term's first launch committed; accepting") {
		t.Fatal("the term's first launch commit is not logged")
	}
	line := ""
	for l := range strings.Lines(buf.String()) {
		if strings.Contains(l, "first launch round of the term") {
			line = l
		}
	}
	for _, want := range []string{"turns_before=2", "rounds_before=0", "view_queues=", "held_by=catch-up", "catch_up_committed_after=", "since_term_start="} {
		if !strings.Contains(line, want) {
			t.Fatalf("the first launch round's log %q lacks %s", line, want)
		}
	}
}

// TestTermLoadsItsRunningTasksBeforeTheSubscription: a term reads the
// tasks recorded as running into its mirror as its first event, before any
// subscription comes (its reconciliation then asks about them at once).
func TestTermLoadsItsRunningTasksBeforeTheSubscription(t *testing.T) {
	r := newRig(t)
	r.addApp("app", 0.1, 16)
	r.addJob(func(j *jobs.Config) { j.JobName, j.ShardingTotalCount, j.CPUCount, j.MemoryMB = "j", 2, 0.1, 16 })
	r.trigger("j")
	r.offer("o1", 4, 1024)
	r.sched.launcher.round(r.ctx)
	if len(r.running("j")) != 2 {
		t.Fatal("the first term launched nothing")
	}

	s := New(Deps{Registry: r.reg, Driver: newFakeDriver(), Clock: r.clk}) // the next term
	ctx, cancel := context.WithCancel(r.ctx)
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	select {
	case <-s.ready:
	case err := <-done:
		t.Fatalf("Run ended before loading: %v", err)
	}
	loaded := -1
	if err := s.call(ctx, func(context.Context) error {
		if s.st.running != nil {
			loaded = len(s.st.running["j"])
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if loaded != 2 {
		t.Fatalf("the term's mirror holds %d of j's running tasks before any subscription, want 2", loaded)
	}
}
