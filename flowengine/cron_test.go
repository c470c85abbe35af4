package flowengine

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/jobs/calendar"
	"github.com/ejcloud/elasticjob/jobs/cron"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/scheduler"
	"github.com/ejcloud/elasticjob/workflow"
)

// The workflows' crons as a term runs them: the producer holds their
// schedules in the one timetable beside the jobs' and hands each fire to
// the engine, which makes the run. Both loops run on the bubble's clock
// (testing/synctest), which starts on Saturday 2000-01-01 00:00 UTC; a
// sleep moves it, and synctest.Wait returns once both loops wait again.

// term is one leader's producer and workflow engine on reg.
type term struct {
	prod   *scheduler.Producer
	cancel context.CancelFunc
	done   chan struct{}
}

func startTerm(t *testing.T, reg *registry.Registry) *term {
	t.Helper()
	return startTermWith(t, reg, termOptions{})
}

// termOptions change what startTermWith starts.
type termOptions struct {
	// hand passes the producer's fires to the engine (nil: directly).
	hand     func(scheduler.FlowRuns) scheduler.FlowRuns
	observer Observer
}

// startTermWith is startTerm with options.
func startTermWith(t *testing.T, reg *registry.Registry, o termOptions) *term {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	cat := scheduler.NewCatalog(reg)
	if err := cat.Load(ctx); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	prod := &scheduler.Producer{Registry: reg, Catalog: cat, Clock: clock.Real{}, Location: time.UTC, Log: log, Lead: time.Second}
	eng := New(Deps{Registry: reg, Clock: clock.Real{}, Log: log, Timetable: prod, Observer: o.observer, Options: Options{KeptRuns: 10, Sweep: time.Hour}})
	prod.Flows = eng
	if o.hand != nil {
		prod.Flows = o.hand(eng)
	}
	tm := &term{prod: prod, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(tm.done)
		errc := make(chan error, 2)
		go func() { errc <- prod.Run(ctx) }()
		go func() { errc <- eng.Run(ctx) }()
		for range 2 {
			if err := <-errc; err != nil && ctx.Err() == nil {
				t.Error(err)
			}
		}
	}()
	synctest.Wait()
	return tm
}

// stop ends the term (its leadership lost).
func (tm *term) stop() {
	tm.cancel()
	<-tm.done
}

// addWorkflow registers c as the API does (the running engine sees it on
// its watch).
func addWorkflow(t *testing.T, reg *registry.Registry, c workflow.Config) {
	t.Helper()
	if c.MaxConcurrentRuns == 0 {
		c.MaxConcurrentRuns = 1
	}
	if err := c.Validate(time.Now(), time.UTC, nil); err != nil {
		t.Fatal(err)
	}
	if err := reg.Flows().AddWorkflow(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	synctest.Wait()
}

func cronRuns(t *testing.T, reg *registry.Registry, wf string) []workflow.Run {
	t.Helper()
	runs, err := reg.Flows().WorkflowRuns(t.Context(), wf)
	if err != nil {
		t.Fatal(err)
	}
	return runs
}

// sleepUntil moves the bubble's clock to at (just past it: the loops
// handle what is due at at) and waits for both loops.
func sleepUntil(at time.Time) {
	time.Sleep(time.Until(at) + time.Millisecond)
	synctest.Wait()
}

func runID(at time.Time) string { return workflow.NewRunID(at, "cron") }

func TestCronFiresAndCollapsesAtTheLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, "a")
		start := time.Now()
		tm := startTerm(t, r.reg)
		defer tm.stop()
		c := chain("w", "a")
		c.Cron = "0 * * * * ?" // every minute
		addWorkflow(t, r.reg, c)
		first := start.Add(time.Minute)
		sleepUntil(first)
		runs := cronRuns(t, r.reg, "w")
		if len(runs) != 1 || runs[0].ID != runID(first) || runs[0].State != workflow.RunRunning || runs[0].Source != workflow.SourceCron {
			t.Fatalf("first fire: %+v", runs)
		}
		// Two more fires while it runs: misfire=false keeps one queued run.
		sleepUntil(first.Add(2 * time.Minute))
		runs = cronRuns(t, r.reg, "w")
		if len(runs) != 2 || runs[1].State != workflow.RunQueued || runs[1].ID != runID(first.Add(time.Minute)) {
			t.Fatalf("after two fires at the limit: %+v", runs)
		}
		st, _ := r.reg.Flows().WorkflowStateOf(t.Context(), "w")
		if !st.FiredUntil.Equal(first.Add(2 * time.Minute)) {
			t.Fatalf("watermark %v", st.FiredUntil)
		}
	})
}

