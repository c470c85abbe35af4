package soak

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/ejcloud/elasticjob/internal/soak/runlog"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/jobs/cron"
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

	resumed time.Time // the first launch by a newer term after End (set by Check)
	held    time.Time // until when a commit in flight at Start may be held (Input.StoreHold; set by Check)
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

// memberFault: a fault kind that may take a member of the store away
// (StoreHold).
func memberFault(kind string) bool {
	switch kind {
	case "kill-leader", "kill-standby", "pause-leader", "standby-paused", "leader-cut-from-peers", "leader-peers-loss", "etcd-quorum-lost":
		return true
	}
	return false
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
	faults := resumed(in.Faults, runs)
	nr := notRunOf(in)
	for k := range faults {
		if in.StoreHold > 0 && memberFault(faults[k].Kind) {
			faults[k].held = faults[k].Start.Add(in.StoreHold)
		}
	}
	for _, j := range in.Jobs {
		rs := byJob[j.Name]
		rep.checkDuplicates(j, rs)
		rep.checkOverlap(j, rs)
		rep.checkStale(j, rs, in.Slack, in.Launched)
		if !j.Daemon {
			triggers := rep.checkKeys(j, rs, nr[j.Name], in.Pending[j.Name])
			rep.Fires += rep.checkFires(j, rs, in.Slack, in.End, faults, max(pendingAtEnd(j, in)-triggers, 0), nr[j.Name])
		}
	}
	rep.checkTerms(runs, in.Launched)
	rep.checkHeal(in, byJob)
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
	rep.lateness(in, runs)
	slices.SortStableFunc(rep.Anomalies, func(a, b Anomaly) int { return cmp.Compare(a.Kind, b.Kind) })
	return rep
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

// execution is one launch of a job's shards from one ready entry: the
// shard-0 run (others follow it), or any shard when shard 0 is absent.
type execution struct {
	queued, start, end time.Time
	misfire            bool
	// nominal is the cron instant the execution serves, as the scheduler
	// recorded it (zero: not recorded: a trigger, a run of an
	// older scheduler).
	nominal time.Time
}

// executions groups a job's non-failover, non-trigger runs by queued
// instant (all shards of one execution share it).
func executions(rs []run) []execution {
	m := map[time.Time]*execution{}
	for _, r := range rs {
		if !onTime(r) || key(r) != "" || r.Queued.IsZero() {
			continue
		}
		q := r.Queued.UTC()
		e := m[q]
		if e == nil {
			e = &execution{queued: q, start: r.At, end: r.end}
			m[q] = e
		}
		if r.At.Before(e.start) {
			e.start = r.At
		}
		if r.end.IsZero() || r.end.After(e.end) {
			e.end = maxTime(e.end, r.end)
		}
		e.misfire = e.misfire || r.Source == "MISFIRE"
		if e.nominal.IsZero() && !r.Nominal.IsZero() {
			e.nominal = r.Nominal.UTC()
		}
	}
	out := make([]execution, 0, len(m))
	for _, e := range m {
		out = append(out, *e)
	}
	slices.SortFunc(out, func(a, b execution) int { return a.queued.Compare(b.queued) })
	return out
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// fire is an expected fire instant, the cron's next instant after it,
// and whether its window was closed by a configuration change (update,
// disable, deregister clear a pending execution: docs/jobs.md).
type fire struct {
	at, next time.Time
	cut      time.Time // the change that closed the window (zero: the run's end)
	// closed is when that change had landed for sure (its answer; zero: the run's end): an
	// execution queued later is the next window's
	closed time.Time
}

// fires lists a job's expected fires: those of each window, Slack inside
// its edges.
func fires(j Job, slack time.Duration, end time.Time) ([]fire, error) {
	var out []fire
	for _, w := range j.Windows {
		s, err := cron.Parse(w.Cron)
		if err != nil {
			return nil, fmt.Errorf("job %s cron %q: %w", j.Name, w.Cron, err)
		}
		var cut, closed time.Time
		if !end.IsZero() && !w.To.Equal(end) {
			cut, closed = w.To, maxTime(w.To, w.Closing)
		}
		for t := s.Next(w.From.Add(slack), time.UTC); !t.IsZero() && !t.After(w.To.Add(-slack)); t = s.Next(t, time.UTC) {
			out = append(out, fire{at: t, next: s.Next(t, time.UTC), cut: cut, closed: closed})
		}
	}
	return out, nil
}

// stageLead bounds how far ahead of its instant the producer stages a fire
// (scheduler's maxLead): a fire staged into a pending entry is queued when
// the execution before it launches, which may be before its instant.
const stageLead = 5 * time.Second

// checkFires: every fire ran, or the misfire rule accounts for it. An
// execution belongs to the last fire at or before the time it was queued
// (a fire committed late is queued at its commit). misfire=true: fires
// and executions match one to one in order (the NORMAL execution queued
// after the fire and before the next, or a MISFIRE execution queued
// after the fire's staging: a replay, or an execution that waited behind
// another); misfire=false: a fire without its own execution is
// accounted for when an execution was pending or running at its instant
// (collapsed into it) or the next execution is a MISFIRE one (a
// takeover's catch-up collapsing the fires no leader fired), and no fire
// has two executions.
func (rep *Report) checkFires(j Job, rs []run, slack time.Duration, end time.Time, faults []Fault, pending int, nr []*notRun) int {
	fs, err := fires(j, slack, end)
	if err != nil {
		rep.add(LostFire, j.Name, "%v", err)
		return 0
	}
	ex := executions(rs)
	used := make([]bool, len(ex))
	fo := map[string]bool{} // FAILOVER runs already counted for a fire
	open, stray := rep.matchNominal(ex, used, fs)
	rep.checkEarly(j.Name, ex)
	var rest []fire
	for _, f := range open {
		i := sort.Search(len(ex), func(i int) bool { return !ex[i].queued.Before(f.at) })
		for ; i < len(ex) && (used[i] || ex[i].misfire); i++ {
		}
		if i < len(ex) && ex[i].queued.Before(f.next) && (f.closed.IsZero() || !ex[i].queued.After(f.closed)) {
			used[i] = true
			continue
		}
		rest = append(rest, f)
	}
	// misfire=false: fires while the leader was paused last may take a
	// replay left over, else the stall rule collapsed them; misfire=true
	// jobs replay every missed instant, so each must have run
	var paused []fire
	if !j.Misfire {
		for _, f := range rest {
			if stalled(faults, f) {
				paused = append(paused, f)
			}
		}
		rest = slices.DeleteFunc(rest, func(f fire) bool { return stalled(faults, f) })
	}
	m := replays{ex: ex, used: used, rs: rs, fo: fo, owner: map[int]fire{}, foOwner: map[string]fire{}}
	var lost []fire
	for k, f := range append(rest, paused...) {
		isPaused := k >= len(rest)
		if j.Misfire {
			i := sort.Search(len(ex), func(i int) bool { return !ex[i].queued.Before(f.at.Add(-stageLead)) })
			for ; i < len(ex) && (used[i] || !ex[i].misfire); i++ {
			}
			if i < len(ex) && (f.cut.IsZero() || ex[i].queued.Before(f.cut)) { // a change clears what is still pending
				used[i] = true
				m.owner[i] = f
				continue
			}
			if cleared(rs, f, true) {
				continue
			}
			if !isPaused && m.augment(f, visit{ex: map[int]bool{}, fo: map[string]bool{}}) {
				continue
			}
		} else {
			if busy(rs, f, slack, faults, j.Sent) || heldNotRun(nr, f, slack, commitBound(f, slack, faults)) {
				continue
			}
			i := sort.Search(len(ex), func(i int) bool { return ex[i].queued.After(f.at) })
			if i < len(ex) && ex[i].misfire {
				used[i] = true
				continue
			}
			// a launch of f rolled back (its ACCEPT failed) is queued again as a misfire behind
			// what is pending by then: the next fire's execution, so the MISFIRE one right after it
			if k := i + 1; k < len(ex) && !ex[i].misfire && !ex[i].queued.Before(f.next) && ex[k].misfire && !used[k] &&
				requeuedBehind(rs, j.Sent, f, ex[i], ex[k], slack) {
				used[k] = true
				continue
			}
			if collapsedIntoRequeued(rs, f) || collapsedIntoRelaunch(rs, f) || stalledBehind(ex, f) {
				continue
			}
		}
		if cleared(rs, f, j.Misfire) || relaunched(rs, f, fo) || takeNotRun(nr, f, commitBound(f, slack, faults)) {
			continue
		}
		if isPaused {
			rep.Stalled++
			continue
		}
		lost = append(lost, f)
	}
	if j.Misfire && pending > 0 { // the last ones wait in the backlog
		slices.SortFunc(lost, func(a, b fire) int { return a.at.Compare(b.at) })
		n := min(pending, len(lost))
		rep.Pending += n
		lost = lost[:len(lost)-n]
	}
	for _, f := range lost {
		rep.add(LostFire, j.Name, "fire %s (misfire=%v) neither ran nor was accounted for by the misfire rule", f.at.UTC().Format("15:04:05"), j.Misfire)
	}
	edge := edgeFires(j, slack, end)
	taken := make([]bool, len(edge))
	rep.checkStray(j.Name, slices.DeleteFunc(stray, func(e execution) bool { return unknownAt(j, e.nominal, slack) || atOpening(j, e.nominal, slack) }), edge, taken, end, slack)
	for i, e := range ex {
		if used[i] || !inAny(j.Windows, e.queued, slack) || (!j.Misfire && e.misfire) || takeEdge(edge, taken, e) {
			continue
		}
		rep.add(ExtraRun, j.Name, "execution queued %s matches no fire", e.queued.Format("15:04:05.000"))
	}
	return len(fs)
}

// unknownAt: the job was out of the checks at instant t (Job.Unchecked,
// within slack before it: the change may have landed as it was sent).
func unknownAt(j Job, t time.Time, slack time.Duration) bool {
	return !j.Unchecked.IsZero() && !t.Before(j.Unchecked.Add(-slack))
}

// atOpening: instant t is within slack before a window's From (the change's answer; Opening, its
// sending, unknown): the change may have committed before t and fired it. Matched by its recorded
// instant, such an execution is that fire's; two of them are a duplicate (checkDuplicates).
func atOpening(j Job, t time.Time, slack time.Duration) bool {
	for _, w := range j.Windows {
		if w.Opening.IsZero() && !t.Before(w.From.Add(-slack)) && !t.After(w.From) {
			return true
		}
	}
	return false
}

// requeuedBehind: rq, the MISFIRE execution right after the next fire's (next), may be fire f's
// launch rolled back and queued again behind it: its queueing instant is when the execution ahead
// of it in the entry was taken, that is next's launch (by stageLead after f's next instant, or by
// next's start), or the launch of a trigger sent meanwhile, which launches first (an execution with
// an override leads its entry) and started, or ran as FAILOVER, from then on.
func requeuedBehind(rs []run, sent map[string]time.Time, f fire, next, rq execution, slack time.Duration) bool {
	if rq.queued.Before(f.next.Add(stageLead)) || !rq.queued.After(next.start.Add(slack)) {
		return true
	}
	for _, r := range rs {
		s, ok := sent[key(r)]
		if ok && !s.Before(next.start.Add(-slack)) && !s.After(rq.queued) && !r.At.Before(rq.queued.Add(-slack)) {
			return true
		}
	}
	return false
}

// edgeFires lists the fires within slack of a window's edges: not expected (the change may have
// landed on either side of them), yet one may have run, and its execution may be queued inside the
// window: a fire staged ahead of its instant into a pending entry (stageLead) is queued when the
// execution before it launches, up to a few seconds earlier.
//
// A change answered late may have landed long before its answer: the fires from its sending on are
// edge fires too.
func edgeFires(j Job, slack time.Duration, end time.Time) []fire {
	var out []fire
	for _, w := range j.Windows {
		s, err := cron.Parse(w.Cron)
		if err != nil {
			continue
		}
		from, to := w.From, w.To.Add(slack)
		if !w.Opening.IsZero() && w.Opening.Before(from) {
			from = w.Opening.Add(-time.Nanosecond) // Next is strictly after
		}
		if w.Closing.After(to) {
			to = w.Closing
		}
		var cut time.Time
		if !end.IsZero() && !w.To.Equal(end) {
			cut = w.To
		}
		for t := s.Next(from, time.UTC); !t.IsZero() && !t.After(to); t = s.Next(t, time.UTC) {
			if !t.After(w.From.Add(slack)) || t.After(w.To.Add(-slack)) {
				out = append(out, fire{at: t, next: s.Next(t, time.UTC), cut: cut})
			}
		}
	}
	slices.SortFunc(out, func(a, b fire) int { return a.at.Compare(b.at) })
	return out
}

// takeEdge matches an execution no expected fire explains to an edge fire
// not matched yet: queued from its instant to the next, or, a MISFIRE
// execution (a fire staged into a pending entry, or replayed by a
// catch-up), from stageLead before it to its window's close, as an
// expected fire's replay is matched.
func takeEdge(edge []fire, taken []bool, e execution) bool {
	for i, f := range edge {
		from, until := f.at, f.next
		if e.misfire {
			from = f.at.Add(-stageLead)
			if until = f.cut; !until.IsZero() && until.Before(f.next) {
				until = f.next
			}
		}
		if !taken[i] && !e.queued.Before(from) && (until.IsZero() || e.queued.Before(until)) {
			taken[i] = true
			return true
		}
	}
	return false
}

// busy: an execution (a trigger's too) was pending or running at some
// moment from the fire's instant to the next, or to the heal of a fault
// on at its instant (a fire committed late collapses into what is pending
// when it commits).
//
// A fault that took a member of the store away holds a commit in flight as it began for up to
// Input.StoreHold, healed or not, and the producer commits instants in order: a fire within that
// hold may commit as late as its end.
//
// A fire no leader fired is caught up by the next term before its first launch: under misfire=false
// it collapses into what is pending then, so a fault's heal stretches to the first launch by a
// newer term after it.
//
// A trigger whose first launch never started (a term that lapsed as it launched: reconciliation
// finds the tasks unknown) runs only as FAILOVER, queued at the relaunch; it was pending from its
// sending (sent), so a fire collapses into it as into any pending execution.
func busy(rs []run, f fire, slack time.Duration, faults []Fault, sent map[string]time.Time) bool {
	until := commitBound(f, slack, faults)
	for _, r := range rs {
		q := r.Queued
		if !onTime(r) {
			q = relaunchedTriggerSent(rs, r, sent)
		}
		end := r.end
		if !end.IsZero() {
			end = maxTime(end, seenRunningUntil(r, faults))
		}
		if !q.IsZero() && q.Before(until) && (end.IsZero() || !end.Add(slack).Before(f.at)) {
			return true
		}
	}
	return false
}

// commitBound is until when fire f may have committed: its next instant,
// or, for a fire during a fault, as late as the fault's heal (and a new
// term's first launch after it).
func commitBound(f fire, slack time.Duration, faults []Fault) time.Time {
	until := f.next
	for _, x := range faults {
		if !f.at.Before(x.Start) && !f.at.After(x.End) {
			until = maxTime(until, maxTime(x.End.Add(slack), x.resumed))
		}
		if !f.at.Before(x.Start) && !f.at.After(x.held) { // or behind a commit the store held
			until = maxTime(until, x.held.Add(slack))
		}
	}
	return until
}

// UnreachableBound is how long after a real agent is lost its tasks may
// still count as running: the master marks it unreachable after 3 missed
// pings of 2 s, the schedulers count its tasks lost after the shape's
// task_unreachable_timeout (20 s), checked every 5 s.
const UnreachableBound = 6*time.Second + 20*time.Second + 5*time.Second

// seenRunningUntil is, for a run the scheduler saw end late, until when
// it may have taken it as running: its job's fires meanwhile collapse into
// it (zero: no such fault).
//
// A run whose end's update died with its lost agent (updateLost under
// agent-lost) ran for the scheduler until it was counted lost.
//
// A run that ended while the leader's links to its store's peers lost packets, or up to
// maxLossStall after they healed (a chunk delayed before the heal holds the link's later ones
// behind it), had its end's commit wait on them: the leader's registry held it running until the
// commit landed.
//
// A run that ended while the engine was away for the leader (engineAway, or up to updateLag
// before), had its end held until it was back: the leader took it as running until then.
func seenRunningUntil(r run, faults []Fault) time.Time {
	var until time.Time
	for _, f := range faults {
		switch {
		case f.Kind == AgentLost && !f.Start.Before(r.end) && f.Start.Before(r.end.Add(updateLag)):
			until = maxTime(until, f.Start.Add(UnreachableBound))
		case lossToStore(f.Kind) && !r.end.Before(f.Start) && !r.end.After(f.End.Add(maxLossStall)):
			until = maxTime(until, f.End.Add(maxLossStall))
		case engineAway(f.Kind) && !f.Start.After(r.end.Add(updateLag)) && !r.end.After(f.End):
			until = maxTime(until, f.End.Add(engineResendLag))
		}
	}
	return until
}

// engineResendLag bounds how long after the engine is back for the leader
// (a killed Mesos master once every agent registered again, the leader's
// link to the master or the API server restored, the API server started
// again) a task's end held meanwhile reaches it: the agents send their
// pending updates again when they register, the master its queued ones
// when the framework subscribes again, the Kubernetes engine reads the
// pods' states again when its watch resumes.
const engineResendLag = 2 * time.Second

// engineAway names the faults during which the leader hears of no task's
// end: the Mesos master down or out of its reach, the Kubernetes API
// server down or out of its reach.
func engineAway(kind string) bool {
	switch kind {
	case MasterKilled, "leader-cut-from-master", "apiserver-stopped", "leader-cut-from-apiserver":
		return true
	}
	return false
}

// lossToStore names the faults losing packets on the leader's links to its
// store: the etcd shapes' peers, the zk shape's ensemble.
func lossToStore(kind string) bool {
	return kind == "leader-peers-loss" || kind == "leader-registry-loss"
}

// relaunchedTriggerSent is when a FAILOVER run's trigger was sent, if no
// run of that trigger started before as itself (zero otherwise).
func relaunchedTriggerSent(rs []run, r run, sent map[string]time.Time) time.Time {
	k := key(r)
	at, ok := sent[k]
	if k == "" || !ok {
		return time.Time{}
	}
	for _, x := range rs {
		if onTime(x) && key(x) == k {
			return time.Time{}
		}
	}
	return at
}

// resumed returns the faults, each with the first start after its heal of
// a run launched by a term newer than every term that launched a run
// before the fault began, before the next fault and within 30 s (zero:
// none): a new leader's catch-up of the fires no leader fired precedes
// its first launch.
func resumed(faults []Fault, runs []run) []Fault {
	const resumeBound = 30 * time.Second // before the next fault, and at most this long after the heal
	byStart := slices.Clone(runs)
	slices.SortFunc(byStart, func(a, b run) int { return a.At.Compare(b.At) })
	out := slices.Clone(faults)
	for k := range out {
		x := &out[k]
		var before int64
		for _, r := range byStart {
			if r.Term == nil {
				continue
			}
			if r.At.Before(x.Start) {
				before = max(before, *r.Term)
				continue
			}
			if r.At.After(x.End.Add(resumeBound)) || (k+1 < len(out) && r.At.After(out[k+1].Start)) {
				break // no takeover after this fault: the leader went on
			}
			if r.At.After(x.End) && *r.Term > before {
				x.resumed = r.At
				break
			}
		}
	}
	return out
}

// collapsedIntoRelaunch: a misfire=false fire collapsed into an execution pending at its instant
// whose launch never started and ran as a FAILOVER relaunch (docs/jobs.md: a task that never
// started runs again at once): such a relaunch started after the fire, within a minute, and no
// on-time execution of the job started in between.
//
// The relaunch may come long after the fire: on Kubernetes a launch whose pod never started (the
// API server down, then its node lost) is lost only when its pod is gone, 40 s after its node left
// (engine/kube's pod GC), and its fires meanwhile collapse into it: relaunchBound. A relaunch that
// carries the instant its run served was pending at f's only if that instant is not later, and is
// of a launch that never started only if no run serving that instant started.
func collapsedIntoRelaunch(rs []run, f fire) bool {
	for _, r := range rs {
		if onTime(r) || key(r) != "" || r.At.Before(f.at) || !r.At.Before(f.at.Add(relaunchBound)) || r.Nominal.After(f.at) || startedAs(rs, r) {
			continue
		}
		between := false
		for _, x := range rs {
			if onTime(x) && !x.At.Before(f.at) && x.At.Before(r.At) {
				between = true
				break
			}
		}
		if !between {
			return true
		}
	}
	return false
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

// collapsedIntoRequeued: a misfire=false fire collapsed into an execution pending at its instant
// whose launch was rolled back (its ACCEPT failed) and queued again: the execution's Queued is the
// requeue's instant, after the fire, but its task ids, kept across the rollback (queue.Relaunch),
// carry the instant it was first queued (jobs.FireTaskID), at or before the fire.
func collapsedIntoRequeued(rs []run, f fire) bool {
	for _, r := range rs {
		if !onTime(r) || key(r) != "" || !r.Queued.After(f.at) || r.At.Before(f.at) {
			continue
		}
		if first, ok := firstQueued(r.Task); ok && !first.After(f.at) {
			return true
		}
	}
	return false
}

// firstQueued is the instant a task's execution was first queued, as its
// id carries it (false: an id without one).
func firstQueued(taskID string) (time.Time, bool) {
	id, err := jobs.ParseTaskID(taskID)
	if err != nil {
		return time.Time{}, false
	}
	return jobs.UUIDTime(id.UUID)
}

// relaunchBound is how long after a fire the FAILOVER relaunch of the
// never-started execution it collapsed into may start: a node's loss on
// Kubernetes (up to 30 s of fault and the pod GC's 40 s quarantine) after
// an API server outage that held the fires pending.
const relaunchBound = 3 * time.Minute

// relaunched: a FAILOVER run of the job, launched after the fire and
// not yet counted for another, stands for it: a task that never started
// (its agent died first) runs again at once as FAILOVER (docs/jobs.md),
// so the fire's own start may be that one.
func relaunched(rs []run, f fire, fo map[string]bool) bool {
	for _, r := range rs {
		if standsFor(r, f) && !fo[r.Task] {
			fo[r.Task] = true
			return true
		}
	}
	return false
}

// standsFor: r is a FAILOVER relaunch (not a trigger's) that started
// within a minute after the fire, so it may stand for it (relaunched);
// one that carries the instant its run served stands for that fire only.
func standsFor(r run, f fire) bool {
	return !onTime(r) && key(r) == "" && !r.At.Before(f.at) && r.At.Before(f.at.Add(time.Minute)) &&
		(r.Nominal.IsZero() || r.Nominal.Equal(f.at))
}

// stalled: the fire's instant fell while the leader was paused (SIGSTOP)
// or its producer was held retrying a commit the store refused (a full
// disk): a leader that stalled for more than a period fires a
// misfire=false job once for the instants it missed (docs/jobs.md);
// counted in Report.Stalled. A misfire=true job replays each of them: no
// exception.
func stalled(faults []Fault, f fire) bool {
	for _, x := range faults {
		if (strings.HasPrefix(x.Kind, "pause-") || x.Kind == "disk-full") && !f.at.Before(x.Start) && !f.at.After(x.End) {
			return true
		}
	}
	return false
}

// cleared: the fire's window was closed by a configuration change before
// any execution started after the fire (the change cleared it pending),
// or, misfire=true, at all (the change cleared the backlog of executions
// still pending: docs/jobs.md).
func cleared(rs []run, f fire, misfire bool) bool {
	if f.cut.IsZero() {
		return false
	}
	if misfire {
		return true
	}
	for _, r := range rs {
		if !r.At.Before(f.at) && r.At.Before(f.cut) {
			return false
		}
	}
	return true
}

func containsTime(ts []time.Time, t time.Time) bool {
	for _, x := range ts {
		if x.Equal(t) {
			return true
		}
	}
	return false
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

// historyLag is how long after a run's end its history row may lag.
const historyLag = 2 * time.Second

// checkHistory: every ended run of a TRANSIENT job is in history once,
// with its outcome. A DAEMON task is not one execution: history records
// each run its executor reports (BEGIN and COMPLETE of the cron inside the
// task, sampled by the app's eventTraceSamplingCount), none when it
// reports none, as the simulated agents' tasks do, several when it ran
// several times; its rows are not the task's (docs/history.md).
//
// A run the simulated agent ended just before its mesos-local was killed may have its end in the
// run log and never in the scheduler: the update died with the agent, whose successor answers the
// reconciliation with the task lost, and history records that failure (the shard runs again as
// FAILOVER). Such a run may be a failure in history.
//
// A run whose process records its own end (real agents: the job script writes TASK_FINISHED when it
// exits 0) may be killed in history when a change that closed its job's window (a disable or
// deregister kills the job's running tasks) was sent while it ran: the kill reached the executor
// before it saw the process end, and the executor reports the task killed, as Mesos's own does.
// where prefixes each anomaly's detail (the replica's name).
func (rep *Report) checkHistory(runs []run, jobs map[string]Job, where string, hist map[string][]Outcome, read time.Time, faults []Fault) {
	for _, r := range runs {
		if jobs[r.Job].Daemon || r.end.IsZero() || (!read.IsZero() && r.end.After(read.Add(-historyLag))) {
			continue
		}
		hs := hist[r.Task]
		if len(hs) != 1 {
			rep.add(HistoryMissing, r.Job, "%stask %s (started %s) is in history %d times", where, r.Task, r.At.UTC().Format("15:04:05.000"), len(hs))
			continue
		}
		if hs[0].Open {
			rep.add(HistoryWrong, r.Job, "%stask %s ended %s at %s, history has no completion", where, r.Task, r.state, r.end.UTC().Format("15:04:05.000"))
			continue
		}
		if want := r.state == "TASK_FINISHED"; hs[0].Success != want && !(want && (updateLost(r, faults) || killedByChange(r, jobs[r.Job].Windows))) {
			rep.add(HistoryWrong, r.Job, "%stask %s ended %s, history says success=%v", where, r.Task, r.state, hs[0].Success)
		}
		if !r.Nominal.Equal(hs[0].Nominal) {
			rep.add(HistoryWrong, r.Job, "%stask %s served the instant %s, history says %s", where, r.Task, fmtInstant(r.Nominal), fmtInstant(hs[0].Nominal))
		}
	}
}

// fmtInstant is a cron instant as the checker prints it ("none": zero).
func fmtInstant(t time.Time) string {
	if t.IsZero() {
		return "none"
	}
	return t.UTC().Format("15:04:05.000")
}

// killedByChange: a change closing one of the job's windows was sent before the run ended, or
// within updateLag after, and answered after it started.
func killedByChange(r run, ws []Window) bool {
	for _, w := range ws {
		if !w.Closing.IsZero() && !r.end.Add(updateLag).Before(w.To) && r.At.Before(w.Closing) {
			return true
		}
	}
	return false
}

// updateLag bounds how long a simulated agent's status update takes to
// reach the scheduler.
const updateLag = time.Second

// maxLossStall is the longest a chunk waits on a proxied link losing
// packets (proxy.go, lossStall: 0.2 s doubling up to 6.4 s).
const maxLossStall = 12600 * time.Millisecond

// updateLost: the agents were killed before the run's end could reach the scheduler: within
// updateLag after it ended, or, when the leader's agent link was losing packets as it ended, within
// the longest stall after that fault healed. On real Mesos (agent-lost) the executor holding the
// update dies with its agent, whose work directory goes too: the task is LOST once unreachable too
// long.
func updateLost(r run, faults []Fault) bool {
	until := r.end.Add(updateLag)
	for _, x := range faults {
		if x.Kind == "leader-agents-loss" && !r.end.Before(x.Start) && !r.end.After(x.End) {
			until = maxTime(until, x.End.Add(maxLossStall+updateLag))
		}
	}
	for _, f := range faults {
		if (f.Kind == "agents-killed" || f.Kind == AgentLost) && !f.Start.Before(r.end) && f.Start.Before(until) {
			return true
		}
	}
	return false
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

// replays matches misfire=true fires to the MISFIRE executions (and the FAILOVER relaunches) that
// stand for them. The first match is greedy, in fire order: a fire takes the first free MISFIRE
// execution queued after it was staged. A fire left without one then looks for an augmenting path:
// a MISFIRE execution it may take from the fire holding it, which in turn takes another, ending at
// a free execution or at a FAILOVER relaunch (relaunched's rule) the later fire may stand on, free
// or itself taken from the fire holding it. Greedily, a fire whose own execution ran as FAILOVER
// (its task never started: the term ended during its launch) took the next fire's MISFIRE
// execution, and so on down the backlog, and the backlog's last fire was reported lost. A relaunch
// a path could not move was one short the same way. No execution or relaunch matched before is
// freed: a path only moves them between fires.
type replays struct {
	ex    []execution
	used  []bool
	rs    []run
	fo    map[string]bool
	owner map[int]fire // a MISFIRE execution's fire
	// foOwner is a FAILOVER relaunch's fire, when the matching took it
	// (one in fo without an owner was counted outside it).
	foOwner map[string]fire
}

// visit is what one augmenting search has tried: executions by index,
// relaunches by task id.
type visit struct {
	ex map[int]bool
	fo map[string]bool
}

func (m *replays) augment(f fire, seen visit) bool {
	i := sort.Search(len(m.ex), func(i int) bool { return !m.ex[i].queued.Before(f.at.Add(-stageLead)) })
	for ; i < len(m.ex); i++ {
		e := m.ex[i]
		if !e.misfire || seen.ex[i] || (!f.cut.IsZero() && !e.queued.Before(f.cut)) {
			continue
		}
		g, held := m.owner[i]
		if m.used[i] && !held { // an on-time match of the first pass
			continue
		}
		seen.ex[i] = true
		if !m.used[i] || m.augment(g, seen) {
			m.used[i] = true
			m.owner[i] = f
			return true
		}
	}
	// a free relaunch first (the shortest path), then one held by another
	// fire of the matching that finds another path
	for _, free := range []bool{true, false} {
		for _, r := range m.rs {
			if !standsFor(r, f) || seen.fo[r.Task] || m.fo[r.Task] == free {
				continue
			}
			g, held := m.foOwner[r.Task]
			if !free && !held { // counted outside the matching
				continue
			}
			seen.fo[r.Task] = true
			if free || m.augment(g, seen) {
				m.fo[r.Task] = true
				m.foOwner[r.Task] = f
				return true
			}
		}
	}
	return false
}

// pendingAtEnd is how many of a misfire=true job's fires up to End may
// still wait in its ready entry: the executions pending at PendingAt less
// the job's fires after End (the scheduler fires on after the workload
// stopped) and within Slack before it (not expected, yet they may queue).
func pendingAtEnd(j Job, in Input) int {
	n := in.Pending[j.Name]
	if n == 0 || !j.Misfire || len(j.Windows) == 0 {
		return 0
	}
	w := j.Windows[len(j.Windows)-1]
	if !w.To.Equal(in.End) { // closed before the end: its entry was cleared
		return 0
	}
	s, err := cron.Parse(w.Cron)
	if err != nil {
		return 0
	}
	for t := s.Next(in.End.Add(-in.Slack), time.UTC); !t.IsZero() && !t.After(in.PendingAt); t = s.Next(t, time.UTC) { // and the edge's
		n--
	}
	return max(n, 0)
}
