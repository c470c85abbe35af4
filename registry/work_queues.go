package registry

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/queue"
	"github.com/ejcloud/elasticjob/store"
	"github.com/ejcloud/elasticjob/task"
)

// TriggerKeysPath holds the idempotency keys of recent triggers.
const TriggerKeysPath = "/state/trigger_keys"

// Origins of executions (queue.Origin.By) the registry's own callers use;
// the API's are "api:{user}", "console:{user}" and "ejctl:{user}", a
// workflow node's "workflow:{flow}/{run}/{node}".
const (
	ByCron   = "cron"   // a cron fire
	ByDaemon = "daemon" // a DAEMON job's shards queued again (ended, killed, or updated)
	// ByCatchUp: fires missed while no leader fired (a takeover's gap),
	// queued by the next leader as it starts; launched as MISFIRE.
	ByCatchUp = "catch-up"
)

// Trigger adds one pending execution of a job (a cron fire or an API
// trigger): with misfire the count grows, without it pending executions
// collapse into one. It reports whether the count changed. No origin is
// recorded (TriggerBy does).
func (wk Work) Trigger(ctx context.Context, job string, misfire bool, now time.Time) (bool, error) {
	return wk.TriggerBy(ctx, job, misfire, now, "")
}

// TriggerBy is Trigger recording who or what queued the execution.
func (wk Work) TriggerBy(ctx context.Context, job string, misfire bool, now time.Time, by string) (bool, error) {
	return wk.TriggerServing(ctx, job, misfire, now, by, time.Time{})
}

// TriggerServing is TriggerBy for an execution that serves the cron
// instant nominal (zero: none; queue.Ready.Nominal): a run stopped to be
// run again (a preemption) still serves the instant it was queued for.
func (wk Work) TriggerServing(ctx context.Context, job string, misfire bool, now time.Time, by string, nominal time.Time) (bool, error) {
	return wk.TriggerAgain(ctx, job, queue.Trigger{Misfire: misfire, At: now, By: by, Nominal: nominal})
}

