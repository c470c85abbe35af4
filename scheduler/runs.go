package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/mesos"
	"github.com/ejcloud/elasticjob/offers"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/store"
)

// Run ends: pauseAfterFailures and the records of keyed triggers.
//
// A run is one execution of a job: the shards launched together from one
// ready entry. It ends when no task of the job runs any more and none of
// its shards waits for a retry within the run (maxRetries, or a relaunch
// of a task that never started). A failover relaunch (failover=true, or a
// DAEMON task) of a shard that failed for good belongs to the next run. A
// run failed when a shard failed for good; killed shards (update, disable,
// deregister) count neither way. For DAEMON jobs each run a shard reports
// counts as well. The bookkeeping is committed with the task's state
// change, so a new leader continues it.

// shard outcomes within a run.
const (
	outSuccess  = "success"
	outFailed   = "failed"
	outRetrying = "retrying"
	outKilled   = "killed"
)

func outcomeOf(st mesos.Status, retry bool) string {
	switch {
	case st.State == "TASK_FINISHED":
		return outSuccess
	case st.State == "TASK_KILLED":
		return outKilled
	case retry:
		return outRetrying
	}
	return outFailed
}

// runKeyOf returns the idempotency key of the trigger a launch serves:
// the oldest pending run's for a ready launch, the failed run's for a
// failover (as parameterOf).
func runKeyOf(job string, l offers.Launch, w work) string {
	if l.Request.Kind == offers.Failover {
		return w.failover[jobs.MetaKey(job, l.Request.Shard)].RunKey
	}
	if rd := w.ready[job]; len(rd.Runs) > 0 {
		return rd.Runs[0].IdempotencyKey
	}
	return ""
}

// end commits a task's end (its running entry removed, with extra) and
// its run bookkeeping in one commit; retry says the shard runs again
// within the run. A pause is notified once committed.
func (s *Scheduler) end(ctx context.Context, job jobs.Config, ev TaskEvent, rt registry.Running, st mesos.Status, retry bool, extra []store.Op) error {
	tid, _ := jobs.ParseTaskID(st.TaskID)
	var book []store.Op
	var pause *registry.Pause
	if job.PauseAfterFailures > 0 || rt.RunKey != "" {
		ended, err := s.runEnds(ctx, tid, retry)
		if err != nil {
			return err
		}
		out := outcomeOf(st, retry)
		if rt.RunKey != "" {
			op, err := s.recordShard(ctx, rt.RunKey, tid, st, ended)
			if err != nil {
				return err
			}
			book = append(book, op)
		}
		if job.PauseAfterFailures > 0 {
			ops, p, err := s.countRun(ctx, job, out, failureText(st), ended)
			if err != nil {
				return err
			}
			book, pause = append(book, ops...), p
		}
	}
	committed, err := s.finish(ctx, tid, rt, append(extra, book...))
	if committed && pause != nil {
		s.paused(job, ev, *pause)
	}
	return err
}

func failureText(st mesos.Status) string {
	if st.Message != "" {
		return st.Message
	}
	return st.State
}

// runEnds reports whether the end of tid ends its job's run: no other
// shard runs and none waits for a retry within the run.
func (s *Scheduler) runEnds(ctx context.Context, tid jobs.TaskID, retry bool) (bool, error) {
	if retry {
		return false, nil
	}
	running, err := s.runningOf(ctx, tid.JobName)
	if err != nil {
		return false, err
	}
	for item := range running {
		if item != tid.Item {
			return false, nil
		}
	}
	nodes, err := s.Registry.KV().List(ctx, registry.FailoverPath+"/"+tid.JobName)
	if err != nil {
		return false, fmt.Errorf("scheduler: run end: list failover of %s: %w", tid.JobName, err)
	}
	for _, n := range nodes {
		var f registry.Failover
		if json.Unmarshal(n.Value, &f) == nil && f.Retry {
			return false, nil
		}
	}
	return true, nil
}

// recordShard returns the op that writes a shard's end into its keyed
// trigger's record (and marks the run done when it ended).
func (s *Scheduler) recordShard(ctx context.Context, key string, tid jobs.TaskID, st mesos.Status, ended bool) (store.Op, error) {
	rec, err := s.Registry.RunRecordOf(ctx, key)
	if err != nil && !errors.Is(err, registry.ErrRunNotFound) {
		return store.Op{}, err
	}
	if rec.JobName == "" {
		rec.JobName = tid.JobName
	}
	so := registry.ShardOutcome{Item: tid.Item, TaskID: st.TaskID, State: st.State, Message: st.Message}
	rep := shardReportOf(st.Data)
	so.StartedAt, so.EndedAt, so.Outputs = rep.StartTime, rep.CompleteTime, rep.Outputs
	if so.EndedAt.IsZero() {
		so.EndedAt = s.Clock.Now().UTC()
	}
	replaced := false
	for i := range rec.Shards {
		if rec.Shards[i].Item == tid.Item {
			rec.Shards[i], replaced = so, true
		}
	}
	if !replaced {
		rec.Shards = append(rec.Shards, so)
	}
	if ended && !rec.Done {
		rec.Done, rec.EndedAt, rec.Success = true, s.Clock.Now().UTC(), true
		for _, sh := range rec.Shards {
			if sh.State != "TASK_FINISHED" {
				rec.Success = false
			}
		}
	}
	return registry.PutRunRecordOp(key, rec), nil
}

