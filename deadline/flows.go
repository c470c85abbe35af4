package deadline

import (
	"fmt"
	"time"

	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/namespace"
	"github.com/ejcloud/elasticjob/observe"
	"github.com/ejcloud/elasticjob/workflow"
)

// Flows returns a workflow's configuration by its registry key.
type Flows func(key string) (workflow.Config, bool)

// FlowRun is a workflow's run not yet final.
type FlowRun struct {
	Workflow string // the registry's key
	Run      workflow.Run
}

// CheckFlows is Check for workflows' runs: a run still QUEUED
// startDeadlineSeconds after it was created (start), RUNNING
// runDeadlineSeconds after its attempt started (run) or at runDeadlineAt
// (runAt). Keys name the run, so each run alerts once per kind.
func CheckFlows(now time.Time, loc *time.Location, cfg Flows, runs []FlowRun, due []observe.DeadlineAlert, live map[string]bool) ([]observe.DeadlineAlert, map[string]bool) {
	add := func(a observe.DeadlineAlert) {
		live[a.PathKey()] = true
		if !now.Before(a.Due) {
			due = append(due, a)
		}
	}
	for _, fr := range runs {
		c, ok := cfg(fr.Workflow)
		if !ok || fr.Run.State.Final() {
			continue
		}
		ns, name := namespace.Split(fr.Workflow)
		base := observe.DeadlineAlert{Namespace: ns, Workflow: name, RunID: fr.Run.ID}
		switch {
		case fr.Run.State == workflow.RunQueued && c.StartDeadlineSeconds > 0:
			d := time.Duration(c.StartDeadlineSeconds) * time.Second
			a := base
			a.Kind, a.Since, a.Due = observe.DeadlineStart, fr.Run.CreatedAt, fr.Run.CreatedAt.Add(d)
			a.Message = fmt.Sprintf("workflow %s run %s has not started %s after it was created at %s (startDeadlineSeconds %d)",
				name, fr.Run.ID, d, fr.Run.CreatedAt.UTC().Format(time.RFC3339), c.StartDeadlineSeconds)
			add(a)
		case fr.Run.State == workflow.RunRunning && !fr.Run.StartedAt.IsZero():
			started := fr.Run.StartedAt
			if c.RunDeadlineSeconds > 0 {
				d := time.Duration(c.RunDeadlineSeconds) * time.Second
				a := base
				a.Kind, a.Since, a.Due = observe.DeadlineRun, started, started.Add(d)
				a.Message = fmt.Sprintf("workflow %s run %s has been running for more than %s since %s (runDeadlineSeconds %d)",
					name, fr.Run.ID, d, started.UTC().Format(time.RFC3339), c.RunDeadlineSeconds)
				add(a)
			}
			if hm, ok := jobs.DeadlineAt(c.RunDeadlineAt); ok {
				fl, err := c.Location(loc)
				if err != nil {
					fl = loc
				}
				a := base
				a.Kind, a.Since, a.Due = observe.DeadlineRunAt, started, jobs.NextAt(hm, started, fl)
				a.Message = fmt.Sprintf("workflow %s run %s, started at %s, is still running at %s (runDeadlineAt %s)",
					name, fr.Run.ID, started.UTC().Format(time.RFC3339), a.Due.Format(time.RFC3339), c.RunDeadlineAt)
				add(a)
			}
		}
	}
	return due, live
}