// TriggerAgain adds the execution t to the job's ready entry by the
// misfire and pending-cap rule (queue.Add), and reports whether the entry
// changed. A run stopped to be run again (a preemption) goes back as what
// it was: its trigger's override in t.Run (parameter, idempotency key,
// backfill instant), or the cron instant it served in t.Nominal. The key in t.Run is the run's own, recorded
// when its trigger was first queued, so it is not checked for a
// duplicate: TriggerRun would find it and queue nothing.
func (wk Work) TriggerAgain(ctx context.Context, job string, t queue.Trigger) (bool, error) {
	for range maxCASRetries {
		ops, changed, err := wk.r.triggerOp(ctx, job, t)
		if err != nil || !changed {
			return false, err
		}
		err = wk.r.commit(ctx, ops...)
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
// the producer's watermark (firedPath): a new leader replays, by each job's
// misfire rule, the fires after it and no earlier one. A zero instant
// records nothing. Its fires name no instant of their own: none is gated
// (TriggerFires).
func (wk Work) TriggerMany(ctx context.Context, misfire map[string]bool, at, instant time.Time, absent func(job string) bool) error {
	fires := make(map[string]CronFire, len(misfire))
	for job, mf := range misfire {
		fires[job] = CronFire{Misfire: mf, At: at}
	}
	_, err := wk.TriggerFires(ctx, fires, instant, absent)
	return err
}

// CronFire is one job's fire in TriggerFires: its misfire flag and when
// its entry becomes launchable (NotBefore of a new entry).
type CronFire struct {
	Misfire bool
	At      time.Time
	// Instant, when set, is the cron instant the fire is for: the fire
	// then commits only while the job's gate lets it (gate.go: not while
	// the job is disabled, not for an instant before its last update,
	// enable or registration).
	Instant time.Time
	// Config, when set (with Instant), is the fingerprint (Stored.Sum) of
	// the job's stored configuration the fire's instant was computed
	// from: the fire commits only while the job's stored configuration is
	// still that one (a Check of its version as read), else it is void.
	// A cron updated before the instant but applied by the producer only
	// after it never fires an instant of the old cron (gate.go). 0: not
	// checked.
	Config uint64
}

// TriggerFires is TriggerMany for fires of several instants in one commit:
// each job's entry is held back until its own At. The producer commits
// every instant due in one wake this way, so commits that take longer than
// a second (queued on ZooKeeper behind the launch loop's multis) do not
// fall further behind each second. instant is the latest instant of the
// batch (the watermark). void names the jobs whose fire the gate refused
// (committed nothing for them), sorted.
func (wk Work) TriggerFires(ctx context.Context, fires map[string]CronFire, instant time.Time, absent func(job string) bool) (void []string, err error) {
	return wk.TriggerFiresOnce(ctx, fires, instant, "", absent)
}

// firedCommitPath holds the id of the last fire commit made with one
// (TriggerFiresOnce), written in the commit itself.
const firedCommitPath = "/state/producer/fired_commit"

// TriggerFiresOnce is TriggerFires for a commit that may be tried again
// after a failure whose outcome is unknown (store.ErrUnavailable, a
// timeout: an etcd request timed out, a ZooKeeper connection lost during
// the multi): id, the same on every try and another for every commit,
// is written with the watermark (firedCommitPath), and each try commits
// only on the version of that node it read, after finding another id
// there. A try that finds id landed already commits nothing: a first try
// that landed is never repeated (a misfire=true job would get two
// executions for one instant), and one landing late, after the retry
// read, fails the retry's condition or has its own fail (both wait for
// the version they read). Then void is nil: the fires the landed try
// found void are not known. An empty id is TriggerFires; id needs a
// non-zero instant.
func (wk Work) TriggerFiresOnce(ctx context.Context, fires map[string]CronFire, instant time.Time, id string, absent func(job string) bool) (void []string, err error) {
	if id != "" && instant.IsZero() {
		return nil, fmt.Errorf("registry: a fire commit with an id (%s) records no watermark", id)
	}
	mark := func() ([]store.Op, bool, error) { return fireMark(ctx, wk.r.kv, instant, id) }
	if absent != nil {
		void, err := wk.r.triggerFires(ctx, fires, absent, mark)
		if err == nil || !(errors.Is(err, store.ErrExists) || errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrNotFound)) {
			return void, err
		}
	}
	for range maxCASRetries {
		void, err := wk.r.triggerFires(ctx, fires, nil, mark)
		if errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrExists) || errors.Is(err, store.ErrNotFound) {
			continue
		}
		return void, err
	}
	return nil, fmt.Errorf("registry: trigger %d jobs: %w after %d tries", len(fires), ErrConflict, maxCASRetries)
}

// triggerFires commits fires once, each behind its job's gate, creating
// the entries of jobs absent names (when not nil) without reading them
// first.
func (r *Registry) triggerFires(ctx context.Context, fires map[string]CronFire, absent func(string) bool, marking func() ([]store.Op, bool, error)) (void []string, err error) {
	mark, landed, err := marking()
	if err != nil || landed {
		return nil, err
	}
	ops := make([]store.Op, 0, len(fires))
	for job, f := range fires {
		gate, open, err := gate(ctx, r.kv, job, f.Instant)
		if err == nil && open && f.Config != 0 && !f.Instant.IsZero() {
			gate, open, err = sameConfig(ctx, r.kv, job, f.Config, gate)
		}
		if err != nil {
			return nil, err
		}
		if !open {
			void = append(void, job)
			continue
		}
		t := queue.Trigger{Misfire: f.Misfire, Fire: true, At: f.At, By: ByCron, Nominal: f.Instant}
		if absent != nil && absent(job) {
			gen, genOp, err := newGen(ctx, r.kv, job)
			if err != nil {
				return nil, err
			}
			rd, _ := queue.Add(nil, t, r.maxPending)
			rd.Gen = gen
			ops = append(append(ops, gate...), genOp, createJSON(ReadyPath+"/"+job, rd))
			continue
		}
		entry, changed, err := r.triggerOp(ctx, job, t)
		if errors.Is(err, ErrDamaged) {
			continue // its ready entry is set aside: the other jobs fire
		}
		if err != nil {
			return nil, err
		}
		if changed {
			ops = append(append(ops, gate...), entry...)
		}
	}
	slices.Sort(void)
	if len(ops)+len(mark) == 0 {
		return void, nil
	}
	return void, r.commit(ctx, append(ops, mark...)...)
}

