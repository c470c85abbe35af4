package registry

import (
	"context"
	"strings"
	"time"

	"github.com/ejcloud/elasticjob/store"
	"github.com/ejcloud/elasticjob/task"
	"github.com/ejcloud/elasticjob/workflow"
)

// The workflow engine's intents and watch: what it writes, named.

// PutWorkflowRun rewrites a run read at run.Version (compare-and-set).
func (c *Change) PutWorkflowRun(run workflow.Run) *Change {
	c.ops = append(c.ops, putWorkflowRunOp(run))
	return c
}

// CreateWorkflowRun creates a new run (the change fails when it exists).
func (c *Change) CreateWorkflowRun(run workflow.Run) *Change {
	c.ops = append(c.ops, createWorkflowRunOp(run))
	return c
}

// PutWorkflowState writes a workflow's cron state.
func (c *Change) PutWorkflowState(name string, st WorkflowState) *Change {
	c.ops = append(c.ops, putWorkflowStateOp(name, st))
	return c
}

// QueueNodes queues node executions of one job: each run's record created
// (a key that exists fails the change: nothing is queued twice) and the
// job's ready entry with the runs appended, conditional on the version it
// is read at now.
func (c *Change) QueueNodes(ctx context.Context, job string, starts []NodeStart, now time.Time) error {
	ops, err := c.r.queueNodeOps(ctx, job, starts, now)
	c.ops = append(c.ops, ops...)
	return err
}

// DropPendingRun removes the pending execution queued under key from the
// job's ready entry (conditional on the version read now), if it holds it.
func (c *Change) DropPendingRun(ctx context.Context, job, key string) error {
	ops, ok, err := c.r.dropPendingRunOps(ctx, job, key)
	if ok {
		c.ops = append(c.ops, ops...)
	}
	return err
}

// DropRunRecord removes a keyed run's record.
func (c *Change) DropRunRecord(key string) *Change {
	c.ops = append(c.ops, store.Delete(TriggerKeysPath+"/"+key, store.AnyVersion))
	return c
}

// DropStoredRecord removes a keyed run's record as it was read.
func (c *Change) DropStoredRecord(r StoredRecord) *Change {
	c.ops = append(c.ops, store.Delete(TriggerKeysPath+"/"+r.Key, r.Version))
	return c
}

// DropWorkflowRun removes a finished run, as it was read.
func (c *Change) DropWorkflowRun(name, runID string, version int64) *Change {
	c.ops = append(c.ops, store.Delete(workflowRunPath(name, runID), version))
	return c
}

// DropWorkflowRuns removes every run of a (deleted) workflow.
func (c *Change) DropWorkflowRuns(name string) *Change {
	c.ops = append(c.ops, store.Delete(workflowRunsPath(name), store.AnyVersion))
	return c
}

// DropWorkflowKey removes a workflow trigger's idempotency key, as it was
// read; with an empty key, the workflow's (empty) directory of keys.
func (c *Change) DropWorkflowKey(name, key string, version int64) *Change {
	p := workflowKeysPath + "/" + name
	if key != "" {
		p += "/" + key
	} else {
		version = store.AnyVersion
	}
	c.ops = append(c.ops, store.Delete(p, version))
	return c
}

// Parts splits the change into changes of at most n writes each (each
// committed on its own: for clean-ups whose writes need not be atomic).
func (c *Change) Parts(n int) []*Change {
	var out []*Change
	for ops := c.ops; len(ops) > 0; {
		k := min(n, len(ops))
		out = append(out, &Change{r: c.r, ops: ops[:k:k]})
		ops = ops[k:]
	}
	return out
}

// WorkflowNames lists the registered workflows.
func (fl Flows) WorkflowNames(ctx context.Context) ([]string, error) {
	return fl.r.kv.Children(ctx, WorkflowsPath)
}

// WorkflowRunIDs lists the ids of a workflow's runs.
func (fl Flows) WorkflowRunIDs(ctx context.Context, name string) ([]string, error) {
	return fl.r.kv.Children(ctx, workflowRunsPath(name))
}

// WorkflowKeyDirs lists the workflows that have trigger keys.
func (fl Flows) WorkflowKeyDirs(ctx context.Context) ([]string, error) {
	return fl.r.kv.Children(ctx, workflowKeysPath)
}

