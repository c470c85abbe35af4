package scheduler

import (
	"unique"

	"github.com/ejcloud/elasticjob/jobs"
)

// shareStrings points the strings of a decoded job that many jobs repeat
// (the app it runs in, its crons and time zone, its types, its jitter and
// calendar) at one canonical copy each, so the catalog holds each such
// value once rather than once a job: the catalog is the leader's one
// decoded copy of every job, and at 100,000 jobs of the simulated
// cluster's shape these were 48 of its ≈ 740 bytes a job. The canonical
// copies are the runtime's (unique), which holds none past a collection
// once no handle to it is left (only the jobs' strings), so nothing is
// kept for a value no longer used (a cron since changed); the jobs decoded
// after that share a new copy, the jobs before keep the old one.
func shareStrings(j *jobs.Config) {
	j.AppName = share(j.AppName)
	j.JobExecutionType = jobs.ExecutionType(share(string(j.JobExecutionType)))
	j.Cron = share(j.Cron)
	j.TimeZone = share(j.TimeZone)
	j.Jitter = share(j.Jitter)
	j.Calendar = share(j.Calendar)
	j.JobType = jobs.JobType(share(string(j.JobType)))
	for i, c := range j.Crons {
		j.Crons[i] = share(c)
	}
}

// share is the canonical copy of s ("" is no allocation to share).
func share(s string) string {
	if s == "" {
		return s
	}
	return unique.Make(s).Value()
}
