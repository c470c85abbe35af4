package trace

import (
	"bytes"
	"crypto/sha1"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/namespace"
	"github.com/ejcloud/elasticjob/task"
)

// Status trace sources, as the original's JobStatusTraceEvent.Source.
const (
	SourceScheduler = "CLOUD_SCHEDULER" // recorded by the scheduler (launch, agent and master updates)
	SourceExecutor  = "CLOUD_EXECUTOR"  // an update the executor sent
)

// Execution types (JOB_STATUS_TRACE_LOG.execution_type).
const (
	ExecutionReady    = "READY"
	ExecutionFailover = "FAILOVER"
)

// Event is one history record: a StatusTrace, an ExecutionStart, an
// ExecutionComplete, an Audit, a WorkflowRun or a WorkflowNode. Events are identified by ID: writing one twice (a
// replay after a crash, a status update Mesos resent) leaves one row.
type Event interface {
	EventID() string
	normalize(now time.Time) Event
}

// StatusTrace is a row of JOB_STATUS_TRACE_LOG.
type StatusTrace struct {
	ID             string     `json:"id"`
	JobName        string     `json:"jobName"`
	OriginalTaskID string     `json:"originalTaskId"`
	TaskID         string     `json:"taskId"`
	SlaveID        string     `json:"slaveId"`
	Source         string     `json:"source"`        // SourceScheduler or SourceExecutor
	ExecutionType  string     `json:"executionType"` // ExecutionReady or ExecutionFailover
	ShardingItem   string     `json:"shardingItem"`
	State          task.State `json:"state"` // TASK_STAGING, TASK_RUNNING, … (stored as spelled)
	Message        string     `json:"message"`
	CreationTime   time.Time  `json:"creationTime"`
}

// ExecutionStart inserts a row of JOB_EXECUTION_LOG (is_success 0); it
// never overwrites a row already there (a completion that came first).
type ExecutionStart struct {
	ID              string    `json:"id"`
	JobName         string    `json:"jobName"`
	TaskID          string    `json:"taskId"`
	Hostname        string    `json:"hostname"`
	IP              string    `json:"ip"`
	ShardingItem    int       `json:"shardingItem"`
	ExecutionSource string    `json:"executionSource"`       // NORMAL_TRIGGER, MISFIRE, FAILOVER
	TriggeredBy     string    `json:"triggeredBy,omitempty"` // cron, api:{user}, … (task.Entry.Trigger)
	NominalAt       time.Time `json:"nominalAt,omitzero"`    // the cron instant it serves (task.Entry.Nominal; zero: none)
	StartTime       time.Time `json:"startTime"`
}

// ExecutionComplete completes the JOB_EXECUTION_LOG row of the same ID
// (is_success, complete_time, failure_cause), or inserts it whole when its
// start was never recorded, as the original does.
type ExecutionComplete struct {
	ID              string    `json:"id"`
	JobName         string    `json:"jobName"`
	TaskID          string    `json:"taskId"`
	Hostname        string    `json:"hostname"`
	IP              string    `json:"ip"`
	ShardingItem    int       `json:"shardingItem"`
	ExecutionSource string    `json:"executionSource"`
	TriggeredBy     string    `json:"triggeredBy,omitempty"`
	NominalAt       time.Time `json:"nominalAt,omitzero"`
	StartTime       time.Time `json:"startTime"`
	CompleteTime    time.Time `json:"completeTime"`
	Success         bool      `json:"success"`
	FailureCause    string    `json:"failureCause"` // truncated to 4000 characters
	// Killed: the task was killed (an operator's kill, the job's deletion
	// or a reschedule), not failed: its result is KILLED.
	Killed bool `json:"killed,omitempty"`

	// whole: its start was merged into it (mergeExecutions), so its row
	// is new unless a replay wrote it before.
	whole bool
}

// Results of an execution (the result column of JOB_EXECUTION_LOG).
const (
	ResultSucceeded = "SUCCEEDED"
	ResultFailed    = "FAILED"
	ResultKilled    = "KILLED"
)

// Result is how the execution ended.
func (e ExecutionComplete) Result() string {
	switch {
	case e.Success:
		return ResultSucceeded
	case e.Killed:
		return ResultKilled
	}
	return ResultFailed
}

