package task

// The words of a task lost with its agent before it started
// (lostBeforeStart): history's failure cause and the run's record carry
// them, the console and the API show them, and the fault soak's checker
// accounts for the fire or trigger by them.
const (
	LostBeforeStartWords = "lost with its agent before it started"
	NotRunAgainWords     = "not run again: the job's failover is off and the task may have started on the unreachable agent"
)

// lostBeforeStart words the failure of a task that went UNREACHABLE while
// still STAGING and ended there (counted lost after
// task_unreachable_timeout, GONE, UNKNOWN, DROPPED…). Unless the master
// said TASK_DROPPED (NeverStarted: it runs again) the agent may have
// started it while it was out of sight (a launch in flight when the agent
// was partitioned may reach it when the partition heals), so without the
// job's failover flag the shard does not run again, which could run the
// fire twice, and the words say so. again: it runs again (failover, a
// retry within the run).
func lostBeforeStart(in Input, again bool) (string, bool) {
	e := in.Entry
	if e.State != Unreachable || !e.StagingWhenLost {
		return "", false
	}
	msg := LostBeforeStartWords + " (" + firstNonEmpty(in.Update.Message, string(in.Update.State)) + ")"
	if !again && in.Job.Runnable {
		msg += "; " + NotRunAgainWords
	}
	return msg, true
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
