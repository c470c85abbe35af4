package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/store"
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
	notBefore      bool      // internal: a cron fire staged ahead (no override)
}

// TriggerKeysPath holds the idempotency keys of recent triggers.
const TriggerKeysPath = "/state/trigger_keys"

// Running is a task at /state/running/{jobName}/{jobName}@-@{item}.
type Running struct {
	TaskID     string `json:"taskId"`
	AgentID    string `json:"agentId"`
	Hostname   string `json:"hostname,omitempty"`
	ExecutorID string `json:"executorId"`
	State      string `json:"state"`          // the last Mesos state seen: TASK_STAGING, TASK_RUNNING, …
	Busy       bool   `json:"busy,omitempty"` // a DAEMON task is inside a run of its cron
	Source     string `json:"executionSource,omitempty"`
	Attempts   int    `json:"attempts,omitempty"` // earlier launches of this shard's run that failed
	// Parameter is the run's jobParameter override (from a trigger), kept
	// so a failover or retry of the shard runs with it too.
	Parameter *string `json:"jobParameterOverride,omitempty"`
	// RunKey is the idempotency key of the trigger that queued the run
	// (see runs.go), kept so the trigger's record follows its shards.
	RunKey     string    `json:"runKey,omitempty"`
	LaunchedAt time.Time `json:"launchedAt"`
	UpdatedAt  time.Time `json:"updatedAt"`
	Version    int64     `json:"-"`
}

// Failover is a failed shard waiting to run again.
type Failover struct {
	Job      string    `json:"-"`
	Item     int       `json:"-"`
	TaskID   string    `json:"taskId"` // the failed task
	Since    time.Time `json:"since"`
	Attempts int       `json:"attempts,omitempty"`
	// NotBefore delays a retry (retry backoff); zero means at once.
	NotBefore time.Time `json:"notBefore,omitzero"`
	Parameter *string   `json:"jobParameterOverride,omitempty"`
	RunKey    string    `json:"runKey,omitempty"`
	// Retry marks a retry within the failed shard's run (maxRetries, or a
	// task that never started), as opposed to a failover relaunch.
	Retry   bool  `json:"retry,omitempty"`
	Version int64 `json:"-"`
}

// Trigger adds one pending execution of a job (a cron fire or an API
// trigger): with misfire the count grows, without it pending executions
// collapse into one. It reports whether the count changed.
func (r *Registry) Trigger(ctx context.Context, job string, misfire bool, now time.Time) (bool, error) {
	for range maxCASRetries {
		op, changed, err := r.triggerOp(ctx, job, misfire, now, nil)
		if err != nil || !changed {
			return false, err
		}
		err = r.commit(ctx, op)
		if errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrExists) || errors.Is(err, store.ErrNotFound) {
			continue
		}
		return err == nil, err
	}
	return false, fmt.Errorf("registry: trigger %s: %w after %d tries", job, ErrConflict, maxCASRetries)
}

// TriggerMany is Trigger for many jobs in one commit (the producer's batch
// of fires due at one instant, at). misfire maps job name to its misfire
// flag. A new entry is held back until at (NotBefore), so the producer may
// stage fires a few milliseconds ahead of their instant.
//
// absent, when not nil, names jobs believed to have no ready entry: their
// entries are created blindly, without a read. A wrong belief makes the
// commit fail as a whole (the entry exists), and the batch is redone with
// reads, so a belief can cost time but never a fire.
//
// The commit also records instant, the cron instant the batch fires, as
// the producer's watermark (FiredPath): a new leader replays, by each job's
// misfire rule, the fires after it and no earlier one. A zero instant
// records nothing.
func (r *Registry) TriggerMany(ctx context.Context, misfire map[string]bool, at, instant time.Time, absent func(job string) bool) error {
	now := at
	var mark []store.Op
	if !instant.IsZero() {
		mark = []store.Op{store.Put(FiredPath, []byte(instant.UTC().Format(time.RFC3339Nano)))}
	}
	if absent != nil {
		err := r.triggerBlind(ctx, misfire, now, absent, mark)
		if err == nil || !(errors.Is(err, store.ErrExists) || errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrNotFound)) {
			return err
		}
	}
	for range maxCASRetries {
		ops := make([]store.Op, 0, len(misfire))
		for job, mf := range misfire {
			op, changed, err := r.triggerOp(ctx, job, mf, now, &PendingRun{notBefore: true})
			if err != nil {
				return err
			}
			if changed {
				ops = append(ops, op)
			}
		}
		if len(ops)+len(mark) == 0 {
			return nil
		}
		err := r.commit(ctx, append(ops, mark...)...)
		if errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrExists) || errors.Is(err, store.ErrNotFound) {
			continue
		}
		return err
	}
	return fmt.Errorf("registry: trigger %d jobs: %w after %d tries", len(misfire), ErrConflict, maxCASRetries)
}

