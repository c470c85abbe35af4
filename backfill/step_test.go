package backfill

import (
	"errors"
	"testing"
	"time"
)

var t0 = time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)

func outcomes(m map[string]Outcome) func(string) Outcome {
	return func(k string) Outcome { return m[k] }
}

func TestStepQueuesOneWhenIdle(t *testing.T) {
	b := Backfill{ID: "bf", State: Running, Total: 3, Concurrency: 2}
	cases := []struct {
		name string
		v    View
		want int
	}{
		{"idle", View{Runnable: true}, 1},
		{"busy with live work", View{Runnable: true, Busy: true}, 0},
		{"not runnable", View{}, 0},
	}
	for _, c := range cases {
		c.v.Outcome = outcomes(nil)
		if _, n := Step(b, c.v); n != c.want {
			t.Errorf("%s: queue %d, want %d", c.name, n, c.want)
		}
	}
}

func TestStepBoundsRunsInFlight(t *testing.T) {
	b := Backfill{ID: "bf", State: Running, Total: 5, Next: 2, Concurrency: 2,
		InFlight: []Flight{{At: t0, Key: "k0"}, {At: t0.Add(time.Minute), Key: "k1"}}}
	v := View{Now: t0, Runnable: true, Outcome: outcomes(map[string]Outcome{"k0": Pending, "k1": Pending})}
	if _, n := Step(b, v); n != 0 {
		t.Fatalf("two in flight at concurrency 2: queue %d", n)
	}
	v.Outcome = outcomes(map[string]Outcome{"k0": Succeeded, "k1": FailedRun})
	next, n := Step(b, v)
	if n != 1 || next.Succeeded != 1 || next.Failed != 1 || len(next.InFlight) != 0 {
		t.Fatalf("both ended: %+v queue %d", next, n)
	}
	if p := next.Progress(); p != (Progress{Done: 2, Running: 0, Remaining: 3, Failed: 1, Total: 5}) {
		t.Fatalf("progress %+v", p)
	}
}

func TestStepLostRunCountsFailedAfterTwoPasses(t *testing.T) {
	b := Backfill{ID: "bf", State: Running, Total: 1, Next: 1, Concurrency: 1, InFlight: []Flight{{At: t0, Key: "k0"}}}
	v := View{Now: t0, Runnable: true, Outcome: outcomes(map[string]Outcome{"k0": Unseen})}
	b, _ = Step(b, v)
	if len(b.InFlight) != 1 || b.State != Running {
		t.Fatalf("unseen once is still in flight: %+v", b)
	}
	b, _ = Step(b, v)
	if len(b.InFlight) != 0 || b.Failed != 1 || b.State != Done || !b.EndedAt.Equal(t0) {
		t.Fatalf("unseen twice is lost: %+v", b)
	}
}

func TestControl(t *testing.T) {
	b := Backfill{ID: "bf", State: Running, Total: 2}
	p, err := Control(b, "pause", t0)
	if err != nil || p.State != Paused {
		t.Fatalf("pause: %+v %v", p, err)
	}
	if _, n := Step(p, View{Runnable: true, Outcome: outcomes(nil)}); n != 0 {
		t.Fatal("a paused backfill queued a run")
	}
	r, err := Control(p, "resume", t0)
	if err != nil || r.State != Running {
		t.Fatalf("resume: %+v %v", r, err)
	}
	r.InFlight = []Flight{{Key: "k"}}
	c, err := Control(r, "cancel", t0)
	if err != nil || c.State != Cancelled || c.Final() || c.Progress().Remaining != 0 {
		t.Fatalf("cancel with a run in flight: %+v %v", c, err)
	}
	c, _ = Step(c, View{Now: t0, Outcome: outcomes(map[string]Outcome{"k": Succeeded})})
	if !c.Final() || c.Succeeded != 1 {
		t.Fatalf("cancelled, its run ended: %+v", c)
	}
	if _, err := Control(c, "resume", t0); !errors.Is(err, ErrFinal) {
		t.Fatalf("resume a cancelled backfill: %v", err)
	}
	if _, err := Control(b, "explode", t0); !errors.Is(err, ErrInvalid) {
		t.Fatalf("unknown action: %v", err)
	}
}

func TestCheck(t *testing.T) {
	now := t0
	for _, c := range []struct {
		from, to time.Time
		conc     int
		ok       bool
	}{
		{t0.Add(-time.Hour), t0, 1, true},
		{time.Time{}, t0, 1, false},
		{t0, t0, 1, false},
		{t0.Add(-time.Hour), t0.Add(time.Second), 1, false},
		{t0.Add(-time.Hour), t0, MaxConcurrency + 1, false},
		{t0.Add(-time.Hour), t0, -1, false},
	} {
		err := Check(c.from, c.to, c.conc, now)
		if (err == nil) != c.ok || err != nil && !errors.Is(err, ErrInvalid) {
			t.Errorf("Check(%v, %v, %d) = %v", c.from, c.to, c.conc, err)
		}
	}
}

func TestStepCancelsWhenTheJobIsDeleted(t *testing.T) {
	b := Backfill{ID: "bf", State: Paused, Total: 3, Next: 1, InFlight: []Flight{{Key: "k"}}}
	next, n := Step(b, View{Now: t0, Missing: true, Outcome: outcomes(map[string]Outcome{"k": Unseen})})
	if n != 0 || next.State != Cancelled || next.Final() {
		t.Fatalf("job deleted, a run in flight: %+v queue %d", next, n)
	}
	next, _ = Step(next, View{Now: t0, Missing: true, Outcome: outcomes(map[string]Outcome{"k": Unseen})})
	if !next.Final() || next.Failed != 1 || !next.EndedAt.Equal(t0) {
		t.Fatalf("its run lost: %+v", next)
	}
}
