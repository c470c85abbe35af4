package deadline

import (
	"fmt"
	"sort"
	"time"

	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/namespace"
	"github.com/ejcloud/elasticjob/observe"
)

// Waiting is a job's oldest waiting execution: since when it waits (its
// fire, or when it was triggered).
type Waiting struct {
	Job   string // the registry's key (namespace.Key)
	Since time.Time
}

// Running is a job's run in progress: its earliest running task's launch.
type Running struct {
	Job     string
	TaskID  string // the earliest task
	Started time.Time
}

// Jobs returns a job's configuration by its registry key.
type Jobs func(key string) (jobs.Config, bool)

// Check returns the alerts due at now, soonest due first: every deadline
// passed (not only those passed since the last check, so a new leader
// raises what its predecessor did not get to; the keys it recorded tell
// what was raised). loc is the scheduler's zone for jobs without one.
// live holds the key of every alert that could still be raised for the
// current state (due or not), for pruning the recorded keys.
func Check(now time.Time, loc *time.Location, cfg Jobs, waiting []Waiting, running []Running) (due []observe.DeadlineAlert, live map[string]bool) {
	live = map[string]bool{}
	add := func(a observe.DeadlineAlert) {
		live[a.PathKey()] = true
		if !now.Before(a.Due) {
			due = append(due, a)
		}
	}
	for _, w := range waiting {
		c, ok := cfg(w.Job)
		if !ok || c.StartDeadlineSeconds <= 0 {
			continue
		}
		ns, name := namespace.Split(w.Job)
		d := time.Duration(c.StartDeadlineSeconds) * time.Second
		add(observe.DeadlineAlert{Kind: observe.DeadlineStart, Namespace: ns, Job: name, Since: w.Since, Due: w.Since.Add(d),
			Message: fmt.Sprintf("job %s has not started %s after its fire at %s (startDeadlineSeconds %d)",
				name, d, w.Since.UTC().Format(time.RFC3339), c.StartDeadlineSeconds)})
	}
	for _, r := range running {
		c, ok := cfg(r.Job)
		if !ok {
			continue
		}
		ns, name := namespace.Split(r.Job)
		if c.RunDeadlineSeconds > 0 {
			d := time.Duration(c.RunDeadlineSeconds) * time.Second
			add(observe.DeadlineAlert{Kind: observe.DeadlineRun, Namespace: ns, Job: name, Since: r.Started, Due: r.Started.Add(d), TaskID: r.TaskID,
				Message: fmt.Sprintf("job %s has been running for more than %s since %s (runDeadlineSeconds %d)",
					name, d, r.Started.UTC().Format(time.RFC3339), c.RunDeadlineSeconds)})
		}
		jl, err := c.Location(loc)
		if err != nil {
			jl = loc
		}
		if at, ok := c.RunDeadlineAfter(r.Started, jl); ok {
			add(observe.DeadlineAlert{Kind: observe.DeadlineRunAt, Namespace: ns, Job: name, Since: r.Started, Due: at, TaskID: r.TaskID,
				Message: fmt.Sprintf("job %s, started at %s, is still running at %s (runDeadlineAt %s)",
					name, r.Started.UTC().Format(time.RFC3339), at.Format(time.RFC3339), c.RunDeadlineAt)})
		}
	}
	sortAlerts(due)
	return due, live
}

// sortAlerts orders alerts soonest due first (ties by key).
func sortAlerts(due []observe.DeadlineAlert) {
	sort.Slice(due, func(i, j int) bool {
		if !due[i].Due.Equal(due[j].Due) {
			return due[i].Due.Before(due[j].Due)
		}
		return due[i].Key() < due[j].Key()
	})
}