func (e StatusTrace) EventID() string       { return e.ID }
func (e ExecutionStart) EventID() string    { return e.ID }
func (e ExecutionComplete) EventID() string { return e.ID }

// Column widths of the original's tables; longer values are truncated (by
// characters) so one odd event can never be refused by the database.
const (
	maxMessage = 4000
	maxID      = 40
	maxJob     = 100 // the name part of a key (namespace.Key): the namespace has a column of its own
	maxTask    = 255
	maxHost    = 255
	maxIP      = 50
	maxSlave   = 50
	maxSource  = 50
	maxShort   = 20 // execution_type, execution_source, a workflow's state
	maxState   = 32 // a status trace's state (TASK_GONE_BY_OPERATOR has 21 characters; migration 00008)
	maxItems   = 100
)

func (e StatusTrace) normalize(now time.Time) Event {
	e.ID = orNewID(e.ID)
	e.JobName, e.OriginalTaskID, e.TaskID = clipKey(e.JobName), clip(e.OriginalTaskID, maxTask), clip(e.TaskID, maxTask)
	e.SlaveID, e.Source, e.ExecutionType = clip(e.SlaveID, maxSlave), clip(e.Source, maxSource), clip(e.ExecutionType, maxShort)
	e.ShardingItem, e.State, e.Message = clip(e.ShardingItem, maxItems), task.State(clip(string(e.State), maxState)), clip(e.Message, maxMessage)
	e.CreationTime = stamp(e.CreationTime, now)
	return e
}

func (e ExecutionStart) normalize(now time.Time) Event {
	e.ID = orNewID(e.ID)
	e.JobName, e.TaskID, e.Hostname, e.IP = clipKey(e.JobName), clip(e.TaskID, maxTask), clip(e.Hostname, maxHost), clip(e.IP, maxIP)
	e.ExecutionSource, e.TriggeredBy = clip(e.ExecutionSource, maxShort), clip(e.TriggeredBy, maxHost)
	e.StartTime = stamp(e.StartTime, now)
	return e
}

func (e ExecutionComplete) normalize(now time.Time) Event {
	e.ID = orNewID(e.ID)
	e.JobName, e.TaskID, e.Hostname, e.IP = clipKey(e.JobName), clip(e.TaskID, maxTask), clip(e.Hostname, maxHost), clip(e.IP, maxIP)
	e.ExecutionSource, e.FailureCause = clip(e.ExecutionSource, maxShort), clip(e.FailureCause, maxMessage)
	e.TriggeredBy = clip(e.TriggeredBy, maxHost)
	e.CompleteTime = stamp(e.CompleteTime, now)
	if !e.StartTime.IsZero() {
		e.StartTime = stamp(e.StartTime, now)
	}
	return e
}

// clip makes s valid UTF-8 and at most n characters.
func clip(s string, n int) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if len(s) <= n {
		return s
	}
	i := 0
	for j := range s {
		if i == n {
			return s[:j]
		}
		i++
	}
	return s
}

// stamp is t (or now when t is zero) in UTC, to the millisecond.
func stamp(t, now time.Time) time.Time {
	if t.IsZero() {
		t = now
	}
	return t.UTC().Truncate(time.Millisecond)
}

func orNewID(id string) string {
	if id == "" {
		return RandomID()
	}
	return clip(id, maxID)
}

// RandomID is a fresh version 7 UUID (jobs.NewUUID): time-ordered, so
// rows keyed by it are appended to the primary key's index.
func RandomID() string { return jobs.NewUUID() }

// idNamespace is the namespace of NewID's name-based UUIDs.
var idNamespace = [16]byte{0x6a, 0x0b, 0x1f, 0x53, 0x2e, 0x8c, 0x4c, 0x1d, 0x9a, 0x58, 0x0e, 0x7b, 0x36, 0x21, 0xe4, 0x90}

// NewID is a name-based (version 5) UUID of the parts: the same facts give
// the same ID, so an event recorded twice (Mesos resends an update the
// scheduler did not acknowledge before a crash) is stored once.
func NewID(parts ...string) string {
	var b [16]byte
	copy(b[:], nameHash(parts))
	b[6] = b[6]&0x0f | 0x50
	b[8] = b[8]&0x3f | 0x80
	return jobs.FormatUUID(b)
}

