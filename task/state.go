package task

// State is a task's state, spelled as Mesos spells it ("TASK_RUNNING").
type State string

// The states a task can be in.
const (
	Staging        State = "TASK_STAGING"
	Starting       State = "TASK_STARTING"
	Running        State = "TASK_RUNNING"
	Killing        State = "TASK_KILLING"
	Unreachable    State = "TASK_UNREACHABLE"
	Finished       State = "TASK_FINISHED"
	Failed         State = "TASK_FAILED"
	Killed         State = "TASK_KILLED"
	Lost           State = "TASK_LOST"
	Error          State = "TASK_ERROR"
	Dropped        State = "TASK_DROPPED"
	Gone           State = "TASK_GONE"
	GoneByOperator State = "TASK_GONE_BY_OPERATOR"
	Unknown        State = "TASK_UNKNOWN"
)

// Active reports a state of a task that is launched and not over:
// staging, starting, running or being killed.
func (s State) Active() bool {
	switch s {
	case Staging, Starting, Running, Killing:
		return true
	}
	return false
}

// Live reports a state after which the task may still run: Active, or
// unreachable.
func (s State) Live() bool { return s.Active() || s == Unreachable }

// Failure reports a terminal state that ends a task with a failure, which
// failover may retry.
func (s State) Failure() bool {
	switch s {
	case Failed, Lost, Error, Dropped, Gone, GoneByOperator, Unknown:
		return true
	}
	return false
}

// Terminal reports whether s ends a task.
func (s State) Terminal() bool { return s == Finished || s == Killed || s.Failure() }

// Over reports a terminal state that says the task's process is over: it
// finished, failed, was killed, or never began. After LOST, GONE or
// UNKNOWN the task may still run somewhere.
func (s State) Over() bool {
	switch s {
	case Finished, Failed, Killed, Error:
		return true
	}
	return false
}