// No leader for three fires; the next term's producer replays them by the
// misfire rule (misfire=false: one run, for the last; misfire=true: one
// per fire), once: a second takeover at once replays nothing.
func TestCronCatchUpByTheMisfireRule(t *testing.T) {
	for _, misfire := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			r := newRig(t, "a")
			start := time.Now()
			tm := startTerm(t, r.reg)
			c := chain("w", "a")
			c.Cron, c.Misfire, c.MaxConcurrentRuns = "0 * * * * ?", misfire, 5
			addWorkflow(t, r.reg, c) // watermark: now (00:00)
			tm.stop()
			time.Sleep(3*time.Minute + 30*time.Second) // 00:01, 00:02, 00:03 pass with no leader
			tm = startTerm(t, r.reg)
			runs := cronRuns(t, r.reg, "w")
			want := map[bool]int{false: 1, true: 3}[misfire]
			if len(runs) != want {
				t.Fatalf("misfire=%v: %d runs after the gap, want %d", misfire, len(runs), want)
			}
			if runs[len(runs)-1].ID != runID(start.Add(3*time.Minute)) {
				t.Fatalf("misfire=%v: last run %s", misfire, runs[len(runs)-1].ID)
			}
			tm.stop()
			tm = startTerm(t, r.reg)
			defer tm.stop()
			if again := cronRuns(t, r.reg, "w"); len(again) != want {
				t.Fatalf("misfire=%v: replayed twice: %d runs", misfire, len(again))
			}
			// The term goes on firing on schedule.
			sleepUntil(start.Add(4 * time.Minute))
			if runs := cronRuns(t, r.reg, "w"); runs[len(runs)-1].ID != runID(start.Add(4*time.Minute)) {
				t.Fatalf("misfire=%v: after the catch-up: %+v", misfire, runs)
			}
		})
	}
}

// A workflow's cron with a business calendar and a jitter window: its
// fires skip the weekend and move by its own fixed offset, the same on
// the next leader.
func TestCronHonoursCalendarAndJitterAcrossLeaders(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, "a")
		if _, err := r.reg.Schedule().PutCalendar(t.Context(), "default", calendar.Calendar{Name: "biz", Weekdays: []string{"MON", "TUE", "WED", "THU", "FRI"}}); err != nil {
			t.Fatal(err)
		}
		tm := startTerm(t, r.reg)
		c := chain("w", "a")
		c.Cron, c.Jitter, c.Calendar = "0 0 2 * * ?", "10m", "biz"
		addWorkflow(t, r.reg, c)
		// The bubble starts on Saturday 2000-01-01: the next fire is
		// Monday's 02:00 plus w's offset.
		want := time.Date(2000, 1, 3, 2, 0, 0, 0, time.UTC).Add(cron.Offset("w", 10*time.Minute))
		if got, ok := tm.prod.NextFireAt(); !ok || !got.Equal(want) {
			t.Fatalf("next fire %s, want %s", got, want)
		}
		tm.stop()
		tm = startTerm(t, r.reg)
		defer tm.stop()
		if got, ok := tm.prod.NextFireAt(); !ok || !got.Equal(want) {
			t.Fatalf("the next leader's next fire %s, want %s", got, want)
		}
		sleepUntil(want)
		runs := cronRuns(t, r.reg, "w")
		if len(runs) != 1 || runs[0].Source != workflow.SourceCron || runs[0].ID != runID(want) {
			t.Fatalf("runs at the jittered instant: %+v", runs)
		}
	})
}

