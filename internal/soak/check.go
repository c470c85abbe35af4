package soak

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/ejcloud/elasticjob/internal/soak/runlog"
)

// Anomaly kinds the checker reports.
const (
	DuplicateTask  = "duplicate-task"     // one task id started twice
	DuplicateFire  = "duplicate-fire"     // (job, fire instant, shard) started twice
	Overlap        = "self-overlap"       // a shard running twice at once
	LostFire       = "lost-fire"          // a fire neither run nor accounted for by the misfire rule
	ExtraRun       = "unexplained-run"    // more executions than fires and triggers
	DuplicateKey   = "duplicate-trigger"  // an idempotency key run twice
	LostTrigger    = "lost-trigger"       // an accepted trigger never run
	StaleTerm      = "stale-term"         // a launch by a term after a later term's first launch
	NoFireAfter    = "no-fire-after-heal" // a job not firing within the bound after the last fault
	HistoryMissing = "history-missing"    // a recorded run absent from history, or there twice
	HistoryWrong   = "history-outcome"    // history says another outcome than the run had
	StaleRun       = "stale-run"          // an execution queued before a disable or deregister started after the job came back
	EarlyRun       = "early-run"          // an execution started before the cron instant it serves
)

// Window is a span during which a job was registered and enabled with
// one cron expression; fires from From (exclusive) to To (inclusive) are
// expected.
type Window struct {
	From, To time.Time
	Cron     string
	// Opening is when the change that opened the window was sent (zero:
	// at From): it may have landed at any moment from then to From, its
	// answer. Closing is when the change that closed it was answered
	// (zero: at To, its sending). Fires between are edge fires.
	Opening time.Time `json:",omitzero"`
	Closing time.Time `json:",omitzero"`
}

// Job is what the checker knows of one job of the workload.
type Job struct {
	Name    string
	Shards  int
	Misfire bool
	Daemon  bool
	Windows []Window
	// Keys are the idempotency keys of triggers the API accepted; Tried
	// those sent whose answer was lost (each may have run at most once).
	Keys, Tried []string
	// Sent is when each trigger was first sent (nil in runs kept before
	// it was recorded).
	Sent map[string]time.Time `json:",omitempty"`
	// Unchecked is when a change of unknown outcome was sent (zero: none):
	// an answer lost, the request retried and refused (a deregister that
	// had landed, retried, answered 404): from then on what the job is is
	// not known, and no execution serving a later instant is judged.
	Unchecked time.Time `json:",omitzero"`
}

// Fault is one injected fault, from its start to its heal.
type Fault struct {
	Kind       string
	Start, End time.Time
	Detail     string

	resumed time.Time // the first launch by a newer term after End (faultLog)
	held    time.Time // until when a commit in flight at Start may be held (Input.StoreHold; faultLog)
}

// Outcome is how a run ended in history.
type Outcome struct {
	Success bool
	Open    bool `json:",omitempty"` // no completion recorded
	// NotRun, for a task history says was lost with its agent before it
	// started and not run again (docs/jobs.md, failover), is when it was
	// counted lost; Trigger is who queued it (history's triggeredBy).
	NotRun  time.Time `json:",omitzero"`
	Trigger string    `json:",omitempty"`
	// Nominal is the cron instant history says the run served (zero:
	// none recorded).
	Nominal time.Time `json:",omitzero"`
}

// Input is everything the checker reads.
type Input struct {
	Runs   []runlog.Line
	Jobs   []Job
	Faults []Fault
	// History maps a task id to the outcomes history holds for it (nil:
	// history not checked).
	History map[string][]Outcome
	// Replicas maps a replica's name to what its own history holds per
	// task id, on a shape whose every scheduler keeps a copy of history
	// (the etcd shape's replicated history): each is checked as History.
	Replicas map[string]map[string][]Outcome
	// HistoryAt is when history was read: runs ending in the 2 s before
	// it (or after) are not checked (the writer's flush lag).
	HistoryAt time.Time
	// Slack is the tolerance at window edges and for a run's end seen by
	// the scheduler after the agent recorded it (default 1s).
	Slack time.Duration
	// Heal bounds how late a job may fire after its first cron instant
	// following the last fault's heal (default 5s).
	Heal time.Duration
	// End is when the workload stopped (fires after it are not expected).
	End time.Time
	// Pending is each job's executions still waiting in its ready entry
	// at PendingAt, a little after End (nil: not read): a misfire=true
	// backlog a long outage left (one execution per fire, one at a time)
	// may not have drained by the end. Up to that many of a job's last
	// fires, less its fires from End to PendingAt, are counted pending
	// (Report.Pending) instead of lost.
	Pending   map[string]int
	PendingAt time.Time
	// Launched is when each task was launched, as history's launch trace
	// says (nil, or a task missing: its start stands for its launch). On
	// Kubernetes a pod starts seconds after its creation, and pods created
	// in one order start in another.
	Launched map[string]time.Time
	// StoreHold is how long a registry commit in flight when a fault took
	// a member of the store away (a scheduler killed, paused or cut from
	// its peers, the quorum lost) may be held before the store fails it
	// and it is retried: the fires after it wait behind it (0: none; the
	// etcd store's, EtcdCommitHold).
	StoreHold time.Duration
}

