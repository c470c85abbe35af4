package api

import (
	"context"
	"time"

	"github.com/ejcloud/elasticjob/history/view"
)

// DefinitionStatus is what the reconciler writes into an object's status
// subresource about its definition's runs (the runs themselves stay in
// the scheduler's store and history). Times are to the second, so a
// status read back from the API server compares equal.
type DefinitionStatus struct {
	LastFireTime  *time.Time `json:"lastFireTime,omitempty"`
	NextFireTime  *time.Time `json:"nextFireTime,omitempty"`
	LastResult    string     `json:"lastResult,omitempty"` // a job: SUCCEEDED, FAILED, RUNNING; a workflow: its last run's state
	LastFailure   string     `json:"lastFailure,omitempty"`
	RunningShards int        `json:"runningShards"`
	ActiveRuns    int        `json:"activeRuns,omitempty"` // a workflow's
}

// StatusOf reads a definition's status (a CloudApp has none of its own:
// zero).
func (s *definitionHandlers) StatusOf(ctx context.Context, kind, ns, name string) (DefinitionStatus, error) {
	ctx = withNamespace(ctx, ns)
	var st DefinitionStatus
	switch kind {
	case DefJob:
		job, err := s.regIn(ctx).Config().Job(ctx, name)
		if err != nil {
			return st, err
		}
		js, err := s.jobStatus(ctx, job)
		if err != nil {
			return st, err
		}
		st.LastFireTime, st.NextFireTime, st.RunningShards = seconds(js.LastTriggerTime), seconds(js.NextFireTime), len(js.Instances)
		if s.hist == nil {
			return st, nil
		}
		registered, _ := s.regIn(ctx).Config().JobRegisteredAt(ctx, name)
		page, err := s.hist.Executions(ctx, view.Query{Page: 1, PerPage: min(2*job.ShardingTotalCount, maxResultRows),
			Sort: "startTime", Order: "desc", Start: historyFrom(registered), Filters: map[string]string{"jobName": name}})
		if err != nil {
			return st, err
		}
		if r, ok := summarizeShards(name, job.ShardingTotalCount, page.Rows); ok {
			st.LastResult, st.LastFailure = r.State, r.FailureCause
		}
	case DefWorkflow:
		cfg, err := s.regIn(ctx).Flows().Workflow(ctx, name)
		if err != nil {
			return st, err
		}
		v, err := s.workflowView(ctx, cfg, nil)
		if err != nil {
			return st, err
		}
		st.NextFireTime, st.ActiveRuns = seconds(v.NextFireTime), v.ActiveRuns
		if v.LastRun != nil {
			st.LastFireTime = seconds(&v.LastRun.CreatedAt)
			st.LastResult, st.LastFailure = string(v.LastRun.State), v.LastRun.Reason
		}
	}
	return st, nil
}

// seconds truncates a time to the second, in UTC (as a status's RFC 3339
// time keeps it).
func seconds(t *time.Time) *time.Time {
	if t == nil || t.IsZero() {
		return nil
	}
	u := t.UTC().Truncate(time.Second)
	return &u
}