// triggerOp computes the write that adds one execution. A run with an
// override is always added (collapsing it would lose its parameter); the
// count never passes MaxPending.
func (r *Registry) triggerBlind(ctx context.Context, misfire map[string]bool, now time.Time, absent func(string) bool, mark []store.Op) error {
	ops := make([]store.Op, 0, len(misfire))
	for job, mf := range misfire {
		if absent(job) {
			ops = append(ops, store.Create(ReadyPath+"/"+job, mustJSON(Ready{Count: 1, Since: now.UTC(), NotBefore: now.UTC()})))
			continue
		}
		op, changed, err := r.triggerOp(ctx, job, mf, now, &PendingRun{notBefore: true})
		if err != nil {
			return err
		}
		if changed {
			ops = append(ops, op)
		}
	}
	if len(ops)+len(mark) == 0 {
		return nil
	}
	return r.commit(ctx, append(ops, mark...)...)
}

func (r *Registry) triggerOp(ctx context.Context, job string, misfire bool, now time.Time, run *PendingRun) (store.Op, bool, error) {
	p := ReadyPath + "/" + job
	n, err := r.kv.Get(ctx, p)
	fire := run != nil && run.notBefore
	if fire {
		run = nil // a cron fire: no override, collapses like a plain trigger
	}
	if errors.Is(err, store.ErrNotFound) {
		rd := Ready{Count: 1, Since: now.UTC()}
		if fire {
			rd.NotBefore = now.UTC()
		}
		if run != nil {
			rd.Runs = []PendingRun{*run}
		}
		return store.Create(p, mustJSON(rd)), true, nil
	}
	if err != nil {
		return store.Op{}, false, err
	}
	rd, err := decodeReady(n)
	if err != nil {
		return store.Op{}, false, err
	}
	if (!misfire && run == nil && rd.Count >= 1) || (r.MaxPending > 0 && rd.Count >= r.MaxPending) {
		return store.Op{}, false, nil
	}
	rd.Count++
	if rd.Count > 1 {
		rd.Misfired++
	}
	if run != nil {
		rd.Runs = append(rd.Runs, *run)
	}
	return store.Set(p, mustJSON(rd), n.Version), true, nil
}

// ErrQueueFull is returned when a job already has MaxPending executions.
var ErrQueueFull = errors.New("ready queue full")

// TriggerRun queues one execution with a parameter override and an
// optional idempotency key: a key seen before (within the keys' lifetime)
// queues nothing and reports duplicate.
func (r *Registry) TriggerRun(ctx context.Context, job string, run PendingRun, now time.Time) (duplicate bool, err error) {
	run.At = now.UTC()
	for range maxCASRetries {
		var ops []store.Op
		if run.IdempotencyKey != "" {
			kp := TriggerKeysPath + "/" + run.IdempotencyKey
			if _, err := r.kv.Get(ctx, kp); err == nil {
				return true, nil
			} else if !errors.Is(err, store.ErrNotFound) {
				return false, err
			}
			ops = append(ops, store.Create(kp, mustJSON(map[string]any{"jobName": job, "at": run.At})))
		}
		op, changed, err := r.triggerOp(ctx, job, false, now, &run)
		if err != nil {
			return false, err
		}
		if !changed {
			return false, fmt.Errorf("%w: job '%s' already has %d pending executions", ErrQueueFull, job, r.MaxPending)
		}
		err = r.commit(ctx, append(ops, op)...)
		if errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrExists) || errors.Is(err, store.ErrNotFound) {
			continue
		}
		return false, err
	}
	return false, fmt.Errorf("registry: trigger %s: %w after %d tries", job, ErrConflict, maxCASRetries)
}

// PruneTriggerKeys forgets idempotency keys recorded before cutoff (but
// not those of workflow nodes, which the workflow engine removes).
func (r *Registry) PruneTriggerKeys(ctx context.Context, cutoff time.Time) error {
	nodes, err := r.kv.List(ctx, TriggerKeysPath)
	if err != nil {
		return err
	}
	var ops []store.Op
	for _, n := range nodes {
		var v struct {
			At       time.Time `json:"at"`
			Workflow string    `json:"workflow"`
		}
		if json.Unmarshal(n.Value, &v) == nil && v.At.Before(cutoff) && v.Workflow == "" {
			ops = append(ops, store.Delete(n.Path, n.Version))
		}
	}
	if len(ops) == 0 {
		return nil
	}
	err = r.commit(ctx, ops...)
	if errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrNotFound) {
		return nil
	}
	return err
}

