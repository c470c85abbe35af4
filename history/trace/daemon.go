package trace

import (
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/observe"
)

var _ observe.Daemons = (*Observer)(nil)

// daemonCron is what triggers a daemon's runs: its cron, inside the
// executor (registry.ByCron).
const daemonCron = "cron"

// DaemonRun records a daemon run's execution log from the executor's
// BEGIN and COMPLETE reports (observe.Daemons), honouring the
// app's eventTraceSamplingCount as the original did: 0 records every run;
// N records one run in N per task (the Nth, 2Nth, …). A COMPLETE is
// recorded iff its BEGIN was (or its BEGIN was never seen, e.g. across a
// scheduler restart).
func (o *Observer) DaemonRun(ev observe.TaskEvent, rep jobs.DaemonReport) {
	n := 0
	if o.sampling != nil {
		n = o.sampling(ev.App)
	}
	o.daemonRun(ev, rep, n)
}

// daemonRun applies the sampling count n and reports whether the run's
// report was recorded.
func (o *Observer) daemonRun(ev observe.TaskEvent, rep jobs.DaemonReport, n int) bool {
	tid, err := jobs.ParseTaskID(rep.TaskID)
	if err != nil {
		return false
	}
	complete := rep.Type == jobs.DaemonComplete
	key := rep.TaskID + "\x00" + rep.RunID
	o.mu.Lock()
	var keep bool
	if !complete {
		keep = true
		if n > 0 {
			o.runs[rep.TaskID]++
			if keep = o.runs[rep.TaskID] >= n; keep {
				o.runs[rep.TaskID] = 0
			}
		}
		if len(o.decided) >= maxTracked {
			o.decided = map[string]bool{}
		}
		o.decided[key] = keep
	} else {
		began, seen := o.decided[key]
		keep = began || !seen
		delete(o.decided, key)
	}
	o.mu.Unlock()
	if !keep {
		return false
	}
	id := TaskEventID(rep.TaskID, "daemon-execution", rep.TaskID, rep.RunID)
	src := firstOf(string(rep.ExecutionSource), ev.Source, string(jobs.SourceNormal))
	host := firstOf(rep.Hostname, ev.Hostname)
	if !complete {
		o.record(ExecutionStart{ID: id, JobName: tid.JobName, TaskID: rep.TaskID, Hostname: host, IP: rep.IP,
			ShardingItem: tid.Item, ExecutionSource: src, TriggeredBy: daemonCron, StartTime: firstTime(rep.StartTime, ev.At)})
		return true
	}
	cause := ""
	if !rep.Success {
		cause = rep.Message
	}
	o.record(ExecutionComplete{ID: id, JobName: tid.JobName, TaskID: rep.TaskID, Hostname: host, IP: rep.IP,
		ShardingItem: tid.Item, ExecutionSource: src, TriggeredBy: daemonCron, StartTime: rep.StartTime, CompleteTime: firstTime(rep.CompleteTime, ev.At),
		Success: rep.Success, FailureCause: cause})
	return true
}