func nameHash(parts []string) []byte {
	h := sha1.New()
	h.Write(idNamespace[:])
	h.Write([]byte(strings.Join(parts, "\x00")))
	return h.Sum(nil)[:16]
}

// TaskEventID is the ID of a history row about task taskID, named by parts
// (taskID among them) as NewID names it: the same facts give the same ID.
// When the task id carries a time (a version 7 UUID, jobs.NewUUID) the ID
// begins with it, as a version 8 UUID whose first 48 bits are the task's
// Unix milliseconds and the rest the name hash: rows are then inserted in
// time order into the primary key's index instead of at random places in
// it (a random key dirties a different index page per row, and the more
// rows the history holds, the more pages each batch writes). Older task
// ids get NewID.
func TaskEventID(taskID string, parts ...string) string {
	tid, err := jobs.ParseTaskID(taskID)
	if err != nil {
		return NewID(parts...)
	}
	at, ok := jobs.UUIDTime(tid.UUID)
	if !ok {
		return NewID(parts...)
	}
	return jobs.UUIDAt(at, nameHash(parts), 8)
}

// envelope is an event's spool line.
type envelope struct {
	Status   *StatusTrace       `json:"status,omitempty"`
	Start    *ExecutionStart    `json:"start,omitempty"`
	Complete *ExecutionComplete `json:"complete,omitempty"`
	Audit    *Audit             `json:"audit,omitempty"`
	WfRun    *WorkflowRun       `json:"workflowRun,omitempty"`
	WfNode   *WorkflowNode      `json:"workflowNode,omitempty"`
}

func encodeEvent(ev Event) ([]byte, error) {
	env, err := envelopeOf(ev)
	if err != nil {
		return nil, err
	}
	return json.Marshal(env)
}

func envelopeOf(ev Event) (envelope, error) {
	var env envelope
	switch e := ev.(type) {
	case StatusTrace:
		env.Status = &e
	case ExecutionStart:
		env.Start = &e
	case ExecutionComplete:
		env.Complete = &e
	case Audit:
		env.Audit = &e
	case WorkflowRun:
		env.WfRun = &e
	case WorkflowNode:
		env.WfNode = &e
	default:
		return env, fmt.Errorf("trace: unknown event type %T", ev)
	}
	return env, nil
}

// lines encodes events as the spool's lines (encodeEvent's JSON and a
// newline each) into one buffer, reused from one group to the next: a
// group of thousands of events was a slice per event, then a copy of them
// all that grew by doubling (a twelfth of all the scheduler allocated in
// the simulated cluster).
type lines struct {
	buf  bytes.Buffer
	enc  *json.Encoder
	ends []int // line i is buf[ends[i-1]:ends[i]]
}

// maxLinesBuffer is the most the buffer keeps between groups.
const maxLinesBuffer = 4 << 20

func (l *lines) reset() {
	if l.enc == nil || l.buf.Cap() > maxLinesBuffer {
		*l = lines{}
		l.enc = json.NewEncoder(&l.buf)
	}
	l.buf.Reset()
	l.ends = l.ends[:0]
}

// add appends ev's line; on error nothing is appended.
func (l *lines) add(ev Event) error {
	env, err := envelopeOf(ev)
	if err != nil {
		return err
	}
	if err := l.enc.Encode(env); err != nil { // writes only what it encoded whole
		return err
	}
	l.ends = append(l.ends, l.buf.Len())
	return nil
}

func decodeEvent(line []byte) (Event, error) {
	var env envelope
	if err := json.Unmarshal(line, &env); err != nil {
		return nil, err
	}
	switch {
	case env.Status != nil:
		return *env.Status, nil
	case env.Start != nil:
		return *env.Start, nil
	case env.Complete != nil:
		return *env.Complete, nil
	case env.Audit != nil:
		return *env.Audit, nil
	case env.WfRun != nil:
		return *env.WfRun, nil
	case env.WfNode != nil:
		return *env.WfNode, nil
	}
	return nil, fmt.Errorf("trace: empty spool line")
}

// clipKey clips the name part of a key (namespace.Key), keeping its
// namespace whole: the writer splits the two into their columns.
func clipKey(key string) string {
	ns, name := namespace.Split(key)
	return namespace.Key(ns, clip(name, maxJob))
}

// split is a key's namespace and name, as the rows store them.
func split(key string) (string, string) { return namespace.Split(key) }
