package scheduler

import (
	"context"

	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/task"
)

// replaceOriginalDaemon kills a live DAEMON task the original
// ElasticJob-Cloud left running (registry.LeftByOriginal: its running
// entry was the original's bare task id), once per term, so that the job
// runs on under this scheduler's executor: the kill's TASK_KILLED ends the
// entry and queues the daemon again (task.Transition's RequeueDaemon),
// which launches it once. A TRANSIENT task the original left is adopted as
// it is: it runs to its end, which is recorded (docs/upgrading.md).
func (h *statusHandler) replaceOriginalDaemon(ctx context.Context, in task.Input, st engine.Status) {
	if in.Entry == nil || !in.Job.Daemon || !in.Job.Exists || !st.State.Active() || !registry.LeftByOriginal(*in.Entry) {
		return
	}
	if h.replaced == nil {
		h.replaced = map[string]bool{}
	}
	if h.replaced[st.TaskID] {
		return
	}
	h.replaced[st.TaskID] = true
	h.log.Info("replacing a DAEMON task the original left running with this scheduler's", "task", st.TaskID)
	if err := killTask(ctx, h.st, h.driver, st.TaskID, in.Entry.AgentID); err != nil {
		h.log.Warn("kill the original's DAEMON task", "task", st.TaskID, "err", err)
		delete(h.replaced, st.TaskID) // the next update or reconciliation tries again
	}
}
