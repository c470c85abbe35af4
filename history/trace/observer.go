package trace

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/observe"
	"github.com/ejcloud/elasticjob/task"
)

// Recorder takes events; *Writer is one.
type Recorder interface{ Record(Event) }

// maxTracked bounds the observer's per-task memory; beyond it the maps
// start over (a lost original task id is filled from the database).
const maxTracked = 100_000

// Observer turns the scheduler's task events into history. It implements
// observe.Tasks; its methods only queue events (Record never blocks).
type Observer struct {
	rec      Recorder
	sampling func(app string) int

	mu      sync.Mutex
	tasks   map[string]*taskInfo // live tasks by id
	failed  map[string]string    // job@-@item → id of its last failed task
	runs    map[string]int       // daemon task id → BEGINs since the last sampled one
	decided map[string]bool      // daemon task id + run id → was its BEGIN recorded
	drops   uint64               // the Syncer's Dropped at the last Sync
}

type taskInfo struct {
	original          string
	launched, started time.Time
}

var (
	_ observe.Tasks   = (*Observer)(nil)
	_ observe.Durable = (*Observer)(nil)
)

// Syncer is a Recorder that can wait until what it recorded is durable
// and count what it dropped instead; *Writer is one (Sync: the spool is
// fsynced).
type Syncer interface {
	Sync(ctx context.Context) error
	Dropped() uint64
}

// NewObserver records into r (nil: records nothing). samplingCount
// returns an app's eventTraceSamplingCount for daemon runs (nil: every run
// is recorded).
func NewObserver(r Recorder, samplingCount func(app string) int) *Observer {
	o := &Observer{rec: r, sampling: samplingCount, tasks: map[string]*taskInfo{}, failed: map[string]string{},
		runs: map[string]int{}, decided: map[string]bool{}}
	if s, ok := r.(Syncer); ok {
		o.drops = s.Dropped()
	}
	return o
}

func (o *Observer) record(ev Event) {
	if o.rec != nil {
		o.rec.Record(ev)
	}
}

// Sync waits until every event recorded before the call is durable, when
// the Recorder can tell (a Syncer); otherwise it returns at once. It fails
// with ErrDropped when the Recorder dropped events since the last Sync
// (the writer closing, a stalled disk): those are not durable. The
// scheduler calls it before committing status updates, so that an update
// it acknowledges has its history on disk (see observe.Durable).
func (o *Observer) Sync(ctx context.Context) error {
	s, ok := o.rec.(Syncer)
	if !ok {
		return nil
	}
	err := s.Sync(ctx)
	n := s.Dropped()
	o.mu.Lock()
	lost := n - o.drops
	o.drops = n
	o.mu.Unlock()
	if err != nil {
		return err
	}
	if lost > 0 {
		return fmt.Errorf("%w: %d since the last sync", ErrDropped, lost)
	}
	return nil
}

// execReport is the executor's TaskStatus.data (executor.Report).
type execReport struct {
	Hostname     string     `json:"hostname"`
	IP           string     `json:"ip"`
	StartTime    *time.Time `json:"startTime"`
	CompleteTime *time.Time `json:"completeTime"`
	ExitCode     *int       `json:"exitCode"`
}

func parseReport(data []byte) execReport {
	var r execReport
	if len(data) > 0 {
		_ = json.Unmarshal(data, &r) // not ours (another executor): ignore
	}
	return r
}

func kindOf(taskID string) string {
	if tid, err := jobs.ParseTaskID(taskID); err == nil && tid.Kind == jobs.KindFailover {
		return ExecutionFailover
	}
	return ExecutionReady
}

func failedState(s task.State) bool {
	return s.Failure()
}

// Launched records the TASK_STAGING trace. A FAILOVER task's original
// task id is the last failed task of its shard this scheduler saw.
func (o *Observer) Launched(t observe.TaskEvent) {
	kind := kindOf(t.TaskID)
	o.mu.Lock()
	original := ""
	key := jobs.MetaKey(t.Job, t.Item)
	if kind == ExecutionFailover {
		original = o.failed[key]
	}
	delete(o.failed, key)
	if len(o.tasks) >= maxTracked {
		o.tasks = map[string]*taskInfo{}
	}
	o.tasks[t.TaskID] = &taskInfo{original: original, launched: t.At}
	o.mu.Unlock()
	o.record(StatusTrace{
		ID: TaskEventID(t.TaskID, "status", t.TaskID, string(task.Staging)), JobName: t.Job, OriginalTaskID: original, TaskID: t.TaskID,
		SlaveID: t.AgentID, Source: SourceScheduler, ExecutionType: kind, ShardingItem: strconv.Itoa(t.Item),
		State: task.Staging, Message: t.Late, CreationTime: t.At,
	})
}