// fireMark is the ops that record instant as the watermark in a fire
// commit (none for a zero instant) and, with an id, the id, on the
// version of firedCommitPath read now from kv (TriggerFiresOnce);
// landed: the commit named id landed already.
func fireMark(ctx context.Context, kv store.KV, instant time.Time, id string) (ops []store.Op, landed bool, err error) {
	if instant.IsZero() {
		return nil, false, nil
	}
	ops = []store.Op{store.Put(firedPath, []byte(instant.UTC().Format(time.RFC3339Nano)))}
	if id == "" {
		return ops, false, nil
	}
	n, err := kv.Get(ctx, firedCommitPath)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return append(ops, store.Create(firedCommitPath, []byte(id))), false, nil
	case err != nil:
		return nil, false, err
	case string(n.Value) == id:
		return nil, true, nil
	}
	return append(ops, store.Set(firedCommitPath, []byte(id), n.Version)), false, nil
}

// triggerOp computes the write that adds one execution: the entry's
// generation's op (ready_gen.go), then the entry's. A run with an
// override is always added (collapsing it would lose its parameter); the
// count never passes MaxPending.
func (r *Registry) triggerOp(ctx context.Context, job string, t queue.Trigger) ([]store.Op, bool, error) {
	p := ReadyPath + "/" + job
	n, err := r.kv.Get(ctx, p)
	if errors.Is(err, store.ErrNotFound) {
		gen, genOp, err := newGen(ctx, r.kv, job)
		if err != nil {
			return nil, false, err
		}
		rd, _ := queue.Add(nil, t, r.maxPending)
		rd.Gen = gen
		return []store.Op{genOp, createJSON(p, rd)}, true, nil
	}
	if err != nil {
		return nil, false, err
	}
	cur, err := decodeReady(n)
	if err != nil {
		r.setAside(n, err)
		return nil, false, err
	}
	rd, changed := queue.Add(&cur, t, r.maxPending)
	if !changed {
		return nil, false, nil
	}
	genOp, err := keepGen(ctx, r.kv, &rd)
	if err != nil {
		return nil, false, err
	}
	return []store.Op{genOp, setJSON(p, rd, n.Version)}, true, nil
}

// ErrQueueFull is returned when a job already has MaxPending executions.
var ErrQueueFull = errors.New("ready queue full")

// TriggerRun queues one execution with a parameter override and an
// optional idempotency key: a key seen before (within the keys' lifetime)
// queues nothing and reports duplicate.
func (wk Work) TriggerRun(ctx context.Context, job string, run queue.PendingRun, now time.Time) (duplicate bool, err error) {
	run.At = now.UTC()
	for range maxCASRetries {
		var ops []store.Op
		if run.IdempotencyKey != "" {
			kp := TriggerKeysPath + "/" + run.IdempotencyKey
			if _, err := wk.r.kv.Get(ctx, kp); err == nil {
				return true, nil
			} else if !errors.Is(err, store.ErrNotFound) {
				return false, err
			}
			ops = append(ops, createJSON(kp, map[string]any{"jobName": job, "at": run.At}))
		}
		entry, changed, err := wk.r.triggerOp(ctx, job, queue.Trigger{Run: &run, At: now})
		if err != nil {
			return false, err
		}
		if !changed {
			return false, fmt.Errorf("%w: job '%s' already has %d pending executions", ErrQueueFull, job, wk.r.maxPending)
		}
		err = wk.r.commit(ctx, append(ops, entry...)...)
		if errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrExists) || errors.Is(err, store.ErrNotFound) {
			continue
		}
		return false, err
	}
	return false, fmt.Errorf("registry: trigger %s: %w after %d tries", job, ErrConflict, maxCASRetries)
}

// PruneTriggerKeys forgets idempotency keys recorded before cutoff (but
// not those of workflow nodes, which the workflow engine removes).
func (wk Work) PruneTriggerKeys(ctx context.Context, cutoff time.Time) error {
	nodes, err := wk.r.kv.List(ctx, TriggerKeysPath)
	if err != nil {
		return err
	}
	var ops []store.Op
	for _, n := range nodes {
		var v struct {
			At       time.Time `json:"at"`
			Workflow string    `json:"workflow"`
		}
		if decodeAt(n.Path, n.Value, &v) == nil && v.At.Before(cutoff) && v.Workflow == "" {
			ops = append(ops, store.Delete(n.Path, n.Version))
		}
	}
	if len(ops) == 0 {
		return nil
	}
	err = wk.r.commit(ctx, ops...)
	if errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrNotFound) {
		return nil
	}
	return err
}

