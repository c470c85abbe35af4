package scheduler

import (
	"context"
	"log/slog"
	"time"

	"github.com/ejcloud/elasticjob/estimate"
	"github.com/ejcloud/elasticjob/task"
)

// RecentRuns reads how long a job's recent successful runs took, most
// recent first (history.Store.RecentDurations since the job's
// registration): what a new leader starts its durations from.
type RecentRuns func(ctx context.Context, job string) ([]time.Duration, error)

// seedPerRound bounds the jobs whose durations one launch round reads
// from history (a takeover with thousands of running jobs reads them over
// several rounds).
const seedPerRound = 32

// durations keeps how long each job's recent successful runs took, most
// recent first (at most estimate.MaxRuns), for when the work that holds
// resources is expected to end (round.View.Typical): fed by the status
// handler as shards finish, and started from history (seed) the first
// time a job runs in the term. A job deleted is forgotten (a job
// registered again under its name starts anew).
type durations struct {
	seed   RecentRuns // nil: from this term's runs only
	log    *slog.Logger
	byJob  map[string][]time.Duration
	seeded map[string]bool
}

func newDurations(seed RecentRuns, log *slog.Logger) *durations {
	return &durations{seed: seed, log: log, byJob: map[string][]time.Duration{}, seeded: map[string]bool{}}
}

// add notes that a shard of job finished after d.
func (ds *durations) add(job string, d time.Duration) {
	runs := ds.byJob[job]
	if len(runs) >= estimate.MaxRuns {
		runs = runs[:estimate.MaxRuns-1]
	}
	ds.byJob[job] = append([]time.Duration{max(d, 0)}, runs...)
}

// forget drops a job's runs (deleted, or registered anew).
func (ds *durations) forget(job string) {
	delete(ds.byJob, job)
	delete(ds.seeded, job)
}

// typical sums up the runs of the running jobs, reading from history
// those not seen yet in this term (at most seedPerRound a round).
func (ds *durations) typical(ctx context.Context, running map[string]map[int]task.Entry) map[string]estimate.Typical {
	out := make(map[string]estimate.Typical, len(running))
	seeds := 0
	for job := range running {
		if !ds.seeded[job] && ds.seed != nil && seeds < seedPerRound {
			seeds++
			ds.seeded[job] = true
			old, err := ds.seed(ctx, job)
			if err != nil {
				ds.log.Debug("durations: read recent runs", "job", job, "err", err)
			}
			if len(ds.byJob[job]) < estimate.MaxRuns {
				ds.byJob[job] = append(ds.byJob[job], old[:min(len(old), estimate.MaxRuns-len(ds.byJob[job]))]...)
			}
		}
		if runs := ds.byJob[job]; len(runs) > 0 {
			out[job] = estimate.Of(runs)
		}
	}
	return out
}

// ranFor is how long a finished shard ran: the executor's own times when
// it reported them, else from its launch to now.
func ranFor(rep shardReport, launched, now time.Time) time.Duration {
	if !rep.StartTime.IsZero() && !rep.CompleteTime.IsZero() {
		return rep.CompleteTime.Sub(rep.StartTime)
	}
	return now.Sub(launched)
}
