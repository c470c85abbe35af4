// Package flowengine is the leader's workflow loop: one Engine per leadership
// term, run beside the scheduler with the term's fenced registry, so run
// state is advanced only by the leader and a deposed leader's writes fail.
//
// The loop follows the registry (watches on /config/workflow,
// /state/disable/workflow, /state/workflow and /state/trigger_keys) and
// decides each changed run with the pure workflow.Step:
//
//	read run + its nodes' execution records ──► workflow.Step ──► one commit ──► kill tasks, observe
//	                                                              (fenced)
//
// The commit holds the new run (compare-and-set on its version), and for
// each node it starts, the node's execution: a keyed run of its job
// (registry.Change.QueueNodes: a record created under the node's deterministic
// key, workflow.NodeKey, and the job's ready entry with the run appended).
// Starting a node and recording that it started are therefore one atomic
// write: a kill -9 or a leader change before it leaves the node PENDING (a
// new leader starts it), after it leaves it RUNNING with exactly one
// execution queued (the scheduler runs it once), and a start made twice
// fails on the record's Create. The scheduler records each shard's end in
// the record (task.RunRecord, with the executor's times and outputs);
// when the record says Done the engine copies the outcome into the node
// and deletes the record in the same commit as the decision it leads to.
//
// Cancel (an API request or the run's timeout) skips pending nodes, drops
// executions that have not started (pending runs, shards waiting for a
// retry) and kills running tasks through Mesos; the kills are repeated
// by the sweep while the run is cancelling, in case one raced a launch.
//
// The sweep (every Options.Sweep) also finds node executions dropped from
// their job's queues without ending (a job updated, disabled or deleted
// while they waited); a node seen nowhere twice in a row fails. Retention
// keeps Options.KeptRuns finished runs per workflow in the registry,
// removes the runs of deleted workflows, trigger keys after their
// lifetime and node records no run owns.
//
// The engine keeps no timer for crons: it hands each workflow's schedule
// to the term's producer (Timetable), which fires it from the leader's one
// timetable beside the jobs' and hands the fires back (FireFlow); the
// runs, their ids from their instants, and the watermark are made here
// (fires.go). Runs beyond maxConcurrentRuns wait QUEUED and begin oldest
// first (mayBegin).
package flowengine
