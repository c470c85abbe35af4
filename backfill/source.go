package backfill

import (
	"encoding/json"

	"github.com/ejcloud/elasticjob/namespace"
)

// Kinds of a backfill's source.
const (
	KindJob      = "job"
	KindWorkflow = "workflow"
)

// Source is what a backfill runs the past instants of: one job or one
// workflow of a namespace, whose schedule (timing.Schedule) planned them.
type Source struct {
	Kind      string // KindJob or KindWorkflow
	Namespace string
	Name      string // as its namespace knows it
}

// JobSource is job name of namespace ns.
func JobSource(ns, name string) Source { return Source{Kind: KindJob, Namespace: ns, Name: name} }

// WorkflowSource is workflow name of namespace ns.
func WorkflowSource(ns, name string) Source {
	return Source{Kind: KindWorkflow, Namespace: ns, Name: name}
}

// Key is the source's scheduler-wide name (namespace.Key).
func (s Source) Key() string { return namespace.Key(s.Namespace, s.Name) }

// IsWorkflow reports a workflow's source.
func (s Source) IsWorkflow() bool { return s.Kind == KindWorkflow }

// plain is Backfill without its JSON methods.
type plain Backfill

// record is a backfill as stored: its source in the fields records have
// always held it in (a job's name or a workflow's, the namespace and the
// key), so records stored by earlier versions load, and earlier versions
// read these.
type record struct {
	plain
	Namespace    string `json:"namespace"`
	JobName      string `json:"jobName,omitempty"`
	WorkflowName string `json:"workflowName,omitempty"`
	Key          string `json:"key"`
}

// MarshalJSON stores b with its source in the record's fields.
func (b Backfill) MarshalJSON() ([]byte, error) {
	r := record{plain: plain(b), Namespace: b.Source.Namespace, Key: b.Source.Key()}
	if b.Source.IsWorkflow() {
		r.WorkflowName = b.Source.Name
	} else {
		r.JobName = b.Source.Name
	}
	return json.Marshal(r)
}

// UnmarshalJSON reads a stored record: a workflowName makes a workflow's
// source, else a job's.
func (b *Backfill) UnmarshalJSON(data []byte) error {
	var r record
	if err := json.Unmarshal(data, &r); err != nil {
		return err
	}
	*b = Backfill(r.plain)
	b.Source = JobSource(r.Namespace, r.JobName)
	if r.WorkflowName != "" {
		b.Source = WorkflowSource(r.Namespace, r.WorkflowName)
	}
	return nil
}