// countRun folds a shard's outcome into the job's run record; at the
// run's end it counts a failed run (or resets the count after a success)
// and pauses the job when the count reaches pauseAfterFailures.
func (s *Scheduler) countRun(ctx context.Context, job jobs.Config, out, cause string, ended bool) ([]store.Op, *registry.Pause, error) {
	rs, err := s.Registry.RunStateOf(ctx, job.JobName)
	if err != nil {
		return nil, nil, err
	}
	before := rs
	switch out {
	case outFailed:
		if !rs.Failed {
			rs.Failed, rs.Cause = true, cause
		}
	case outSuccess:
		rs.Succeeded = true
	}
	if !ended {
		if rs == before {
			return nil, nil, nil
		}
		return []store.Op{registry.PutRunStateOp(job.JobName, rs)}, nil, nil
	}
	switch {
	case rs.Failed:
		rs.Consecutive++
		rs.LastFailedAt, rs.LastCause = s.Clock.Now().UTC(), rs.Cause
	case rs.Succeeded:
		rs.Consecutive = 0
	}
	rs.Failed, rs.Succeeded, rs.Cause = false, false, ""
	ops, p := s.pauseIfDue(job, &rs)
	return append(ops, registry.PutRunStateOp(job.JobName, rs)), p, nil
}

// pauseIfDue returns the op that disables the job when its failed runs in
// a row reached its limit (and resets the count), with why.
func (s *Scheduler) pauseIfDue(job jobs.Config, rs *registry.RunState) ([]store.Op, *registry.Pause) {
	if rs.Consecutive < job.PauseAfterFailures {
		return nil, nil
	}
	if _, _, runnable := s.catalog.Runnable(job.JobName); !runnable {
		return nil, nil // already disabled (or its app is)
	}
	now := s.Clock.Now().UTC()
	p := registry.Pause{By: registry.PausedBy, At: now, FailedRuns: rs.Consecutive, Cause: rs.LastCause,
		Reason: fmt.Sprintf("paused after %d failed %s in a row at %s", rs.Consecutive, plural(rs.Consecutive, "run", "runs"), now.Format(time.RFC3339))}
	if rs.LastCause != "" {
		p.Reason += "; last failure: " + truncateText(rs.LastCause, 200)
	}
	rs.Consecutive = 0
	return []store.Op{registry.PauseOp(job.JobName, p)}, &p
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func truncateText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// daemonRunEnded counts one run a DAEMON shard reported.
func (s *Scheduler) daemonRunEnded(ctx context.Context, job jobs.Config, ev TaskEvent, rep jobs.DaemonReport) {
	if job.PauseAfterFailures <= 0 {
		return
	}
	out := outSuccess
	if !rep.Success {
		out = outFailed
	}
	ops, p, err := s.countRun(ctx, job, out, rep.Message, true)
	if err == nil {
		err = s.Registry.Commit(ctx, ops...)
	}
	if err != nil {
		s.Log.Warn("daemon run: count failures", "job", job.JobName, "err", err)
		return
	}
	if p != nil {
		s.paused(job, ev, *p)
	}
}

// paused logs a pause and posts it to the job's webhook, if it has one.
func (s *Scheduler) paused(job jobs.Config, ev TaskEvent, p registry.Pause) {
	s.Log.Warn("job paused", "job", job.JobName, "failedRuns", p.FailedRuns, "cause", p.Cause)
	u := job.Props["webhook.url"]
	if s.Notifier == nil || !(strings.HasPrefix(u, "http://") || strings.HasPrefix(u, "https://")) {
		return
	}
	ev.At = p.At
	s.Notifier.Notify(job, ev, mesos.Status{TaskID: ev.TaskID, AgentID: ev.AgentID, State: "JOB_PAUSED", Message: p.Reason})
}

// shardReport is what the scheduler reads of the executor's report on a
// terminal status (executor.Report): the process's times and the outputs
// it wrote to $ELASTICJOB_OUTPUT.
type shardReport struct {
	StartTime    time.Time         `json:"startTime"`
	CompleteTime time.Time         `json:"completeTime"`
	Outputs      map[string]string `json:"outputs"`
}

func shardReportOf(data []byte) shardReport {
	var r shardReport
	if len(data) > 0 && data[0] == '{' {
		_ = json.Unmarshal(data, &r) // a report we cannot read only loses its times and outputs
	}
	return r
}

// inputsOf reads the inputs of the keyed runs the plan launches (workflow
// nodes keep theirs in the run's record, not in the ready entry, so a
// long queue stays small): run key → inputs.
func (s *Scheduler) inputsOf(ctx context.Context, w work, plan offers.Plan) map[string]jobs.Inputs {
	var out map[string]jobs.Inputs
	for _, launches := range plan.Launches {
		for _, l := range launches {
			key := runKeyOf(l.Request.Job, l, w)
			if key == "" {
				continue
			}
			if _, seen := out[key]; seen {
				continue
			}
			rec, err := s.Registry.RunRecordOf(ctx, key)
			if err != nil || len(rec.Inputs) == 0 {
				continue
			}
			if out == nil {
				out = map[string]jobs.Inputs{}
			}
			out[key] = rec.Inputs
		}
	}
	return out
}

// firstRun is the keyed run a ready launch took (nil: a plain execution),
// so a rolled-back launch puts back its key and parameter.
func firstRun(rd registry.Ready) *registry.PendingRun {
	if len(rd.Runs) == 0 {
		return nil
	}
	run := rd.Runs[0]
	return &run
}
