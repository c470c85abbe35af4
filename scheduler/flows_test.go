package scheduler

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/jobs/timing"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/store/memory"
)

// flowFire is one FireFlow call as the engine would receive it.
type flowFire struct {
	workflow string
	config   uint64
	instants []time.Duration // after the bubble's start
	at       time.Duration
}

// flowRecorder stands in for the workflow engine.
type flowRecorder struct {
	start time.Time
	mu    sync.Mutex
	got   []flowFire
	// handed, when set, runs after each fire is recorded, on the
	// producer's loop (what happens as a fire is handed over).
	handed func(workflow string)
}

func (r *flowRecorder) FireFlow(_ context.Context, wf string, config uint64, instants []time.Time) error {
	r.mu.Lock()
	f := flowFire{workflow: wf, config: config, at: time.Since(r.start)}
	for _, at := range instants {
		f.instants = append(f.instants, at.Sub(r.start))
	}
	r.got = append(r.got, f)
	handed := r.handed
	r.mu.Unlock()
	if handed != nil {
		handed(wf)
	}
	return nil
}

func (r *flowRecorder) fires() []flowFire {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

// flowProducer runs a producer with a lead of 1 s beside a job, on the
// bubble's clock.
func flowProducer(t *testing.T, js ...jobs.Config) (*Producer, *bubbleDispatcher, *flowRecorder, func()) {
	return slowFlowProducer(t, 0, js...)
}

// slowFlowProducer is flowProducer with fire commits that take slow.
func slowFlowProducer(t *testing.T, slow time.Duration, js ...jobs.Config) (*Producer, *bubbleDispatcher, *flowRecorder, func()) {
	ctx, cancel := context.WithCancel(t.Context())
	kv := memory.New()
	reg := registry.New(kv)
	a := app.Default()
	a.AppName, a.AppURL, a.BootstrapScript, a.CPUCount, a.MemoryMB = "app", "http://example.invalid/app.tar.gz", "bin/start.sh", 1, 128
	if err := reg.Config().AddApp(ctx, a); err != nil {
		t.Fatal(err)
	}
	for _, j := range js {
		if err := reg.Config().AddJob(ctx, j); err != nil {
			t.Fatal(err)
		}
	}
	cat := NewCatalog(reg)
	if err := cat.Load(ctx); err != nil {
		t.Fatal(err)
	}
	d := &bubbleDispatcher{registryDispatcher: registryDispatcher{reg}, start: time.Now(), slow: slow}
	flows := &flowRecorder{start: time.Now()}
	p := &Producer{Registry: reg, Dispatch: d, Catalog: cat, Clock: clock.Real{}, Location: time.UTC, Log: slog.New(slog.DiscardHandler),
		Lead: time.Second, Flows: flows}
	done := make(chan struct{})
	go func() { defer close(done); _ = p.Run(ctx) }()
	synctest.Wait()
	return p, d, flows, func() { cancel(); <-done; kv.Close() }
}

func everyTwoSeconds(name string, misfire bool) timing.Schedule {
	return timing.Schedule{Key: name, Crons: []string{"0/2 * * * * ?"}, Misfire: misfire}
}

// One timetable for a job and a workflow on the same cron: the job's fire
// is staged a lead ahead (its entry held back until its instant), the
// workflow's handed to the engine at its instant to the nanosecond (a run
// begins as it is made).
func TestWorkflowFiresAtItsInstantBesideAStagedJob(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, d, flows, stop := flowProducer(t, cronJob("a", "0/2 * * * * ?", false))
		defer stop()
		p.ScheduleFlow("w", everyTwoSeconds("w", false), 7, time.Time{})
		time.Sleep(4*time.Second + time.Millisecond)
		synctest.Wait()
		s := time.Second
		want := []flowFire{{"w", 7, []time.Duration{2 * s}, 2 * s}, {"w", 7, []time.Duration{4 * s}, 4 * s}}
		if got := flows.fires(); !slices.EqualFunc(got, want, sameFlowFire) {
			t.Fatalf("workflow fires %v, want %v", got, want)
		}
		if got := d.taken(); len(got) != 2 || got[0].at != time.Second || got[1].at != 3*time.Second {
			t.Fatalf("the job's fires %v, want each staged 1 s ahead", got)
		}
		if fs := p.NextFires(time.Now().Add(time.Hour), func(string) bool { return true }); len(fs) != 1 || fs[0].Job != "a" {
			t.Fatalf("next fires %v: a workflow's fire needs no room of its own", fs)
		}
	})
}

// A wake that both hands a workflow's fire over (its instant has come)
// and stages the jobs' next fires (a lead ahead) hands the workflow's
// first: the hand-over never waits, and a run begins as it is made, so
// the jobs' commit (400 ms here, a store under load) must not make the
// run late; the job, staged a lead ahead, is on time all the same.
func TestWorkflowFireIsNotHeldBehindTheJobsCommit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, d, flows, stop := slowFlowProducer(t, 400*time.Millisecond, cronJob("a", "1/2 * * * * ?", false))
		defer stop()
		p.ScheduleFlow("w", everyTwoSeconds("w", true), 7, time.Time{})
		time.Sleep(4*time.Second + time.Millisecond)
		synctest.Wait()
		s := time.Second
		want := []flowFire{{"w", 7, []time.Duration{2 * s}, 2 * s}, {"w", 7, []time.Duration{4 * s}, 4 * s}}
		if got := flows.fires(); !slices.EqualFunc(got, want, sameFlowFire) {
			t.Fatalf("workflow fires %v, want each handed at its instant %v", got, want)
		}
		for _, c := range d.taken() {
			if c.at > c.instant {
				t.Errorf("the job's fire of %v committed at %v, after its instant", c.instant, c.at)
			}
		}
	})
}