// EtcdCommitHold is how long the etcd store holds a proposal that its
// raft leader's loss dropped before it answers "request timed out": the
// server's request timeout, 5 s plus two election timeouts (500 ms on the
// soak's shapes).
const EtcdCommitHold = 5*time.Second + 2*500*time.Millisecond

// storeHold is a kept run's StoreHold, by its shape's registry.
func storeHold(shape string) time.Duration {
	switch shape {
	case "etcd", "real-mesos", "kube":
		return EtcdCommitHold
	}
	return 0
}

// Anomaly is one violation.
type Anomaly struct {
	Kind   string
	Job    string
	Detail string
}

func (a Anomaly) String() string { return fmt.Sprintf("%s %s: %s", a.Kind, a.Job, a.Detail) }

// Report is the checker's verdict.
type Report struct {
	Runs    int // task starts checked
	Fires   int // cron fires expected
	Stalled int // fires skipped by a paused leader (the documented stall rule)
	// Nominal counts the executions matched to their fire by the cron
	// instant the scheduler recorded with them (runlog.Line.Nominal), not
	// by when they were queued.
	Nominal   int
	Pending   int // misfire=true fires and triggers still waiting in their job's ready entry at the end
	Anomalies []Anomaly
	// Lateness of on-time cron runs (start minus nominal instant), under
	// faults (a run whose wait from its instant to its start met a fault
	// or the Heal after it) and without.
	LateFault, LateCalm []time.Duration
}

// ByKind counts anomalies by kind.
func (r Report) ByKind() map[string]int {
	m := map[string]int{}
	for _, a := range r.Anomalies {
		m[a.Kind]++
	}
	return m
}

// run is a task's start and end.
type run struct {
	runlog.Line
	end   time.Time // zero: no end recorded
	state string
}

// Check runs every check over the input.
func Check(in Input) Report {
	if in.Slack == 0 {
		in.Slack = time.Second
	}
	if in.Heal == 0 {
		in.Heal = 5 * time.Second
	}
	var rep Report
	runs, dups := pair(in.Runs)
	rep.Runs = len(runs)
	for _, id := range dups {
		rep.add(DuplicateTask, jobOfTask(runs, id), "task %s started twice", id)
	}
	byJob := map[string][]run{}
	for _, r := range runs {
		byJob[r.Job] = append(byJob[r.Job], r)
	}
	for _, rs := range byJob {
		slices.SortFunc(rs, func(a, b run) int { return a.At.Compare(b.At) })
	}
	// the expectations first, from the workload and the fault log alone
	faults := faultLog(in, runs)
	expected := map[string]jobExpect{}
	for _, j := range in.Jobs {
		if !j.Daemon {
			expected[j.Name] = expectJob(j, expectEnv{slack: in.Slack, end: in.End, faults: faults, pending: in.Pending[j.Name], pendingAt: in.PendingAt})
		}
	}
	nr := notRunOf(in)
	for _, j := range in.Jobs {
		rs := byJob[j.Name]
		rep.checkDuplicates(j, rs)
		rep.checkOverlap(j, rs)
		rep.checkStale(j, rs, in.Slack, in.Launched)
		if !j.Daemon {
			je := expected[j.Name]
			triggers := rep.checkKeys(j, rs, nr[j.Name], in.Pending[j.Name])
			rep.Fires += rep.checkFires(j, je, rs, in.Slack, in.End, faults, max(je.backlog-triggers, 0), nr[j.Name])
		}
	}
	rep.checkTerms(runs, in.Launched)
	rep.lateness(in, runs)
	hin := in
	hin.Heal = healBound(in.Heal, rep.LateCalm)
	rep.checkHeal(hin, byJob, expected)
	if in.History != nil || in.Replicas != nil {
		jobs := map[string]Job{}
		for _, j := range in.Jobs {
			jobs[j.Name] = j
		}
		if in.History != nil {
			rep.checkHistory(runs, jobs, "", in.History, in.HistoryAt, in.Faults)
		}
		for _, name := range slices.Sorted(maps.Keys(in.Replicas)) {
			rep.checkHistory(runs, jobs, "replica "+name+": ", in.Replicas[name], in.HistoryAt, in.Faults)
		}
	}
	slices.SortStableFunc(rep.Anomalies, func(a, b Anomaly) int { return cmp.Compare(a.Kind, b.Kind) })
	return rep
}