// A workflow disabled between the fire's take and its instant, or whose
// cron changes, never fires by the old schedule: the timetable drops the
// fire, and fires the new cron instead.
func TestCronChangeVoidsTheOldSchedulesFire(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, "a")
		start := time.Now()
		tm := startTerm(t, r.reg)
		defer tm.stop()
		c := chain("w", "a")
		c.Cron = "0 * * * * ?"
		addWorkflow(t, r.reg, c)
		sleepUntil(start.Add(59 * time.Second)) // the 00:01 fire is taken ahead (the lead) and held
		c.Cron = "30 * * * * ?"
		if err := r.reg.Flows().UpdateWorkflow(t.Context(), c); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		sleepUntil(start.Add(time.Minute + 30*time.Second))
		runs := cronRuns(t, r.reg, "w")
		if len(runs) != 1 || runs[0].ID != runID(start.Add(time.Minute+30*time.Second)) {
			t.Fatalf("runs after the change: %+v", runs)
		}
	})
}

// handOver passes the producer's fires to the engine, running before
// first on the producer's loop (what happens as a fire is handed over).
type handOver struct {
	scheduler.FlowRuns
	before func(workflow string, instants []time.Time)
}

func (h handOver) FireFlow(ctx context.Context, workflow string, config uint64, instants []time.Time) error {
	h.before(workflow, instants)
	return h.FlowRuns.FireFlow(ctx, workflow, config, instants)
}

// A workflow's cron changes as the producer hands its 00:01 fire over:
// the engine takes the change first, then the fire of the old schedule.
// The instant had come before the change, so its run is made, once,
// whether the new cron has 00:01 too or not, and the new cron fires
// after it.
func TestCronChangeAtTheHandOverRunsTheInstantOnce(t *testing.T) {
	for _, c := range []struct {
		name, cron string
		next       time.Duration // the new cron's first instant after 00:01
	}{
		{"due under both", "0 1/2 * * * ?", 3 * time.Minute},
		{"due under the old only", "30 * * * * ?", time.Minute + 30*time.Second},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := newRig(t, "a")
				start := time.Now()
				first := start.Add(time.Minute)
				w := chain("w", "a")
				w.Cron, w.MaxConcurrentRuns = "0 * * * * ?", 5
				var changed bool
				tm := startTermWith(t, r.reg, termOptions{hand: func(eng scheduler.FlowRuns) scheduler.FlowRuns {
					return handOver{FlowRuns: eng, before: func(_ string, instants []time.Time) {
						if changed || !instants[0].Equal(first) {
							return
						}
						changed = true
						w.Cron = c.cron
						if err := r.reg.Flows().UpdateWorkflow(t.Context(), w); err != nil {
							t.Error(err)
						}
						synctest.Wait() // the engine has the change, and the timetable the new cron
					}}
				}})
				defer tm.stop()
				addWorkflow(t, r.reg, w)
				sleepUntil(start.Add(c.next))
				var got []string
				for _, run := range cronRuns(t, r.reg, "w") {
					got = append(got, run.ID)
				}
				if want := []string{runID(first), runID(start.Add(c.next))}; !slices.Equal(got, want) {
					t.Fatalf("runs %v, want %v", got, want)
				}
			})
		})
	}
}

// fireLog hears the cron fires' lateness.
type fireLog struct {
	mu   sync.Mutex
	late []time.Duration
}

func (*fireLog) RunChanged(prev, next workflow.Run) {}

func (l *fireLog) CronFired(instant, made time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.late = append(l.late, made.Sub(instant))
}

// Each cron fire of the term is observed once with its lateness (0 on
// the bubble's clock: the run is made at its instant); a takeover's
// replay of the instants no leader fired is not.
func TestCronFireLatenessIsObservedForTheTermsInstants(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, "a")
		start := time.Now()
		tm := startTerm(t, r.reg)
		c := chain("w", "a")
		c.Cron, c.Misfire, c.MaxConcurrentRuns = "0 * * * * ?", true, 5
		addWorkflow(t, r.reg, c)
		tm.stop()
		time.Sleep(2*time.Minute + 30*time.Second) // 00:01 and 00:02 pass with no leader
		var log fireLog
		tm = startTermWith(t, r.reg, termOptions{observer: Observers{&log}})
		defer tm.stop()
		if n := len(cronRuns(t, r.reg, "w")); n != 2 {
			t.Fatalf("%d runs replayed, want 2", n)
		}
		sleepUntil(start.Add(4 * time.Minute))
		log.mu.Lock()
		defer log.mu.Unlock()
		if !slices.Equal(log.late, []time.Duration{0, 0}) {
			t.Fatalf("lateness observed %v, want the 00:03 and 00:04 fires', each 0", log.late)
		}
	})
}