// A term's start with a workflow's watermark: the instants after it no
// leader fired are handed first, all at once (the engine keeps the last
// alone for misfire=false), at most 100, then the workflow fires on
// schedule. Unscheduled, it fires no more.
func TestWorkflowCatchUpThenScheduleThenUnschedule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		time.Sleep(7 * time.Second) // 2, 4 and 6 s pass with no leader
		p, _, flows, stop := flowProducer(t)
		defer stop()
		flows.start = start
		p.ScheduleFlow("w", everyTwoSeconds("w", true), 1, start)
		// A change before the catch-up ran keeps it. The loop runs beside
		// this goroutine (synctest orders time, not goroutines), so the
		// catch-up may run between the two calls, handed as version 1:
		// either is right, and the instants are the same.
		p.ScheduleFlow("w", everyTwoSeconds("w", true), 2, time.Time{})
		synctest.Wait()
		time.Sleep(time.Second + time.Millisecond) // 8 s
		synctest.Wait()
		p.UnscheduleFlow("w")
		time.Sleep(4 * time.Second)
		synctest.Wait()
		s := time.Second
		want := []flowFire{{"w", 2, []time.Duration{2 * s, 4 * s, 6 * s}, 7 * s}, {"w", 2, []time.Duration{8 * s}, 8 * s}}
		got := flows.fires()
		if len(got) > 0 && got[0].config == 1 {
			want[0].config = 1 // the catch-up ran before the change reached the loop
		}
		if !slices.EqualFunc(got, want, sameFlowFire) {
			t.Fatalf("workflow fires %v, want %v", got, want)
		}
	})
}

func sameFlowFire(a, b flowFire) bool {
	return a.workflow == b.workflow && a.config == b.config && a.at == b.at && slices.Equal(a.instants, b.instants)
}

// A rebuild of the timetable (a resync) while a workflow's fire is held
// for its instant takes the fire again: it is handed once, and the
// workflow fires on after it.
func TestWorkflowFireHeldThroughARebuildIsHandedOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, _, flows, stop := flowProducer(t)
		defer stop()
		p.ScheduleFlow("w", everyTwoSeconds("w", false), 3, time.Time{})
		time.Sleep(1500 * time.Millisecond) // the 2 s fire is held
		synctest.Wait()
		p.RescheduleAll()
		time.Sleep(2*time.Second + time.Millisecond) // 3.5 s: past 2 s
		synctest.Wait()
		time.Sleep(time.Second) // 4.5 s
		synctest.Wait()
		s := time.Second
		want := []flowFire{{"w", 3, []time.Duration{2 * s}, 2 * s}, {"w", 3, []time.Duration{4 * s}, 4 * s}}
		if got := flows.fires(); !slices.EqualFunc(got, want, sameFlowFire) {
			t.Fatalf("workflow fires %v, want %v", got, want)
		}
	})
}

// Two workflows fire at 2 s; as the first is handed over, the other's
// schedule changes: its 2 s fire, taken already, had come before the
// change, so it is handed over (of the old version) and the new schedule
// fires from after 2 s. Whether the new schedule has 2 s too or not, 2 s
// is handed once, and the new schedule's next instant follows.
func TestWorkflowChangeAtTheHandOverKeepsTheInstant(t *testing.T) {
	for _, c := range []struct {
		name, cron string
		next       time.Duration // the new schedule's first instant after 2 s
	}{
		{"due under both", "0/2 * * * * ?", 4 * time.Second},
		{"due under the old only", "1/2 * * * * ?", 3 * time.Second},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p, _, flows, stop := flowProducer(t)
				defer stop()
				p.ScheduleFlow("u", everyTwoSeconds("u", false), 1, time.Time{})
				p.ScheduleFlow("w", everyTwoSeconds("w", false), 2, time.Time{})
				var once sync.Once
				flows.mu.Lock()
				flows.handed = func(fired string) {
					once.Do(func() {
						other := map[string]string{"u": "w", "w": "u"}[fired]
						p.ScheduleFlow(other, timing.Schedule{Key: other, Crons: []string{c.cron}}, 9, time.Time{})
					})
				}
				flows.mu.Unlock()
				time.Sleep(c.next + time.Millisecond)
				synctest.Wait()
				s := time.Second
				var changed string
				byFlow := map[string][]time.Duration{}
				for _, f := range flows.fires() {
					if f.config == 9 {
						changed = f.workflow
					}
					if len(f.instants) != 1 || f.at != f.instants[0] {
						t.Fatalf("fire %v: want one instant, handed at it", f)
					}
					byFlow[f.workflow] = append(byFlow[f.workflow], f.instants[0])
				}
				if changed == "" {
					t.Fatalf("fires %v: the new schedule never fired", flows.fires())
				}
				if got, want := byFlow[changed], []time.Duration{2 * s, c.next}; !slices.Equal(got, want) {
					t.Fatalf("the changed workflow %s fired %v, want %v (fires %v)", changed, got, want, flows.fires())
				}
			})
		})
	}
}
