// Package backfill runs a job once for every instant of its own plan in a
// past range, each run handed its nominal instant
// (ELASTICJOB_SCHEDULED_TIME, the sharding context's scheduledTime).
//
// A Backfill's state lives in the registry: its record (progress, the
// runs in flight, paused or cancelled), its instants (computed once, at
// creation, by the job's cron.Plan) and one node per job instant queued,
// created in the same commit as the run (registry.EnqueueBackfillRun):
// the same instant is never queued twice, by one backfill or another.
// Step is pure (a record, what became of its runs, whether the job is
// busy with live work; the record next and how many runs to queue); Loop
// is the leader's loop applying it each pass with fenced writes, so a new
// leader continues where the last one stopped.
//
// A backfill never delays its job's live fires more than one run: it
// queues its next run only when the job has no live execution waiting or
// running and none of its own waiting, and at most Concurrency runs of
// it are in flight.
package backfill
