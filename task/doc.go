// Package task is what the scheduler knows of a launched task, as data:
// its state (State, the Mesos task states by name), the entry the
// registry records for it while it runs (Entry), the bookkeeping of the
// run it belongs to (RunState, RunRecord), and the one rule that turns a
// status update into what must change (Transition). It is pure: no I/O,
// no clock (times are passed in), no goroutine. The scheduler's status
// handler reads what Transition needs, calls it, and commits the Outcome;
// an engine (Mesos, Kubernetes) only has to say which State a task is in.
//
// The state machine is drawn in scheduler/README.md.
package task
