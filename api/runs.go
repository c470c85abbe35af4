package api

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/ejcloud/elasticjob/queue"
	"github.com/ejcloud/elasticjob/task"
	"github.com/gin-gonic/gin"
)

// runHandlers serve a job's runs and tasks: a trigger's run, results, logs, durations,
// missed deadlines and killing a run.
type runHandlers struct {
	*core
	live
	hist requestHistory // nil: history off
}

// Run states of a keyed trigger (GET /api/job/trigger/{key}).
const (
	RunQueued    = "QUEUED"    // waiting in the job's ready entry
	RunRunning   = "RUNNING"   // a shard runs or waits for a retry or failover
	RunSucceeded = "SUCCEEDED" // every shard finished
	RunFailed    = "FAILED"    // a shard failed (for good: the run cannot succeed, even while others run), or was killed
	RunCancelled = "CANCELLED" // dropped before it ended (job disabled, updated or deleted while queued)
)

// runSettle bounds how long a run found nowhere is looked for again.
const runSettle = 100 * time.Millisecond

// runView answers GET /api/job/trigger/{key}: what became of a trigger
// sent with that idempotency key.
type runView struct {
	IdempotencyKey string              `json:"idempotencyKey"`
	JobName        string              `json:"jobName"`
	TriggeredAt    time.Time           `json:"triggeredAt"`
	State          string              `json:"state"`
	Message        string              `json:"message,omitempty"`
	Running        []runningView       `json:"running"`
	Shards         []task.ShardOutcome `json:"shards"`
	EndedAt        *time.Time          `json:"endedAt,omitempty"`
	// Waiting is why a QUEUED run has not started, as of the last launch
	// round (never_fits: it never will until the cluster grows).
	Waiting *waitView `json:"waiting,omitempty"`
}

func (s *runHandlers) triggerRun(c *gin.Context) {
	key := c.Param("key")
	if !idempotencyKeyRE.MatchString(key) {
		writeError(c, s.log, fmt.Errorf("%w: idempotencyKey must be 1-128 characters of letters, digits, '.', '_', ':' or '-'", ErrBadRequest))
		return
	}
	// The run moves ready → running/failover → done, each step one commit,
	// and the registry's copy shows a commit's paths one by one; reading
	// them in that order can still miss a step between two reads. A run
	// found nowhere is looked for again, for up to runSettle, before it
	// is called cancelled (for a client waiting on the run, final).
	var v runView
	var err error
	for wait := time.Millisecond; ; wait *= 2 {
		if v, err = s.runOf(c, key); err != nil || v.State != RunCancelled || wait > runSettle {
			break
		}
		select {
		case <-c.Request.Context().Done():
			return // the client is gone
		case <-time.After(wait):
		}
	}
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	c.JSON(http.StatusOK, v)
}

func (s *runHandlers) runOf(ctx context.Context, key string) (runView, error) {
	rec, err := s.regIn(ctx).Work().RunRecordOf(ctx, key)
	if err != nil {
		return runView{}, err
	}
	v := runView{IdempotencyKey: key, JobName: rec.JobName, TriggeredAt: rec.At, Running: []runningView{}, Shards: rec.Shards}
	if v.Shards == nil {
		v.Shards = []task.ShardOutcome{}
	}
	if rec.Done {
		v.State, v.EndedAt = RunFailed, &rec.EndedAt
		if rec.Success && !rec.Failed { // a shard that failed for good and ran again by failover still failed the run
			v.State = RunSucceeded
		}
		return v, nil
	}
	if rec.Failed {
		v.State, v.Message = RunFailed, failedMessage(rec)
		err := s.runningOfRun(ctx, &v, key)
		return v, err
	}
	queued, err := s.queuedRun(ctx, rec.JobName, key)
	if err != nil || queued {
		v.State = RunQueued
		if err == nil {
			err = s.whyQueued(ctx, &v)
		}
		return v, err
	}
	if err := s.runningOfRun(ctx, &v, key); err != nil {
		return v, err
	}
	fo, err := s.regIn(ctx).Work().FailoverQueue(ctx)
	if err != nil {
		return v, err
	}
	waiting := slices.ContainsFunc(fo, func(f queue.Failover) bool { return f.Job == rec.JobName && f.RunKey == key })
	if len(v.Running) > 0 || waiting {
		v.State = RunRunning
		return v, nil
	}
	if again, err := s.regIn(ctx).Work().RunRecordOf(ctx, key); err == nil && again.Done {
		return s.runOf(ctx, key)
	}
	v.State = RunCancelled
	v.Message = "the run is neither queued, running nor finished: the job was disabled, updated or deleted before it ended"
	return v, nil
}

// whyQueued fills the wait reason of a queued run's job.
func (s *runHandlers) whyQueued(ctx context.Context, v *runView) error {
	why, err := s.regIn(ctx).Work().WaitingReasons(ctx)
	if err != nil {
		return err
	}
	if w, ok := why[queue.WaitKey(false, v.JobName, 0)]; ok {
		wv := s.waitView(ctx, w)
		v.Waiting = &wv
	}
	return nil
}

// queuedRun reports whether a job's ready entry still holds the run.
func (s *runHandlers) queuedRun(ctx context.Context, job, key string) (bool, error) {
	q, err := s.regIn(ctx).Work().ReadyQueue(ctx)
	if err != nil {
		return false, err
	}
	for _, rd := range q {
		if rd.Job == job {
			return slices.ContainsFunc(rd.Runs, func(r queue.PendingRun) bool { return r.IdempotencyKey == key }), nil
		}
	}
	return false, nil
}

// runningOfRun fills the run's running shards.
func (s *runHandlers) runningOfRun(ctx context.Context, v *runView, key string) error {
	running, err := s.regIn(ctx).Work().RunningOf(ctx, v.JobName)
	if err != nil {
		return err
	}
	for item, rt := range running {
		if rt.RunKey == key {
			v.Running = append(v.Running, runningView{JobName: v.JobName, ShardingItem: item, TaskID: rt.TaskID, AgentID: rt.AgentID, Hostname: rt.Hostname,
				State: rt.State, Busy: rt.Busy, LaunchedAt: rt.LaunchedAt, RunKey: rt.RunKey})
		}
	}
	slices.SortFunc(v.Running, func(a, b runningView) int { return a.ShardingItem - b.ShardingItem })
	return nil
}

// failedMessage says which shard failed a run that has not ended.
func failedMessage(rec task.RunRecord) string {
	for _, sh := range rec.Shards {
		if sh.State.Failure() {
			msg := fmt.Sprintf("shard %d failed (%s): the run cannot succeed", sh.Item, sh.State)
			if sh.Message != "" {
				msg = fmt.Sprintf("shard %d failed (%s: %s): the run cannot succeed", sh.Item, sh.State, sh.Message)
			}
			return msg
		}
	}
	return "a shard failed: the run cannot succeed"
}
