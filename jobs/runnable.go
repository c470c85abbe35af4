package jobs

import (
	"fmt"

	"github.com/ejcloud/elasticjob/app"
)

// Runnability says whether a job may take an execution now, and if not,
// why. CanRun is the one rule: the launcher (through its catalog), the
// API's triggers and the workflow engine all ask it.
type Runnability int

const (
	Runnable    Runnability = iota
	JobMissing              // the job is not registered
	JobDisabled             // the job's disable flag is set
	AppMissing              // the job's app is not published
	AppDisabled             // the job's app is disabled
)

// Facts are what CanRun looks at: the job (nil: not registered), its app
// (nil: not published, or the job names none) and their disable flags.
type Facts struct {
	Job         *Config
	JobDisabled bool
	App         *app.Config
	AppDisabled bool
}

// CanRun decides whether a job may run now. An HTTP job that names no app
// runs under app.HTTPOnly; any other job needs its app, enabled.
func CanRun(f Facts) Runnability {
	switch {
	case f.Job == nil:
		return JobMissing
	case f.JobDisabled:
		return JobDisabled
	case f.Job.AppName == "" && f.Job.JobType == TypeHTTP:
		return Runnable
	case f.App == nil:
		return AppMissing
	case f.AppDisabled:
		return AppDisabled
	}
	return Runnable
}

// AppOf returns the app a runnable job runs under: its own, or, for an
// HTTP job that names none, app.HTTPOnly as its namespace's (HTTPApp).
func AppOf(j Config, a *app.Config) app.Config {
	if j.AppName == "" {
		h := app.HTTPOnly()
		h.AppName = j.ExecutorApp()
		return h
	}
	if a == nil {
		return app.Config{}
	}
	return *a
}

// Why says in words why a job may not run (empty when it may).
func (r Runnability) Why(job, appName string) string {
	switch r {
	case JobMissing:
		return fmt.Sprintf("the job '%s' is not registered", job)
	case JobDisabled:
		return fmt.Sprintf("the job '%s' is disabled", job)
	case AppMissing:
		if appName == "" {
			return fmt.Sprintf("the job '%s' names no app", job)
		}
		return fmt.Sprintf("the app '%s' of job '%s' is not published", appName, job)
	case AppDisabled:
		return fmt.Sprintf("the app '%s' is disabled", appName)
	}
	return ""
}
