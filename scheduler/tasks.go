package scheduler

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/namespace"
	"github.com/ejcloud/elasticjob/observe"
	"github.com/ejcloud/elasticjob/queue"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/round"
	"github.com/ejcloud/elasticjob/task"
)

// built is a plan's launches made concrete: per agent, the offers used,
// the tasks (engine.TaskLaunch), the running entries that record them and
// the queue entries they come from; in the plan's order, for commits.
type built struct {
	agents  []string // sorted
	byAgent map[string]*agentLaunch
	order   []placed
	events  []observe.TaskEvent
}

type agentLaunch struct {
	offerIDs []string
	launches []engine.TaskLaunch
	entries  []launchedEntry // same order as launches
}

// launchedEntry is one launch's entry and where it came from.
type launchedEntry struct {
	job   string
	item  int
	entry task.Entry
	ready *queue.Ready
	fail  *queue.Failover
}

// placed locates a launch in built.
type placed struct {
	agent  string
	i      int
	job    string
	item   int
	taskID string
}

func (b *built) entry(p placed) *task.Entry { return &b.byAgent[p.agent].entries[p.i].entry }

// record adds the running entries of ps to ch (gang: the name of a launch
// recorded over several commits).
func (b *built) record(ch *registry.Change, ps []placed, gang string) {
	for _, p := range ps {
		e := b.entry(p)
		e.Gang = gang
		ch.Launch(p.job, p.item, *e)
	}
}

// dequeue adds to ch the queue changes of every launch: one execution
// taken from each ready entry, each failover entry taken.
func (b *built) dequeue(ch *registry.Change, now time.Time) {
	done := map[string]bool{}
	for _, p := range b.order {
		l := b.byAgent[p.agent].entries[p.i]
		switch {
		case l.fail != nil:
			ch.TakeFailover(*l.fail)
		case !done[l.job]:
			done[l.job] = true
			ch.Dequeue(*l.ready, now)
		}
	}
}

// build turns a plan into tasks.
func (l *launcher) build(ctx context.Context, p round.Plan, now time.Time) *built {
	b := &built{byAgent: map[string]*agentLaunch{}}
	inputs := l.inputsOf(ctx, p)
	for _, pl := range p.Launches {
		al := b.byAgent[pl.AgentID]
		if al == nil {
			al = &agentLaunch{}
			b.byAgent[pl.AgentID] = al
			b.agents = append(b.agents, pl.AgentID)
		}
		if !slices.Contains(al.offerIDs, pl.OfferID) {
			al.offerIDs = append(al.offerIDs, pl.OfferID)
		}
		tl, ev := l.taskLaunch(ctx, pl, inputs[runKeyOf(pl)], now)
		e := task.Entry{TaskID: tl.TaskID, AgentID: pl.AgentID, Hostname: l.st.offers[pl.OfferID].Hostname, ExecutorID: tl.Executor.ID,
			State: task.Staging, Source: ev.Source, Trigger: ev.Trigger, Parameter: parameterOf(pl), RunKey: runKeyOf(pl), ScheduledAt: scheduledAtOf(pl), Nominal: nominalOf(pl), LaunchedAt: now, UpdatedAt: now}
		if pl.Failover != nil {
			e.Attempts = pl.Failover.Attempts
		}
		al.launches = append(al.launches, tl)
		al.entries = append(al.entries, launchedEntry{job: pl.Job.JobName, item: pl.Request.Shard, entry: e, ready: pl.Ready, fail: pl.Failover})
		b.order = append(b.order, placed{agent: pl.AgentID, i: len(al.entries) - 1, job: pl.Job.JobName, item: pl.Request.Shard, taskID: tl.TaskID})
		b.events = append(b.events, ev)
	}
	slices.Sort(b.agents)
	return b
}