// StoredKey is a workflow trigger's key as stored (Unreadable: its value
// could not be decoded).
type StoredKey struct {
	Key string
	WorkflowKey
	Version    int64
	Unreadable bool
}

// WorkflowKeysOf lists a workflow's trigger keys.
func (fl Flows) WorkflowKeysOf(ctx context.Context, name string) ([]StoredKey, error) {
	nodes, err := fl.r.kv.List(ctx, workflowKeysPath+"/"+name)
	if err != nil {
		return nil, err
	}
	out := make([]StoredKey, 0, len(nodes))
	for _, n := range nodes {
		k := StoredKey{Key: lastSegment(n.Path), Version: n.Version}
		k.Unreadable = decodeAt(n.Path, n.Value, &k.WorkflowKey) != nil
		out = append(out, k)
	}
	return out, nil
}

// StoredRecord is a keyed run's record as stored.
type StoredRecord struct {
	Key string
	task.RunRecord
	Version int64
}

// WorkflowRecords lists the records of workflow node executions (keyed
// runs whose record names a workflow).
func (fl Flows) WorkflowRecords(ctx context.Context) ([]StoredRecord, error) {
	nodes, err := fl.r.kv.List(ctx, TriggerKeysPath)
	if err != nil {
		return nil, err
	}
	var out []StoredRecord
	for _, n := range nodes {
		var rec task.RunRecord
		if decodeAt(n.Path, n.Value, &rec) != nil || rec.Workflow == "" {
			continue
		}
		out = append(out, StoredRecord{Key: lastSegment(n.Path), RunRecord: rec, Version: n.Version})
	}
	return out, nil
}

// WorkflowChange is a change the workflow engine follows.
type WorkflowChange struct {
	Kind     WorkflowKind
	Workflow string // its workflow (WorkflowDef, WorkflowFlag, WorkflowRunChanged)
	RunID    string // WorkflowRunChanged
	Key      string // WorkflowRecord: the run record's key
	Deleted  bool
	Version  int64 // a written run's version
}

// WorkflowKind is what a WorkflowChange is about.
type WorkflowKind int

const (
	WorkflowAll        WorkflowKind = iota // changes may have been missed: reload everything
	WorkflowDef                            // a workflow registered, updated or deleted
	WorkflowFlag                           // a workflow's disable flag set or cleared
	WorkflowRunChanged                     // a run written or deleted
	WorkflowRecord                         // a keyed run's record written or deleted
)

func workflowChange(ev store.Event) (WorkflowChange, bool) {
	if ev.Type == store.EventResync {
		return WorkflowChange{Kind: WorkflowAll}, true
	}
	del := ev.Type == store.EventDelete
	if name, ok := childOf(ev.Path, WorkflowsPath); ok {
		return WorkflowChange{Kind: WorkflowDef, Workflow: name, Deleted: del}, true
	}
	if name, ok := childOf(ev.Path, disabledWorkflowPath); ok {
		return WorkflowChange{Kind: WorkflowFlag, Workflow: name, Deleted: del}, true
	}
	if key, ok := childOf(ev.Path, TriggerKeysPath); ok {
		return WorkflowChange{Kind: WorkflowRecord, Key: key, Deleted: del}, true
	}
	rest, ok := strings.CutPrefix(ev.Path, WorkflowRunsPath+"/")
	if !ok {
		return WorkflowChange{}, false
	}
	wf, id, ok := strings.Cut(rest, "/")
	if !ok || id == "" || strings.Contains(id, "/") {
		return WorkflowChange{}, false
	}
	return WorkflowChange{Kind: WorkflowRunChanged, Workflow: wf, RunID: id, Deleted: del, Version: ev.Version}, true
}

// childOf returns the name of a direct child of dir.
func childOf(path, dir string) (string, bool) {
	name, ok := strings.CutPrefix(path, dir+"/")
	if !ok || name == "" || strings.Contains(name, "/") {
		return "", false
	}
	return name, true
}

// Merge appends o's writes to c.
func (c *Change) Merge(o *Change) *Change {
	if o != nil {
		c.ops = append(c.ops, o.ops...)
	}
	return c
}
