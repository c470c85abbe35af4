package queue

import (
	"cmp"
	"time"
)

// Ready is a job's pending executions at /state/ready/{jobName}.
type Ready struct {
	Job   string    `json:"-"`
	Count int       `json:"count"`
	Since time.Time `json:"since"` // when the oldest pending execution was queued
	// Misfired counts the executions queued while an earlier one was
	// pending or running (recorded as MISFIRE in history).
	Misfired int `json:"misfired,omitempty"`
	// Runs are parameter overrides of pending executions (from triggers
	// with a jobParameter), taken one per execution, oldest first.
	Runs []PendingRun `json:"runs,omitempty"`
	// NotBefore holds back a cron fire the producer staged ahead of its
	// instant: the launcher does not start it earlier.
	NotBefore time.Time `json:"notBefore,omitzero"`
	Version   int64     `json:"-"`
}

// PendingRun is one triggered execution's override.
type PendingRun struct {
	JobParameter   string    `json:"jobParameter"`
	IdempotencyKey string    `json:"idempotencyKey,omitempty"`
	At             time.Time `json:"at"`
}

// Trigger asks for one more execution of a job.
type Trigger struct {
	// Misfire is the job's misfire flag: executions add up instead of
	// collapsing into the one pending.
	Misfire bool
	// Run is an execution with an override (nil: a plain one).
	Run *PendingRun
	// Fire marks a cron fire the producer staged ahead of its instant At:
	// a new entry is held back until then. It carries no override.
	Fire bool
	// At is when the execution was queued (and a fire's instant).
	At time.Time
}

// Add returns the entry with one more execution, by the misfire and
// pending-cap rule (the package documentation); cur is the entry now (nil:
// none). changed is false when the trigger collapses into the executions
// pending, or maxPending (0: no cap) are pending already; the entry
// returned is then cur's.
func Add(cur *Ready, t Trigger, maxPending int) (next Ready, changed bool) {
	at := t.At.UTC()
	if t.Fire {
		t.Run = nil
	}
	if cur == nil {
		rd := Ready{Count: 1, Since: at}
		if t.Fire {
			rd.NotBefore = at
		}
		if t.Run != nil {
			rd.Runs = []PendingRun{*t.Run}
		}
		return rd, true
	}
	rd := *cur
	if (!t.Misfire && t.Run == nil && rd.Count >= 1) || Full(rd, maxPending) {
		return rd, false
	}
	rd.Count++
	if rd.Count > 1 {
		rd.Misfired++
	}
	if t.Run != nil {
		rd.Runs = append(rd.Runs[:len(rd.Runs):len(rd.Runs)], *t.Run)
	}
	return rd, true
}

// Full reports whether rd holds maxPending executions (0: no cap).
func Full(rd Ready, maxPending int) bool { return maxPending > 0 && rd.Count >= maxPending }

// Take returns what is left of rd once its oldest execution launches
// (ok false: nothing, the entry goes), queued again at now.
func Take(rd Ready, now time.Time) (rest Ready, ok bool) {
	if rd.Count <= 1 {
		return Ready{}, false
	}
	next := rd
	if next.Misfired >= next.Count { // this execution was a misfire
		next.Misfired--
	}
	next.Count--
	if len(next.Runs) > 0 {
		next.Runs = next.Runs[1:]
	}
	next.Since = now.UTC()
	return next, true
}

// Misfire reports whether the execution that launches next from rd is a
// misfire (no normal fire left ahead of it).
func (rd Ready) Misfire() bool { return rd.Count > 0 && rd.Misfired >= rd.Count }

// First is the override of the execution that launches next (nil: a
// plain execution).
func (rd Ready) First() *PendingRun {
	if len(rd.Runs) == 0 {
		return nil
	}
	run := rd.Runs[0]
	return &run
}

// CompareReady orders entries oldest first, then by job: a total order
// (one entry per job).
func CompareReady(a, b *Ready) int {
	return cmp.Or(a.Since.Compare(b.Since), cmp.Compare(a.Job, b.Job))
}
