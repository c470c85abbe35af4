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
	// PlainBy says who or what queued the plain executions (those without
	// an override, taken after the Runs), oldest first, in runs of the
	// same origin (a stream of cron fires is one element); executions
	// beyond them have no origin recorded (queued by an earlier version).
	PlainBy []Origin `json:"plainBy,omitempty"`
	// Relaunch names the tasks of a launch of one pending execution that
	// was rolled back (its ACCEPT failed): launched again, its shards take
	// those ids back (Relaunched).
	Relaunch *Relaunch `json:"relaunch,omitempty"`
	// Nominal is the cron instant each of the newest plain executions
	// serves, oldest first, in runs (NominalRun): the runs' executions
	// are the last of the plain ones (Count less len(Runs)); an execution
	// before them, or in a run without an instant, serves none recorded (a
	// trigger, one queued by an earlier version). A fire committed late,
	// or a takeover's catch-up, is queued at its commit (Since) but still
	// serves its instant: this is how an execution is told from the next
	// fire's (FirstNominal; the fault soak's checker).
	Nominal []NominalRun `json:"nominal,omitempty"`
	// Staged is the instant of a cron fire of a misfire=false job that the
	// producer staged ahead of it while executions were pending (Add), and
	// StagedBy its origin. It collapses into them only if one is still
	// pending at its instant: when the last of them launches before it, the
	// fire is the entry's next execution, held back until its instant
	// (Take). Staged decided at once, the fire was lost when the pending
	// execution launched between the staging and the instant (slow
	// commits stage fires seconds ahead).
	Staged   time.Time `json:"staged,omitzero"`
	StagedBy string    `json:"stagedBy,omitempty"`
	// Gen is the generation of the entry (0: none recorded, an entry
	// written by an earlier version): set by the registry when it makes
	// the entry and kept by every rewrite of it, so a writer conditional
	// on what it read is never taken for one of an entry made anew since
	// (the registry's layout says how).
	Gen     int64 `json:"gen,omitempty"`
	Version int64 `json:"-"`
}

// Relaunch is a rolled-back launch of an execution: which execution (a
// run's key and queueing instant; both empty for a plain execution) and
// the task id each shard had. A launch rolled back after a failed ACCEPT
// may have reached the engine all the same; launched again under the same
// ids, the engine refuses the second launch of a task that runs
// ("Task has duplicate ID"; the pod exists) instead of running the fire
// twice.
type Relaunch struct {
	Key   string         `json:"key,omitempty"`
	At    time.Time      `json:"at,omitzero"`
	Tasks map[int]string `json:"tasks"`
}

// RelaunchOf is the Relaunch of run's execution (nil: a plain one).
func RelaunchOf(run *PendingRun, tasks map[int]string) *Relaunch {
	r := &Relaunch{Tasks: tasks}
	if run != nil {
		r.Key, r.At = run.IdempotencyKey, run.At.UTC()
	}
	return r
}

// next reports whether r is about the execution that launches next from rd.
func (r *Relaunch) next(rd Ready) bool {
	if r == nil {
		return false
	}
	if len(rd.Runs) > 0 {
		return !r.At.IsZero() && rd.Runs[0].IdempotencyKey == r.Key && rd.Runs[0].At.Equal(r.At)
	}
	return r.At.IsZero() && r.Key == ""
}

// Relaunched is the task id shard item of the execution that launches next
// had in a launch that was rolled back ("": none).
func (rd Ready) Relaunched(item int) string {
	if !rd.Relaunch.next(rd) {
		return ""
	}
	return rd.Relaunch.Tasks[item]
}

// Origin is who or what queued N plain executions in a row: "cron",
// "api:{user}", "console:{user}", "ejctl:{user}", "workflow:{flow}/{run}/{node}",
// "daemon", … (the history's triggeredBy).
type Origin struct {
	By string `json:"by"`
	N  int    `json:"n"`
}

