package flowengine

import (
	"context"
	"log/slog"
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
	ctx, cancel := context.WithCancel(t.Context())
	cat := scheduler.NewCatalog(reg)
	if err := cat.Load(ctx); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	prod := &scheduler.Producer{Registry: reg, Catalog: cat, Clock: clock.Real{}, Location: time.UTC, Log: log, Lead: time.Second}
	eng := New(Deps{Registry: reg, Clock: clock.Real{}, Log: log, Timetable: prod, Options: Options{KeptRuns: 10, Sweep: time.Hour}})
	prod.Flows = eng
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