// healBound is how long after its first due fire a job may start once the
// last fault healed: heal, or the run's own p99 lateness without faults when
// that is longer. The heal check asks whether the scheduler works again, not
// how late it is: on a machine so loaded that fires start seconds late with no
// fault at all (p99 9.9 s at load 24), a start within a fixed 5 s is not what
// a working scheduler shows there, and a job that never starts again still
// fails it.
func healBound(heal time.Duration, calm []time.Duration) time.Duration {
	_, p99, _ := Quantiles(calm)
	return max(heal, p99)
}

func (rep *Report) add(kind, job, format string, args ...any) {
	rep.Anomalies = append(rep.Anomalies, Anomaly{Kind: kind, Job: job, Detail: fmt.Sprintf(format, args...)})
}

// pair joins each task's start and end; a task started twice is listed.
func pair(lines []runlog.Line) ([]run, []string) {
	idx := map[string]int{}
	var runs []run
	var dups []string
	ends := map[string]runlog.Line{}
	for _, l := range lines {
		switch l.Ev {
		case runlog.Start:
			if _, ok := idx[l.Task]; ok {
				dups = append(dups, l.Task)
				continue
			}
			idx[l.Task] = len(runs)
			runs = append(runs, run{Line: l})
		case runlog.End:
			if _, ok := ends[l.Task]; !ok {
				ends[l.Task] = l
			}
		}
	}
	for i := range runs {
		if e, ok := ends[runs[i].Task]; ok {
			runs[i].end, runs[i].state = e.At, e.State
		}
	}
	return runs, dups
}

func jobOfTask(runs []run, id string) string {
	for _, r := range runs {
		if r.Task == id {
			return r.Job
		}
	}
	return "?"
}

// onTime reports whether a run is an execution queued by its fire (not a
// failover of an earlier run).
func onTime(r run) bool { return r.Source != "FAILOVER" }

// key is the run's trigger key: the third word of its parameter.
func key(r run) string {
	f := strings.Fields(r.Param)
	if len(f) >= 3 && f[2] != "-" {
		return f[2]
	}
	return ""
}

// checkDuplicates: no (job, queued instant, shard) started twice by an
// execution (failovers re-run a shard of the same execution on purpose).
func (rep *Report) checkDuplicates(j Job, rs []run) {
	if j.Daemon {
		return
	}
	seen := map[string]string{}
	nominal := map[string]string{} // the runs of each fire's shard, by the instant they serve
	for _, r := range rs {
		if !onTime(r) || r.Queued.IsZero() || key(r) != "" {
			continue
		}
		if !r.Nominal.IsZero() {
			k := nominalKey(r.Nominal, r.Item)
			if first, ok := nominal[k]; ok {
				rep.add(DuplicateFire, j.Name, "fire %s shard %d started by %s and %s (the instant each serves)", r.Nominal.UTC().Format("15:04:05.000"), r.Item, first, r.Task)
				continue
			}
			nominal[k] = r.Task
		}
		k := fmt.Sprintf("%s/%d", r.Queued.UTC().Format(time.RFC3339Nano), r.Item)
		if first, ok := seen[k]; ok {
			rep.add(DuplicateFire, j.Name, "fire %s shard %d started by %s and %s", r.Queued.UTC().Format("15:04:05.000"), r.Item, first, r.Task)
			continue
		}
		seen[k] = r.Task
	}
}