// PendingRun is one triggered execution's override.
type PendingRun struct {
	JobParameter   string    `json:"jobParameter"`
	IdempotencyKey string    `json:"idempotencyKey,omitempty"`
	At             time.Time `json:"at"`
	By             string    `json:"by,omitempty"` // who or what queued it (Origin)
	// ScheduledAt is the nominal instant a backfill's run stands for
	// (zero: none), handed to the run (ELASTICJOB_SCHEDULED_TIME).
	ScheduledAt time.Time `json:"scheduledAt,omitzero"`
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
	// By is who or what queued it (Origin.By; a Run's own By wins).
	By string
	// Nominal is the cron instant a plain execution serves (zero: none):
	// a fire's, also when it commits late (Ready.Nominal).
	Nominal time.Time
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
			rd.Runs = []PendingRun{t.run()}
		} else {
			rd.PlainBy = addOrigin(nil, t.By)
			rd.Nominal = addNominal(nil, t.Nominal)
		}
		return rd, true
	}
	rd := *cur
	// A plain execution collapses into a plain one pending, never into a
	// run with an override: that run serves its override, not the
	// instant (a catch-up's, a fire's), which would go unserved.
	if t.Fire && !t.Misfire && rd.plain() >= 1 {
		// Whether it collapses is known at its instant (Staged): the
		// earliest such fire is kept (with a lead under half the period,
		// the producer's rule, there is one at most).
		if !rd.Staged.IsZero() && !at.Before(rd.Staged) {
			return rd, false
		}
		rd.Staged, rd.StagedBy = at, t.By
		return rd, true
	}
	if (!t.Misfire && t.Run == nil && rd.plain() >= 1) || Full(rd, maxPending) {
		return rd, false
	}
	rd.Count++
	if rd.Count > 1 {
		rd.Misfired++
	}
	if t.Run != nil {
		rd.Runs = append(rd.Runs[:len(rd.Runs):len(rd.Runs)], t.run())
	} else {
		rd.PlainBy = addOrigin(rd.PlainBy, t.By)
		rd.Nominal = addNominal(rd.Nominal, t.Nominal)
	}
	return rd, true
}

// run is the trigger's run, with the trigger's origin unless it has one.
func (t Trigger) run() PendingRun {
	r := *t.Run
	if r.By == "" {
		r.By = t.By
	}
	return r
}

// addOrigin appends one execution queued by by (a copy: entries are
// shared).
func addOrigin(os []Origin, by string) []Origin {
	if n := len(os); n > 0 && os[n-1].By == by {
		out := append([]Origin(nil), os...)
		out[n-1].N++
		return out
	}
	return append(os[:len(os):len(os)], Origin{By: by, N: 1})
}

// FirstBy is who or what queued the execution that launches next ("":
// not recorded).
func (rd Ready) FirstBy() string {
	if len(rd.Runs) > 0 {
		return rd.Runs[0].By
	}
	if len(rd.PlainBy) > 0 {
		return rd.PlainBy[0].By
	}
	return ""
}

// Full reports whether rd holds maxPending executions (0: no cap).
func Full(rd Ready, maxPending int) bool { return maxPending > 0 && rd.Count >= maxPending }

// Take returns what is left of rd once its oldest execution launches
// (ok false: nothing, the entry goes), queued again at now.
func Take(rd Ready, now time.Time) (rest Ready, ok bool) {
	if rd.Count <= 1 {
		if rd.Staged.After(now) {
			return stagedNext(rd), true
		}
		return Ready{}, false
	}
	next := rd
	if !next.Staged.After(now) { // an execution is pending at its instant: it collapsed
		next.Staged, next.StagedBy = time.Time{}, ""
	}
	if rd.Relaunch.next(rd) { // it was about this execution
		next.Relaunch = nil
	}
	if next.Misfired >= next.Count { // this execution was a misfire
		next.Misfired--
	}
	next.Nominal = next.takeNominal()
	next.Count--
	switch {
	case len(next.Runs) > 0:
		next.Runs = next.Runs[1:]
	case len(next.PlainBy) > 0:
		next.PlainBy = append([]Origin(nil), next.PlainBy...)
		if next.PlainBy[0].N--; next.PlainBy[0].N <= 0 {
			next.PlainBy = next.PlainBy[1:]
		}
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

// stagedNext is what is left of rd once its last pending execution
// launches before the instant of the fire staged into it (Staged): that
// fire, held back until its instant as a new entry of a staged fire is.
func stagedNext(rd Ready) Ready {
	next := Ready{Job: rd.Job, Count: 1, Since: rd.Staged, NotBefore: rd.Staged, Nominal: addNominal(nil, rd.Staged), Gen: rd.Gen, Version: rd.Version}
	if rd.StagedBy != "" {
		next.PlainBy = addOrigin(nil, rd.StagedBy)
	}
	return next
}
