package api

import (
	"fmt"
	"time"

	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/namespace"
	"github.com/gin-gonic/gin"
)

// How often, and how far apart, a task's launch is looked for before its log is refused.
const (
	launchedLookups   = 4
	launchedLookupGap = 250 * time.Millisecond
)

// launchedTask says whether the scheduler launched taskID in the
// request's namespace: it runs (the registry) or history recorded it. A
// task's files are read by the engine from its sandbox, which the task
// can write: a made-up id of the task's own job would name a directory
// it made up too, so nothing is read for an id the scheduler never gave
// out. With history off, only a running task's files are served.
func (s *runHandlers) launchedTask(c *gin.Context, taskID string) error {
	tid, err := jobs.ParseTaskID(taskID)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrBadRequest, err)
	}
	if err := localTask(c, taskID); err != nil {
		return err
	}
	// A task that has just ended has left the registry's running set before the history
	// writer's batch holds it (it writes at the latest FlushInterval, 200 ms, after): a read
	// of its log then looks again for a bounded while before it is refused.
	for try := 0; ; try++ {
		v := taskView{TaskID: taskID, JobName: namespace.Name(tid.JobName), ShardingItem: tid.Item, AgentID: tid.AgentID}
		running, err := s.runningTask(c, &v)
		if err != nil || running {
			return err
		}
		found, err := s.taskHistory(c, &v)
		if err != nil {
			return queryError(err)
		}
		if found {
			return nil
		}
		if try == launchedLookups-1 {
			break
		}
		select {
		case <-c.Request.Context().Done():
			return c.Request.Context().Err()
		case <-time.After(launchedLookupGap):
		}
	}
	s.log.Warn("refused a task's files: the scheduler never launched that task in this namespace",
		"namespace", nsOf(c), "task_id", taskID, "user", c.GetString(ctxUser))
	return fmt.Errorf("%w: task %s is unknown: it is not running and history has no record of it (namespace '%s')",
		ErrNotFound, taskID, nsOf(c))
}