// checkOverlap: a shard never runs twice at once. A run without a recorded
// end is taken to have ended when the shard next started.
func (rep *Report) checkOverlap(j Job, rs []run) {
	last := map[int]run{}
	for _, r := range rs {
		if p, ok := last[r.Item]; ok && !p.end.IsZero() && p.end.After(r.At) {
			rep.add(Overlap, j.Name, "shard %d: %s started at %s while %s ran until %s", r.Item, r.Task,
				r.At.UTC().Format("15:04:05.000"), p.Task, p.end.UTC().Format("15:04:05.000"))
		}
		if p, ok := last[r.Item]; !ok || r.end.IsZero() || r.end.After(p.end) {
			last[r.Item] = r
		}
	}
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// launchOf is when execution e was launched: its shards' first launch in
// launched, else its start.
func launchOf(rs []run, e execution, launched map[string]time.Time) time.Time {
	at := e.start
	for _, r := range rs {
		if l, ok := launched[r.Task]; ok && onTime(r) && key(r) == "" && r.Queued.UTC().Equal(e.queued) && l.Before(at) {
			at = l
		}
	}
	return at
}

func inAny(ws []Window, t time.Time, slack time.Duration) bool {
	for _, w := range ws {
		if t.After(w.From.Add(slack)) && t.Before(w.To.Add(-slack)) {
			return true
		}
	}
	return false
}

// checkStale: a disable or deregister clears the job's pending executions (docs/jobs.md,
// "disabling, updating or deleting the job in between clears it like any pending execution"), so
// none queued before the job went off may start once the change that brought it back (enable,
// register) was sent. The job was off between two windows when the later one's Opening is after the
// earlier one's To (an update sends one change: both are its sending). Windows without Opening
// (runs kept before it was recorded) are not checked.
//
// An execution counts from its launch (launched, history's) when known: on Kubernetes a pod created
// before the change may start after the job came back: it was no longer pending when the change
// came.
func (rep *Report) checkStale(j Job, rs []run, slack time.Duration, launched map[string]time.Time) {
	for k := 1; k < len(j.Windows); k++ {
		prev, next := j.Windows[k-1], j.Windows[k]
		if next.Opening.IsZero() || !next.Opening.After(prev.To) {
			continue
		}
		for _, e := range executions(rs) {
			if e.queued.Before(next.Opening.Add(-slack)) && e.queued.After(prev.From) && !launchOf(rs, e, launched).Before(next.Opening) {
				rep.add(StaleRun, j.Name, "execution queued %s started %s: the job went off at %s and came back at %s; the change should have cleared it",
					e.queued.Format("15:04:05.000"), e.start.Format("15:04:05.000"), prev.To.Format("15:04:05.000"), next.Opening.Format("15:04:05.000"))
			}
		}
	}
}

// checkKeys: each accepted trigger ran once per shard; a trigger whose
// answer was lost ran at most once.
//
// A trigger that never ran is still waiting at the end when its job's ready entry held executions
// then (pending) and no trigger of the job sent after it ran (they run in the order sent): it waits
// behind a backlog. Up to pending of them are counted pending (Report.Pending), and returned. A
// trigger recorded as not run (nr: lost before it started, failover off) is accounted for.
func (rep *Report) checkKeys(j Job, rs []run, nr []*notRun, pending int) int {
	n := map[string]map[int]int{}
	relaunch := map[string]bool{}
	for _, r := range rs {
		if k := key(r); k != "" && !onTime(r) {
			relaunch[k] = true // a FAILOVER run of the trigger's execution
		}
		if k := key(r); k != "" && onTime(r) {
			if n[k] == nil {
				n[k] = map[int]int{}
			}
			n[k][r.Item]++
		}
	}
	for _, k := range append(append([]string(nil), j.Keys...), j.Tried...) {
		for item, c := range n[k] {
			if c > 1 {
				rep.add(DuplicateKey, j.Name, "idempotency key %s ran %d times on shard %d", k, c, item)
			}
		}
	}
	waiting := 0
	for _, k := range j.Keys {
		if len(n[k]) > 0 || relaunch[k] || takeNotRunTrigger(nr, j.Sent[k]) {
			continue
		}
		if sent, ok := j.Sent[k]; ok && waiting < pending && !slices.ContainsFunc(rs, func(r run) bool { return j.Sent[key(r)].After(sent) }) {
			waiting++
			continue
		}
		rep.add(LostTrigger, j.Name, "trigger %s was accepted and never ran", k)
	}
	rep.Pending += waiting
	return waiting
}

// checkTerms: no task launched by a term after a later term's first launch
// (terms of launches only grow). A task's launch is its instant in
// launched, else its start.
func (rep *Report) checkTerms(runs []run, launched map[string]time.Time) {
	at := func(r run) time.Time {
		if l, ok := launched[r.Task]; ok && !l.IsZero() {
			return l
		}
		return r.At
	}
	first := map[int64]time.Time{}
	for _, r := range runs {
		if r.Term == nil {
			continue
		}
		if f, ok := first[*r.Term]; !ok || at(r).Before(f) {
			first[*r.Term] = at(r)
		}
	}
	terms := make([]int64, 0, len(first))
	for t := range first {
		terms = append(terms, t)
	}
	slices.Sort(terms)
	// later[t]: the earliest first launch of any term after t
	later := map[int64]time.Time{}
	var min time.Time
	for i := len(terms) - 1; i >= 0; i-- {
		later[terms[i]] = min
		if f := first[terms[i]]; min.IsZero() || f.Before(min) {
			min = f
		}
	}
	for _, r := range runs {
		if r.Term == nil {
			continue
		}
		if lf := later[*r.Term]; !lf.IsZero() && at(r).After(lf) {
			rep.add(StaleTerm, r.Job, "task %s launched by term %d at %s, after a later term's first launch at %s", r.Task, *r.Term,
				at(r).UTC().Format("15:04:05.000"), lf.UTC().Format("15:04:05.000"))
		}
	}
}

// lateness splits on-time cron runs' lateness (start less the instant
// they serve, when recorded, else their queueing) by whether a fault was
// on. A DAEMON task is left out: it is launched once and ticks on its
// own cron, so its recorded start (its first tick) is no fire's lateness.
func (rep *Report) lateness(in Input, runs []run) {
	daemon := map[string]bool{}
	for _, j := range in.Jobs {
		daemon[j.Name] = j.Daemon
	}
	for _, r := range runs {
		if r.Source != "NORMAL_TRIGGER" || r.Queued.IsZero() || key(r) != "" || daemon[r.Job] {
			continue
		}
		due := r.Queued
		if !r.Nominal.IsZero() { // a fire committed late is queued late
			due = r.Nominal
		}
		late := r.At.Sub(due)
		faulty := false
		for _, f := range in.Faults { // the wait from its instant to its start met a fault or its heal
			if !maxTime(due, r.At).Before(f.Start) && !due.After(f.End.Add(in.Heal)) {
				faulty = true
				break
			}
		}
		if faulty {
			rep.LateFault = append(rep.LateFault, late)
		} else {
			rep.LateCalm = append(rep.LateCalm, late)
		}
	}
}

// Quantiles returns p50, p99 and max of ds (zeros when empty).
func Quantiles(ds []time.Duration) (p50, p99, max time.Duration) {
	if len(ds) == 0 {
		return 0, 0, 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	at := func(q float64) time.Duration { return s[min(len(s)-1, int(q*float64(len(s))))] }
	return at(0.50), at(0.99), s[len(s)-1]
}

// Print writes the summary: faults by kind, runs checked, anomalies by
// kind (and each anomaly), lateness, the seed.
func (rep Report) Print(w io.Writer, seed uint64, faults []Fault) {
	kinds := map[string]int{}
	for _, f := range faults {
		kinds[f.Kind]++
	}
	fmt.Fprintf(w, "seed %d\nfaults: %d %s\n", seed, len(faults), counts(kinds))
	fmt.Fprintf(w, "runs checked: %d (fires expected %d, executions matched by their recorded instant %d, skipped by a paused leader %d, pending at the end %d)\n",
		rep.Runs, rep.Fires, rep.Nominal, rep.Stalled, rep.Pending)
	fmt.Fprintf(w, "anomalies: %d %s\n", len(rep.Anomalies), counts(rep.ByKind()))
	for _, a := range rep.Anomalies {
		fmt.Fprintf(w, "  %s\n", a)
	}
	for _, l := range []struct {
		name string
		ds   []time.Duration
	}{{"under faults", rep.LateFault}, {"without faults", rep.LateCalm}} {
		p50, p99, mx := Quantiles(l.ds)
		fmt.Fprintf(w, "fire lateness %s: n=%d p50=%s p99=%s max=%s\n", l.name, len(l.ds), p50.Round(time.Millisecond), p99.Round(time.Millisecond), mx.Round(time.Millisecond))
	}
}

func counts(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%d", k, m[k])
	}
	return "{" + strings.Join(parts, " ") + "}"
}