// taskLaunch makes the engine's task for one launch, and its trace event.
func (l *launcher) taskLaunch(ctx context.Context, pl round.Launch, in jobs.Inputs, now time.Time) (engine.TaskLaunch, observe.TaskEvent) {
	job, a := pl.Job, pl.App
	kind, source := jobs.KindReady, jobs.SourceNormal
	if pl.Failover != nil {
		kind, source = jobs.KindFailover, jobs.SourceFailover
	} else if pl.Ready.Misfire() || pl.Ready.FirstBy() == registry.ByCatchUp {
		// No normal fire left ahead of this one, or a fire no leader fired
		// in time (a takeover's catch-up): not the on-time run.
		source = jobs.SourceMisfire
	}
	if p := parameterOf(pl); p != nil {
		job.JobParameter = *p
	}
	if job.TimeZone == "" && l.opts.Location != nil && l.opts.Location != time.Local {
		job.TimeZone = l.opts.Location.String() // a daemon's cron runs in the scheduler's zone, not the agent's
	}
	if l.opts.ResolveAppURL != nil {
		a.AppURL = l.opts.ResolveAppURL(a.AppURL)
	}
	item := pl.Request.Shard
	tid := fireTaskID(pl, kind)
	params, _ := jobs.ParseShardingItemParameters(job.ShardingItemParameters, job.ShardingTotalCount)
	data := jobs.TaskData{
		Version: jobs.TaskDataVersion,
		ShardingContext: jobs.ShardingContext{
			JobName: namespace.Name(job.JobName), Namespace: nsOf(job.JobName), TaskID: tid.String(), ShardingTotalCount: job.ShardingTotalCount,
			JobParameter: job.JobParameter, ShardingItem: item, ShardingParameter: params[item], Inputs: in,
			ScheduledTime: scheduledOf(pl),
		},
		ExecutionSource: source, Job: job, App: a,
	}
	if l.opts.SecretAccess != nil && len(job.Secrets) > 0 && len(job.OwnSecrets()) > 0 {
		data.SecretAccess = l.opts.SecretAccess(tid.String())
	}
	tl := engine.TaskLaunch{
		TaskID: tid.String(), Name: fmt.Sprintf("%s-%d", job.JobName, item), AgentID: pl.AgentID,
		CPUs: job.CPUCount, MemMB: job.MemoryMB, Task: data, KillGrace: l.opts.KillGrace,
		Executor: l.executorSpec(a, pl.AgentID),
	}
	var queued time.Time
	if pl.Failover != nil {
		queued = pl.Failover.Since
	} else {
		queued = laterOf(pl.Ready.Since, pl.Ready.NotBefore)
	}
	nominal := queued // before the job's last seen launch moves it
	if pl.Failover == nil {
		if seen := l.seen.at(job.JobName); seen.After(queued) {
			queued = seen
		}
	}
	term := l.opts.Term
	tl.Task.Term, tl.Task.Queued, tl.Task.Nominal = &term, nominal.UTC(), nominalOf(pl)
	ev := observe.TaskEvent{TaskID: tl.TaskID, Job: job.JobName, App: a.AppName, AgentID: pl.AgentID, Item: item,
		Source: string(source), Trigger: triggerOf(pl), Transient: job.JobExecutionType == jobs.Transient, At: now, Queued: queued, Nominal: tl.Task.Nominal}
	if pl.Failover == nil && !queued.IsZero() && now.Sub(queued) > LateAfter {
		ev.Late = l.lateWords(ctx, pl.Job.JobName, queued, now)
	}
	return tl, ev
}

// lateWords says how late a ready entry of job launches (due at due) and
// why it waited: its last recorded wait's rule and message, and the
// holders as they were, another namespace's work not named.
func (l *launcher) lateWords(ctx context.Context, job string, due, now time.Time) string {
	if m := l.lateMemo; m.job == job && m.due.Equal(due) && m.now.Equal(now) {
		return m.words // the job's other shards in this round
	}
	s := l.lateWordsOf(ctx, job, due, now)
	l.lateMemo = lateMemo{job: job, due: due, now: now, words: s}
	return s
}

// lateMemo is the last lateWords said.
type lateMemo struct {
	job      string
	due, now time.Time
	words    string
}

func (l *launcher) lateWordsOf(ctx context.Context, job string, due, now time.Time) string {
	s := fmt.Sprintf("launched %s after it was due", now.Sub(due).Round(time.Millisecond))
	if l.waits == nil {
		return s
	}
	w, ok := l.waits.recorded(ctx, queue.WaitKey(false, job, 0))
	if !ok {
		return s + "; no wait recorded"
	}
	own := namespace.Of(job)
	w = round.Redact(w, func(ns string) bool { return ns == own })
	s += "; waited: " + w.Reason
	if ns, rule := w.HeldBy(); rule != "" {
		s += fmt.Sprintf(" (namespace %s, rule %s, within its guarantee %t)", ns, rule, w.InGuarantee())
	}
	s += ": " + w.Message
	if sum := round.Summary(w, now); sum != "" {
		s += "; " + sum
	}
	return s
}