func decodeReady(n store.Node) (queue.Ready, error) {
	var rd queue.Ready
	if err := decodeAt(n.Path, n.Value, &rd); err != nil {
		return rd, err
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
func (wk Work) ReadyQueue(ctx context.Context) ([]queue.Ready, error) {
	nodes, err := wk.r.kv.List(ctx, ReadyPath)
	if err != nil {
		return nil, err
	}
	out := make([]queue.Ready, 0, len(nodes))
	for _, n := range nodes {
		rd, err := decodeReady(n)
		if wk.r.setAside(n, err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, rd)
	}
	sortReady(out)
	return out, nil
}

// dequeueOps returns the ops that take one execution from rd, conditional
// on rd's version and generation (ready_gen.go), so a concurrent trigger is
// never lost and an entry made anew since is never taken for rd. rd comes
// from a view, not a read now: an entry without a generation is taken on
// its version alone.
func dequeueOps(rd queue.Ready, now time.Time) []store.Op {
	p := ReadyPath + "/" + rd.Job
	next, ok := queue.Take(rd, now)
	if !ok {
		return []store.Op{store.Delete(p, rd.Version), endGen(rd)}
	}
	if rd.Gen == 0 {
		return []store.Op{setJSON(p, next, rd.Version)}
	}
	return []store.Op{store.Check(readyGenOf(rd.Job), rd.Gen-1), setJSON(p, next, rd.Version)}
}

// ClearReady removes a job's pending executions.
func (wk Work) ClearReady(ctx context.Context, job string) error {
	return wk.r.commit(ctx, readyDeleteOps(job)...)
}

// runningPathOf is the node of a job's shard.
func runningPathOf(job string, item int) string {
	return RunningPath + "/" + job + "/" + jobs.MetaKey(job, item)
}

// failoverPathOf is the failover node of a job's shard.
func failoverPathOf(job string, item int) string {
	return failoverPath + "/" + job + "/" + jobs.MetaKey(job, item)
}

// putRunningOp records a running task.
func putRunningOp(job string, item int, rt task.Entry) store.Op {
	return putJSON(runningPathOf(job, item), rt)
}

// RunningTasks lists running tasks of every job: job → item → task.
func (wk Work) RunningTasks(ctx context.Context) (map[string]map[int]task.Entry, error) {
	jobNames, err := wk.r.kv.Children(ctx, RunningPath)
	if err != nil {
		return nil, err
	}
	out := make(map[string]map[int]task.Entry, len(jobNames))
	for _, job := range jobNames {
		m, err := wk.RunningOf(ctx, job)
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
func (wk Work) RunningOf(ctx context.Context, job string) (map[int]task.Entry, error) {
	nodes, err := wk.r.kv.List(ctx, RunningPath+"/"+job)
	if err != nil {
		return nil, err
	}
	out := make(map[int]task.Entry, len(nodes))
	for _, n := range nodes {
		_, item, err := jobs.ParseMetaKey(lastSegment(n.Path))
		if err != nil || len(n.Value) == 0 {
			continue
		}
		var rt task.Entry
		if err := decodeAt(n.Path, n.Value, &rt); err != nil {
			wk.r.setAside(n, err)
			continue
		}
		rt.Version = n.Version
		out[item] = rt
	}
	return out, nil
}

// FailoverQueue lists failed shards waiting to run again, oldest first.
func (wk Work) FailoverQueue(ctx context.Context) ([]queue.Failover, error) {
	jobNames, err := wk.r.kv.Children(ctx, failoverPath)
	if err != nil {
		return nil, err
	}
	var out []queue.Failover
	for _, job := range jobNames {
		nodes, err := wk.r.kv.List(ctx, failoverPath+"/"+job)
		if err != nil {
			return nil, err
		}
		for _, n := range nodes {
			f, ok, err := decodeFailover(job, n)
			if wk.r.setAside(n, err) {
				continue
			}
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

// putFailoverOp records a failed shard for failover.
func putFailoverOp(job string, item int, f queue.Failover) store.Op {
	return putJSON(failoverPathOf(job, item), f)
}
