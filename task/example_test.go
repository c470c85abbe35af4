package task_test

import (
	"fmt"
	"time"

	"github.com/ejcloud/elasticjob/task"
)

// A running shard's task fails; its job allows two retries 10 s apart, so
// the shard is queued again within its run after the backoff and the
// job's run goes on. The same update for a task the registry does not
// hold as running is an orphan: a live one is killed, an ended one only
// acknowledged.
func ExampleTransition() {
	now := time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)
	entry := task.Entry{TaskID: "backup@-@0@-@READY@-@a1", State: task.Running, LaunchedAt: now.Add(-time.Minute)}
	job := task.Job{Exists: true, Runnable: true, MaxRetries: 2, RetryBackoff: 10 * time.Second}
	in := task.Input{Update: task.Update{TaskID: entry.TaskID, State: task.Failed, Source: task.SourceExecutor},
		Entry: &entry, Job: job, Now: now}

	out := task.Transition(in)
	fmt.Println("result:", out.End.Result)
	fmt.Println("retry within the run:", out.End.Retry.Retry, "attempt", out.End.Retry.Attempts, "not before", out.End.Retry.NotBefore.Format(time.TimeOnly))
	fmt.Println("run ends:", out.End.RunEnds, "error handler told:", out.End.Notify)

	in.Entry = nil
	fmt.Println("orphan failed: kill", task.Transition(in).Kill)
	in.Update.State = task.Running
	fmt.Println("orphan running: kill", task.Transition(in).Kill)
	// Output:
	// result: retrying
	// retry within the run: true attempt 1 not before 09:00:10
	// run ends: false error handler told: true
	// orphan failed: kill false
	// orphan running: kill true
}
