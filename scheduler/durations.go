package scheduler

import (
	"context"
	"log/slog"
	"time"

	"github.com/ejcloud/elasticjob/estimate"
	"github.com/ejcloud/elasticjob/queue"
	"github.com/ejcloud/elasticjob/task"
)

// RecentRuns reads how long a job's recent successful runs took, most
// recent first (history.Store.RecentDurations since the job's
// registration): what a new leader starts its durations from.
type RecentRuns func(ctx context.Context, job string) ([]time.Duration, error)

// seedPerRound bounds the jobs whose durations one launch round reads
// from history when it reads them itself (no reader started: a scheduler
// driven round by round); a takeover with thousands of running jobs reads
// them over several rounds.
const seedPerRound = 32

// seedQueue bounds the jobs waiting for the history reader; a round finding
// it full asks again in a later round.
const seedQueue = 4096

// durations keeps how long each job's recent successful runs took, most
// recent first (at most estimate.MaxRuns), for when the work that holds
// resources is expected to end (round.View.Typical): fed by the status
// handler as shards finish, and started from history (seed) the first
// time a job runs in the term. A job deleted is forgotten (a job
// registered again under its name starts anew).
//
// Once start has run, history is read off the loop: a round asks for the
// jobs it has not seen, a reader goroutine reads them one by one and hands
// each result to the loop (merge), and rounds meanwhile use this term's
// runs only. Read on the loop, 32 history queries a round were half of the
// loop's CPU at 15,000 jobs on ZooKeeper (bench cluster-sim).
type durations struct {
	seed   RecentRuns // nil: from this term's runs only
	log    *slog.Logger
	byJob  map[string][]time.Duration
	seeded map[string]bool // asked for (or read) in this term
	asks   chan string     // to the reader, once started
}

func newDurations(seed RecentRuns, log *slog.Logger) *durations {
	return &durations{seed: seed, log: log, byJob: map[string][]time.Duration{}, seeded: map[string]bool{}}
}

// start runs the history reader until ctx ends: it reads the jobs rounds
// ask for and hands each job's runs to post, which runs them on the loop.
// Called on the loop's goroutine before its first round.
func (ds *durations) start(ctx context.Context, post func(context.Context, func(context.Context))) {
	if ds.seed == nil {
		return
	}
	asks := make(chan string, seedQueue)
	ds.asks = asks
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case job := <-asks:
				old, err := ds.seed(ctx, job)
				if err != nil {
					ds.log.Debug("durations: read recent runs", "job", job, "err", err)
					continue
				}
				post(ctx, func(context.Context) { ds.merge(job, old) })
			}
		}
	}()
}

// merge adds the runs read from history behind this term's (on the loop).
// A job forgotten since it was asked for keeps nothing of the read.
func (ds *durations) merge(job string, old []time.Duration) {
	if !ds.seeded[job] {
		return
	}
	if n := len(ds.byJob[job]); n < estimate.MaxRuns && len(old) > 0 {
		ds.byJob[job] = append(ds.byJob[job], old[:min(len(old), estimate.MaxRuns-n)]...)
	}
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

// typical sums up the runs of the running jobs, asking for those not seen
// yet in this term (read from history by the reader, or here, at most
// seedPerRound a round, without one).
func (ds *durations) typical(ctx context.Context, running map[string]map[int]task.Entry) map[string]estimate.Typical {
	out := make(map[string]estimate.Typical, len(running))
	seeds := 0
	for job := range running {
		if !ds.seeded[job] && ds.seed != nil {
			ds.ask(ctx, job, &seeds)
		}
		if runs := ds.byJob[job]; len(runs) > 0 {
			out[job] = estimate.Of(runs)
		}
	}
	return out
}

// ask has job's runs read from history: queued for the reader, or read
// now while *seeds < seedPerRound when no reader runs.
func (ds *durations) ask(ctx context.Context, job string, seeds *int) {
	if ds.asks != nil {
		select {
		case ds.asks <- job:
			ds.seeded[job] = true
		default: // the reader is behind: a later round asks again
		}
		return
	}
	if *seeds >= seedPerRound {
		return
	}
	*seeds++
	ds.seeded[job] = true
	old, err := ds.seed(ctx, job)
	if err != nil {
		ds.log.Debug("durations: read recent runs", "job", job, "err", err)
	}
	ds.merge(job, old)
}

// addWaiting adds the runs of ready jobs known in this term (no history
// read: a backlog may hold 100,000 jobs), for whether a borrower is
// expected to end before another namespace's fires need their guarantee
// back (a job with none falls back to its timeoutSeconds).
func (ds *durations) addWaiting(out map[string]estimate.Typical, ready []*queue.Ready) {
	for _, rd := range ready {
		if _, ok := out[rd.Job]; ok {
			continue
		}
		if runs := ds.byJob[rd.Job]; len(runs) > 0 {
			out[rd.Job] = estimate.Of(runs)
		}
	}
}

// ranFor is how long a finished shard ran: the executor's own times when
// it reported them, else from its launch to now.
func ranFor(rep shardReport, launched, now time.Time) time.Duration {
	if !rep.StartTime.IsZero() && !rep.CompleteTime.IsZero() {
		return rep.CompleteTime.Sub(rep.StartTime)
	}
	return now.Sub(launched)
}
