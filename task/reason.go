package task

import "strings"

// Reason is why an engine sent a status update, spelled as Mesos spells it
// ("REASON_RECONCILIATION"); "" when the engine gives none. The Mesos client
// turns its protobuf enum into one at its edge; the Kubernetes engine picks
// the one that says what happened to the pod. A reason the scheduler does
// not name below is kept as the engine spelled it (history shows it).
type Reason string

// The reasons engines send and the scheduler, history and the console tell apart.
const (
	// ReasonReconciliation marks an engine's answer to a reconciliation:
	// it carries a task's latest state and can overtake updates that wait
	// for their acknowledgement.
	ReasonReconciliation Reason = "REASON_RECONCILIATION"
	// ReasonExecutorTerminated marks an executor's refusal of a task it
	// got while shutting down: the task never began.
	ReasonExecutorTerminated Reason = "REASON_EXECUTOR_TERMINATED"
	// ReasonInvalidOffers marks a task the engine could not place on the
	// resources it was given (a Kubernetes node that filled meanwhile
	// refused its pod): with TASK_DROPPED of a STAGING task it is queued
	// again at once as never started. From a Mesos master it may also be
	// the refusal of a replayed launch (RefusedLaunch).
	ReasonInvalidOffers Reason = "REASON_INVALID_OFFERS"
	// ReasonPlacementRefused marks a launch the Kubernetes engine's control
	// plane refused for good (the API server refused the pod, kube-scheduler
	// cannot bind it to its node): it did not happen, so, as for
	// ReasonInvalidOffers, the task is queued again at once as never
	// started; unlike a Mesos master's refusal it cannot be that of a
	// replayed launch (a second create of a pod is AlreadyExists), so
	// nothing is asked of the engine.
	ReasonPlacementRefused Reason = "REASON_PLACEMENT_REFUSED"
	// ReasonAgentRemoved marks a task lost with its agent (a node deleted).
	ReasonAgentRemoved Reason = "REASON_AGENT_REMOVED"
	// ReasonContainerLaunchFailed marks a container that could not start
	// (its image cannot be had, its configuration is wrong).
	ReasonContainerLaunchFailed Reason = "REASON_CONTAINER_LAUNCH_FAILED"
	// ReasonMemoryLimit marks a task killed for passing its memory limit.
	ReasonMemoryLimit Reason = "REASON_CONTAINER_LIMITATION_MEMORY"
	// ReasonPreempted marks a task its agent evicted.
	ReasonPreempted Reason = "REASON_CONTAINER_PREEMPTED"
	// ReasonTaskUnknown marks a task the engine launched and then found no
	// trace of (Mesos's "task is unknown"): the Kubernetes engine's pod that
	// the API server says is not there while the engine never saw it, so
	// neither whether nor how it ran is known (its creation's answer lost
	// and the pod never made, or the pod made, run and deleted while the
	// engine could not watch the API server).
	ReasonTaskUnknown Reason = "REASON_TASK_UNKNOWN"
	// ReasonKilledDuringLaunch marks a task killed before it started.
	ReasonKilledDuringLaunch Reason = "REASON_TASK_KILLED_DURING_LAUNCH"
	// ReasonMaxCompletionTime marks a task that ran past its deadline.
	ReasonMaxCompletionTime Reason = "REASON_MAX_COMPLETION_TIME_REACHED"
	// ReasonTaskInvalid marks a task the master refused at launch (with
	// TASK_ERROR); see DuplicateLaunch.
	ReasonTaskInvalid Reason = "REASON_TASK_INVALID"
	// ReasonTaskGroupInvalid marks each task of a LAUNCH_GROUP the master
	// refused as a whole (with TASK_ERROR): one invalid task refuses them
	// all, each update naming that task; see DuplicateLaunch and
	// RefusedWithItsGroup.
	ReasonTaskGroupInvalid Reason = "REASON_TASK_GROUP_INVALID"
)

// duplicateIDMessage begins the master's message when it refuses a launch
// whose task id an active task of the framework has (Mesos and the
// embedded master word it alike).
const duplicateIDMessage = "Task has duplicate ID"

// RefusedLaunch is the master's refusal of a launch for the offers it
// used (TASK_DROPPED or TASK_LOST with REASON_INVALID_OFFERS): of the
// task's only launch, or of a second launch of a task that runs (a launch
// replayed with offers used already). The update alone does not tell
// which.
func RefusedLaunch(u Update) bool {
	return (u.State == Dropped || u.State == Lost) && u.Reason == ReasonInvalidOffers && u.Source == SourceMaster
}

// DuplicateLaunch reports the master's refusal of a second launch of a
// task id that runs already: the update is about the refused launch, not
// about the task of that id, which goes on (task ids are a function of the
// fire, so this is a fire launched twice, and the first launch stands).
//
// In a LAUNCH_GROUP the master refuses the whole group for one duplicate
// task (Mesos 1.11's task group validation: TASK_ERROR,
// REASON_TASK_GROUP_INVALID, "Task '<id>' is invalid: Task has duplicate
// ID: <id>" for every task of the group): the update of the duplicate
// itself is this too; the others' are RefusedWithItsGroup.
func DuplicateLaunch(u Update) bool {
	if u.State != Error || u.Source != SourceMaster {
		return false
	}
	switch u.Reason {
	case ReasonTaskInvalid:
		return strings.HasPrefix(u.Message, duplicateIDMessage)
	case ReasonTaskGroupInvalid:
		id, ok := groupDuplicate(u.Message)
		return ok && id == u.TaskID
	}
	return false
}

// RefusedWithItsGroup is the master's refusal of a task of a LAUNCH_GROUP
// because another task of the group has a duplicate id: the group was not
// launched this time, but it may be the replay of a group that was (every
// task of it then runs), so the engine is asked (reconcile), as for
// RefusedLaunch.
func RefusedWithItsGroup(u Update) bool {
	if u.State != Error || u.Source != SourceMaster || u.Reason != ReasonTaskGroupInvalid {
		return false
	}
	id, ok := groupDuplicate(u.Message)
	return ok && id != u.TaskID
}

// groupDuplicate reads the task id out of a group refusal's message for a
// duplicate id ("Task '<id>' is invalid: Task has duplicate ID: <id>").
func groupDuplicate(msg string) (string, bool) {
	rest, ok := strings.CutPrefix(msg, "Task '")
	if !ok {
		return "", false
	}
	id, why, ok := strings.Cut(rest, "' is invalid: ")
	return id, ok && why == duplicateIDMessage+": "+id
}

// Source is who sent a status update, spelled as Mesos spells it
// ("SOURCE_EXECUTOR"); "" when the engine does not say.
type Source string

// The sources of status updates.
const (
	// SourceMaster: the engine's control plane (the Mesos master; the
	// Kubernetes engine about a pod it could not create or does not find).
	SourceMaster Source = "SOURCE_MASTER"
	// SourceAgent: the node (a Mesos agent; the kubelet, through the pod's status).
	SourceAgent Source = "SOURCE_AGENT"
	// SourceExecutor: the task's executor.
	SourceExecutor Source = "SOURCE_EXECUTOR"
)
