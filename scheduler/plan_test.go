package scheduler

import (
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/jobs/calendar"
	"github.com/ejcloud/elasticjob/jobs/cron"
	"github.com/ejcloud/elasticjob/namespace"
)

// A job with an H cron, a jitter window and a business calendar fires at
// the instants jobs.Config.Plan computes, and a new leader (another
// scheduler over the same registry, fresh memos) computes the same ones.
func TestJitteredCalendarFiresSurviveALeaderChange(t *testing.T) {
	r := newRig(t)
	r.addApp("app", 1, 128)
	cal := calendar.Calendar{Name: "biz", Weekdays: []string{"MON", "TUE", "WED", "THU", "FRI"},
		Exclude: []calendar.Period{{From: t0.Format("2006-01-02")}}}
	if _, err := r.reg.Schedule().PutCalendar(r.ctx, "default", cal); err != nil {
		t.Fatal(err)
	}
	j := r.addJob(func(j *jobs.Config) {
		j.JobName = "report"
		j.Cron = "0 H 9 * * ?"
		j.Crons = []string{"0 0 H(13-15) * * ?"}
		j.Jitter = "10m"
		j.Calendar = "biz"
	})
	compiled, _ := cal.Compile(time.UTC)
	plan, err := j.Plan(compiled, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := plan.NextN(t0, time.UTC, 6)
	for _, w := range want {
		if w.Weekday() == time.Saturday || w.Weekday() == time.Sunday || w.Format("2006-01-02") == t0.Format("2006-01-02") {
			t.Fatalf("a fire on an excluded day: %s", w)
		}
	}
	runProducer(t, r)
	armedAt(t, r, want[0])

	// The next leader: a fresh scheduler, its own catalog and parse memo.
	next := New(Deps{Registry: r.reg, Driver: newFakeDriver(), Clock: clock.NewFake(t0),
		Options: Options{ExecutorCommand: "/bin/executor", Location: time.UTC}})
	if err := next.catalog.Sync(r.ctx); err != nil {
		t.Fatal(err)
	}
	next.producer.init()
	if _, err := next.producer.refreshInputs(r.ctx); err != nil { // as its term's start does
		t.Fatal(err)
	}
	rj, ok := next.catalog.Job("report")
	if !ok {
		t.Fatal("the new leader's catalog has no job report")
	}
	at := t0
	for i, w := range want {
		got, ok := next.producer.nextFire(rj, at)
		if !ok || !got.Equal(w) {
			t.Fatalf("fire %d after the leader change: %s, want %s", i, got, w)
		}
		at = got
	}
}

// A job naming a calendar its namespace does not hold is not scheduled
// (and says why in the log) rather than firing on excluded days.
func TestMissingCalendarDoesNotFire(t *testing.T) {
	r := newRig(t)
	r.addApp("app", 1, 128)
	j := r.addJob(func(j *jobs.Config) { j.JobName = "orphan"; j.Cron = "0 0 9 * * ?"; j.Calendar = "gone" })
	if _, ok := r.sched.producer.nextFire(j, t0); ok {
		t.Fatal("a job naming a missing calendar has a next fire")
	}
}

// A namespace's jitter window reaches the producer (its inputs):
// its job without a window of its own fires at the offset the window
// gives its key; a job with its own keeps it.
func TestNamespaceJitterReachesTheProducer(t *testing.T) {
	r := newRig(t)
	if _, err := r.reg.Tenancy().PutNamespace(r.ctx, namespace.Record{Name: "pay", Jitter: "1h"}); err != nil {
		t.Fatal(err)
	}
	a := app.Default()
	a.AppName, a.AppURL, a.BootstrapScript = "app", "http://example.invalid/app.tar.gz", "bin/start.sh"
	if err := r.reg.In("pay").Config().AddApp(r.ctx, a); err != nil {
		t.Fatal(err)
	}
	for _, j := range []struct{ name, jitter string }{{"inherits", ""}, {"own", "1m"}} {
		c := jobs.Default()
		c.JobName, c.AppName, c.Cron, c.Jitter = j.name, "app", "0 0 * * * ?", j.jitter
		if err := r.reg.In("pay").Config().AddJob(r.ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	r.reload()
	// t0 is 10:00:00: a fire at 10:00 plus a positive offset is still ahead.
	hour := t0.Truncate(time.Hour)
	for _, tc := range []struct {
		key    string
		window time.Duration
	}{{"pay~inherits", time.Hour}, {"pay~own", time.Minute}} {
		j, ok := r.sched.catalog.Job(tc.key)
		if !ok {
			t.Fatalf("no job %s", tc.key)
		}
		got, ok := r.sched.producer.nextFire(j, t0)
		off := cron.Offset(tc.key, tc.window)
		want := hour.Add(off)
		if off == 0 {
			want = want.Add(time.Hour)
		}
		if !ok || !got.Equal(want) {
			t.Errorf("%s: next fire %s, want %s", tc.key, got, want)
		}
	}
}

// A job naming a calendar made after the term read its inputs is planned
// once a read brings the calendar (rather than left without a fire until
// the next term), and from the instant it was to be scheduled from.
func TestAJobNamingACalendarMadeAfterTheInputsIsPlanned(t *testing.T) {
	r := newRig(t)
	r.addApp("app", 1, 128)
	runProducer(t, r)
	armedAt(t, r, t0.Add(time.Hour)) // no job: the loop sleeps

	cal := calendar.Calendar{Name: "late", Exclude: []calendar.Period{{From: t0.Format("2006-01-02")}}}
	if _, err := r.reg.Schedule().PutCalendar(r.ctx, "default", cal); err != nil {
		t.Fatal(err)
	}
	j := jobs.Default()
	j.JobName, j.AppName, j.CPUCount, j.MemoryMB, j.ShardingTotalCount = "report", "app", 0.5, 64, 1
	j.Cron, j.Calendar = "0 0/5 * * * ?", "late"
	if err := r.reg.Config().AddJob(r.ctx, j); err != nil {
		t.Fatal(err)
	}
	if err := r.sched.catalog.Load(r.ctx); err != nil { // the inputs are not read again here
		t.Fatal(err)
	}
	r.sched.producer.Reschedule("report")
	compiled, _ := cal.Compile(time.UTC)
	plan, err := j.Plan(compiled, 0)
	if err != nil {
		t.Fatal(err)
	}
	armedAt(t, r, plan.Next(t0, time.UTC))
}