func decodeReady(n store.Node) (Ready, error) {
	var rd Ready
	if err := json.Unmarshal(n.Value, &rd); err != nil {
		return rd, fmt.Errorf("registry: decode %s: %w", n.Path, err)
	}
	rd.Job = lastSegment(n.Path)
	rd.Version = n.Version
	return rd, nil
}

func lastSegment(p string) string {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] == '/' {
			return p[i+1:]
		}
	}
	return p
}

// ReadyQueue lists pending executions, oldest first (ties by job name).
func (r *Registry) ReadyQueue(ctx context.Context) ([]Ready, error) {
	nodes, err := r.kv.List(ctx, ReadyPath)
	if err != nil {
		return nil, err
	}
	out := make([]Ready, 0, len(nodes))
	for _, n := range nodes {
		rd, err := decodeReady(n)
		if err != nil {
			return nil, err
		}
		out = append(out, rd)
	}
	sortReady(out)
	return out, nil
}

// DequeueOp returns the op that takes one execution from rd (conditional
// on rd's version, so a concurrent trigger is never lost).
func DequeueOp(rd Ready, now time.Time) store.Op {
	p := ReadyPath + "/" + rd.Job
	if rd.Count <= 1 {
		return store.Delete(p, rd.Version)
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
	return store.Set(p, mustJSON(next), rd.Version)
}

// ClearReady removes a job's pending executions.
func (r *Registry) ClearReady(ctx context.Context, job string) error {
	return r.commit(ctx, store.Delete(ReadyPath+"/"+job, store.AnyVersion))
}

// RunningPathOf is the node of a job's shard.
func RunningPathOf(job string, item int) string {
	return RunningPath + "/" + job + "/" + jobs.MetaKey(job, item)
}

// FailoverPathOf is the failover node of a job's shard.
func FailoverPathOf(job string, item int) string {
	return FailoverPath + "/" + job + "/" + jobs.MetaKey(job, item)
}

// PutRunningOp records a running task.
func PutRunningOp(job string, item int, rt Running) store.Op {
	return store.Put(RunningPathOf(job, item), mustJSON(rt))
}

// RunningTasks lists running tasks of every job: job → item → task.
func (r *Registry) RunningTasks(ctx context.Context) (map[string]map[int]Running, error) {
	jobNames, err := r.kv.Children(ctx, RunningPath)
	if err != nil {
		return nil, err
	}
	out := make(map[string]map[int]Running, len(jobNames))
	for _, job := range jobNames {
		m, err := r.RunningOf(ctx, job)
		if err != nil {
			return nil, err
		}
		if len(m) > 0 {
			out[job] = m
		}
	}
	return out, nil
}

// RunningOf lists one job's running tasks by item.
func (r *Registry) RunningOf(ctx context.Context, job string) (map[int]Running, error) {
	nodes, err := r.kv.List(ctx, RunningPath+"/"+job)
	if err != nil {
		return nil, err
	}
	out := make(map[int]Running, len(nodes))
	for _, n := range nodes {
		_, item, err := jobs.ParseMetaKey(lastSegment(n.Path))
		if err != nil || len(n.Value) == 0 {
			continue
		}
		var rt Running
		if err := json.Unmarshal(n.Value, &rt); err != nil {
			return nil, fmt.Errorf("registry: decode %s: %w", n.Path, err)
		}
		rt.Version = n.Version
		out[item] = rt
	}
	return out, nil
}

// FailoverQueue lists failed shards waiting to run again, oldest first.
func (r *Registry) FailoverQueue(ctx context.Context) ([]Failover, error) {
	jobNames, err := r.kv.Children(ctx, FailoverPath)
	if err != nil {
		return nil, err
	}
	var out []Failover
	for _, job := range jobNames {
		nodes, err := r.kv.List(ctx, FailoverPath+"/"+job)
		if err != nil {
			return nil, err
		}
		for _, n := range nodes {
			f, ok, err := decodeFailover(job, n)
			if err != nil {
				return nil, err
			}
			if ok {
				out = append(out, f)
			}
		}
	}
	sortFailover(out)
	return out, nil
}

// PutFailoverOp records a failed shard for failover.
func PutFailoverOp(job string, item int, f Failover) store.Op {
	return store.Put(FailoverPathOf(job, item), mustJSON(f))
}

// Commit applies state ops with the registry's fence.
func (r *Registry) Commit(ctx context.Context, ops ...store.Op) error { return r.commit(ctx, ops...) }
