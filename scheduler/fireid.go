package scheduler

import (
	"strconv"
	"strings"
	"time"

	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/round"
)

// fireTaskID is the id of the task a launch starts: a pure function of the
// fire as the registry holds it (jobs.FireTaskID), so a leader that builds
// the launch again from the same entries (a deposed leader's ACCEPT
// replayed, a launch sent twice) sends the same id and the engine refuses
// the second as a duplicate, wherever it was placed.
//
// A ready launch is named by its job's ready entry: when its oldest
// execution was queued and the instant a staged cron fire waits for, how
// many executions wait, the entry's version, and the oldest run's key,
// queueing instant and nominal instant (a trigger's idempotency key, a
// workflow node's run, a backfill instant). Each execution taken from the
// entry changes it (count, queueing instant, version), so the next
// execution gets another id. A failover or retry is named by the task it
// relaunches and its attempt: each relaunch is a new task.
//
// A launch rolled back after its ACCEPT failed is launched again under the
// ids it had (the queue entry keeps them: queue.Relaunch), since that
// ACCEPT may have reached the engine all the same: the identity is the
// fire's, not the attempt's.
func fireTaskID(pl round.Launch, kind jobs.TaskKind) jobs.TaskID {
	if id, ok := relaunchID(pl, kind); ok {
		return id
	}
	var b strings.Builder
	var at time.Time
	if f := pl.Failover; f != nil {
		at = f.Since
		b.WriteString("failover|")
		b.WriteString(f.TaskID)
		for _, n := range []int64{int64(f.Attempts), f.Since.UnixNano(), f.Version} {
			b.WriteByte('|')
			b.WriteString(strconv.FormatInt(n, 10))
		}
		if f.Retry {
			b.WriteString("|retry")
		}
	} else {
		rd := pl.Ready
		at = rd.Since
		b.WriteString("ready")
		for _, n := range []int64{rd.Since.UnixNano(), rd.NotBefore.UnixNano(), int64(rd.Count), int64(rd.Misfired), rd.Version} {
			b.WriteByte('|')
			b.WriteString(strconv.FormatInt(n, 10))
		}
		if run := rd.First(); run != nil {
			b.WriteString("|run|")
			b.WriteString(run.IdempotencyKey)
			b.WriteByte('|')
			b.WriteString(strconv.FormatInt(run.At.UnixNano(), 10))
			b.WriteByte('|')
			b.WriteString(strconv.FormatInt(run.ScheduledAt.UnixNano(), 10))
		}
	}
	return jobs.FireTaskID(pl.Job.JobName, pl.Request.Shard, kind, b.String(), at)
}

// relaunchID is the id the launch had when it was rolled back, if it was
// (and the id is of this job, shard and kind).
func relaunchID(pl round.Launch, kind jobs.TaskKind) (jobs.TaskID, bool) {
	var s string
	if f := pl.Failover; f != nil {
		s = f.Relaunch
	} else if pl.Ready != nil {
		s = pl.Ready.Relaunched(pl.Request.Shard)
	}
	if s == "" {
		return jobs.TaskID{}, false
	}
	id, err := jobs.ParseTaskID(s)
	if err != nil || id.JobName != pl.Job.JobName || id.Item != pl.Request.Shard || id.Kind != kind {
		return jobs.TaskID{}, false
	}
	return id, true
}