// StatusChanged records a status trace for every update, and for
// transient tasks the execution log: its start on TASK_RUNNING, its
// completion on a terminal state (success iff TASK_FINISHED; the failure
// cause is the status message).
func (o *Observer) StatusChanged(t observe.TaskEvent, st engine.Status) {
	kind := kindOf(t.TaskID)
	terminal := st.State.Terminal()
	o.mu.Lock()
	var info taskInfo
	if ti := o.tasks[t.TaskID]; ti != nil {
		info = *ti
	}
	if terminal {
		delete(o.tasks, t.TaskID)
		delete(o.runs, t.TaskID)
		if failedState(st.State) {
			if len(o.failed) >= maxTracked {
				o.failed = map[string]string{}
			}
			o.failed[jobs.MetaKey(t.Job, t.Item)] = t.TaskID
		}
	}
	o.mu.Unlock()

	source := SourceScheduler
	if st.Source == task.SourceExecutor {
		source = SourceExecutor
	}
	stamp := st.Timestamp
	if stamp.IsZero() {
		stamp = t.At
	}
	msg := st.Message
	if msg == "" {
		msg = string(st.Reason)
	}
	o.record(StatusTrace{
		ID:      TaskEventID(t.TaskID, "status", t.TaskID, string(st.State), strconv.FormatInt(stamp.UnixNano(), 10), string(st.Reason), string(st.Source)),
		JobName: t.Job, OriginalTaskID: info.original, TaskID: t.TaskID, SlaveID: firstOf(st.AgentID, t.AgentID),
		Source: source, ExecutionType: kind, ShardingItem: strconv.Itoa(t.Item), State: st.State, Message: msg,
		CreationTime: t.At,
	})
	if !t.Transient || (st.State != task.Running && !terminal) {
		return // a daemon's runs are recorded by DaemonRun
	}
	o.execution(t, st, info, terminal)
}

func (o *Observer) execution(t observe.TaskEvent, st engine.Status, info taskInfo, terminal bool) {
	rep := parseReport(st.Data)
	src := firstOf(t.Source, string(jobs.SourceNormal))
	host := firstOf(rep.Hostname, t.Hostname)
	start := info.started
	if rep.StartTime != nil {
		start = *rep.StartTime
	}
	id := TaskEventID(t.TaskID, "execution", t.TaskID)
	if !terminal {
		if start.IsZero() {
			start = t.At
		}
		o.mu.Lock()
		if ti := o.tasks[t.TaskID]; ti != nil {
			ti.started = start
		}
		o.mu.Unlock()
		o.record(ExecutionStart{ID: id, JobName: t.Job, TaskID: t.TaskID, Hostname: host, IP: rep.IP,
			ShardingItem: t.Item, ExecutionSource: src, TriggeredBy: t.Trigger, NominalAt: t.Nominal, StartTime: start})
		return
	}
	if start.IsZero() {
		start = info.launched // it never ran: its launch is its start
	}
	done := t.At
	switch {
	case rep.CompleteTime != nil:
		done = *rep.CompleteTime
	case st.Source == task.SourceAgent && !st.Timestamp.IsZero() && st.Timestamp.Before(done):
		// The agent ended the task (its executor terminated, or was gone
		// when the agent restarted) and dates the end: the update may reach
		// the scheduler much later, e.g. after a restart.
		done = st.Timestamp
	}
	success := st.State == task.Finished
	cause := ""
	if !success {
		cause = st.Message
		if cause == "" {
			cause = string(st.State)
			if st.Reason != "" {
				cause += " (" + string(st.Reason) + ")"
			}
		}
	}
	o.record(ExecutionComplete{ID: id, JobName: t.Job, TaskID: t.TaskID, Hostname: host, IP: rep.IP,
		ShardingItem: t.Item, ExecutionSource: src, TriggeredBy: t.Trigger, NominalAt: t.Nominal, StartTime: start, CompleteTime: done, Success: success, FailureCause: cause,
		Killed: st.State == task.Killed})
}

func firstTime(ts ...time.Time) time.Time {
	for _, t := range ts {
		if !t.IsZero() {
			return t
		}
	}
	return time.Time{}
}

func firstOf(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}
