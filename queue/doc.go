// Package queue holds the work that waits to run, as data: a job's pending
// executions (Ready, one entry per job) and the failed shards waiting to
// run again (Failover), with the rules that change them. It is pure: no
// I/O, no clock (times are passed in), no goroutine.
//
// The one rule for adding an execution (Add) is the misfire and
// pending-cap rule: with misfire=false pending executions collapse into
// one; with misfire=true each fire adds one, up to the pending cap
// (job_state_queue_size); a run with an override (a trigger's
// jobParameter or idempotency key) is always added, since collapsing it
// would lose its override. The registry applies it for cron fires, API
// triggers and the fires a new leader replays; the API and the workflow
// engine ask it before they write.
//
// Why an entry has not launched yet is data here too (Wait, its reasons
// Wait* and namespace rules Rule*, keyed by WaitKey): the launch round
// (package round) decides and words it, the registry keeps it, the API
// and the console show it.
package queue