// nsOf is a job key's namespace as the sharding context names it: none
// for the default one (its payload stays the original's).
func nsOf(key string) string {
	if ns := namespace.Of(key); ns != namespace.Default {
		return ns
	}
	return ""
}

func (l *launcher) executorSpec(a app.Config, agentID string) engine.ExecutorSpec {
	spec := engine.ExecutorSpec{
		ID: jobs.ExecutorID(a.AppName, agentID), Name: "elasticjob executor for " + a.AppName,
		CPUs: a.CPUCount, MemMB: a.MemoryMB, Command: l.opts.ExecutorCommand, Shell: false,
		URIs: l.opts.ExecutorURIs, Env: l.opts.ExecutorEnv,
	}
	if l.opts.TaskUser != nil { // an app and its executor belong to one namespace
		spec.User = l.opts.TaskUser(namespace.Of(a.AppName))
	}
	return spec
}

// Origins of shards run again (task.Entry.Trigger).
const (
	ByRetry    = "retry"    // a failed shard relaunched within its run (maxRetries)
	ByFailover = "failover" // a failed or lost shard of a failover or DAEMON job
)

// triggerOf is who or what queued the run a launch serves.
func triggerOf(pl round.Launch) string {
	switch {
	case pl.Failover != nil && pl.Failover.Retry:
		return ByRetry
	case pl.Failover != nil:
		return ByFailover
	}
	return pl.Ready.FirstBy()
}

// parameterOf returns the run's jobParameter override, if any: the oldest
// pending run's for a ready launch, the failed run's for a failover.
func parameterOf(pl round.Launch) *string {
	if pl.Failover != nil {
		return pl.Failover.Parameter
	}
	if run := pl.Ready.First(); run != nil {
		return &run.JobParameter
	}
	return nil
}

// scheduledOf is the nominal instant a backfill's run stands for (""
// for any other run), RFC 3339 in UTC.
func scheduledOf(pl round.Launch) string {
	if at := scheduledAtOf(pl); !at.IsZero() {
		return at.Format(time.RFC3339)
	}
	return ""
}

// scheduledAtOf is scheduledOf as a time (zero for a run not of a
// backfill): a retry has it from the failed task (a workflow node's
// retry), else from its run's key, which names a job backfill's instant.
func scheduledAtOf(pl round.Launch) time.Time {
	if pl.Failover != nil {
		if !pl.Failover.ScheduledAt.IsZero() {
			return pl.Failover.ScheduledAt.UTC()
		}
		if at, ok := registry.BackfillInstant(pl.Failover.RunKey); ok {
			return at
		}
		return time.Time{}
	}
	if run := pl.Ready.First(); run != nil && !run.ScheduledAt.IsZero() {
		return run.ScheduledAt.UTC()
	}
	return time.Time{}
}

// nominalOf is the cron instant a launch serves (zero: none recorded): a
// backfill's run's instant, else a ready launch's execution's, a
// failover's failed run's. A backfill's run serves an instant of the
// schedule as a fire does, so history and the executor see it alike.
func nominalOf(pl round.Launch) time.Time {
	if at := scheduledAtOf(pl); !at.IsZero() {
		return at
	}
	if pl.Failover != nil {
		return pl.Failover.Nominal.UTC()
	}
	if pl.Ready == nil {
		return time.Time{}
	}
	return pl.Ready.FirstNominal()
}

// runKeyOf returns the idempotency key of the trigger a launch serves:
// the oldest pending run's for a ready launch, the failed run's for a
// failover.
func runKeyOf(pl round.Launch) string {
	if pl.Failover != nil {
		return pl.Failover.RunKey
	}
	if run := pl.Ready.First(); run != nil {
		return run.IdempotencyKey
	}
	return ""
}

// inputsOf reads the inputs of the keyed runs the plan launches (workflow
// nodes keep theirs in the run's record, not in the ready entry, so a
// long queue stays small): run key → inputs.
func (l *launcher) inputsOf(ctx context.Context, p round.Plan) map[string]jobs.Inputs {
	var out map[string]jobs.Inputs
	for _, pl := range p.Launches {
		key := runKeyOf(pl)
		if key == "" {
			continue
		}
		if _, seen := out[key]; seen {
			continue
		}
		rec, err := l.reg.Work().RunRecordOf(ctx, key)
		if err != nil || len(rec.Inputs) == 0 {
			continue
		}
		if out == nil {
			out = map[string]jobs.Inputs{}
		}
		out[key] = rec.Inputs
	}
	return out
}
