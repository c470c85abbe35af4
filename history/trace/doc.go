// Package trace records run history into the event trace database
// (JOB_STATUS_TRACE_LOG and JOB_EXECUTION_LOG, column-compatible with
// ElasticJob-Cloud; schema in package migrations) without ever slowing
// scheduling or losing an event.
//
// # Writer
//
// Open(ctx, Options) opens SQLite (a file in the data directory, WAL) or
// MySQL/MariaDB, applies the migrations and starts two goroutines:
//
//	Record ──► pending (memory) ──► journal: append to spool, fsync ──► loop: batch INSERT, one tx ──► DB
//	                                       (group commit)                 (BatchSize / FlushInterval)
//
// Record only appends to a slice under a mutex: it never waits for the disk
// or the database. The journal appends every event to the spool and
// fsyncs (events recorded during one fsync share the next), then hands
// them on; the loop writes them in multi-row INSERTs, one transaction per
// batch, and deletes a spool segment once all of it is written.
//
// Spool format: SpoolDir holds append-only segment files
// <20-digit seq>.jsonl, one JSON event per line ({"status":{…}},
// {"start":{…}}, {"complete":{…}}, {"audit":{…}}, {"workflowRun":{…}} or
// {"workflowNode":{…}}), SegmentEvents lines each, plus LOCK
// (flock: one writer per directory, which also guards the SQLite file kept
// beside it). Write-ahead for every event (not only when the database is
// down) is what makes a crash lose nothing that was reported durable: Sync
// returns once earlier events are fsynced; a kill -9 can lose only the
// events of the group being written, never one already synced. While the
// database is down, new segments pile up (the spool depth gauge,
// elasticjob_trace_spool_events, shows them) and only MaxMemory events stay
// in memory; the rest are read back from disk when the database returns.
// A torn last line is ignored. If the disk itself fails, events go on to
// the database from memory (counted in elasticjob_trace_spool_errors_total);
// if more than MaxPending events wait for a stalled disk, Record drops and
// counts them (elasticjob_trace_events_dropped_total) rather than block.
//
// Idempotency: every event has an ID (the row's primary key) and is
// written with INSERT IGNORE / INSERT OR IGNORE (status traces, execution
// starts) or an upsert (execution completions), so replaying the spool
// after a crash, or a status update Mesos resends, never duplicates a row.
// The Observer derives IDs from the facts (NewID: a name-based UUID of the
// task id, state, Mesos timestamp, reason and source) so a resent update
// gets the same ID. ExecutionComplete has the original's semantics: it
// completes the row of its ID (is_success, complete_time, failure_cause on
// failure) or inserts it whole when the start was never recorded; a start
// arriving after its completion changes nothing.
//
// Database down: Open never fails because of the database; the first
// connection attempt is bounded by ConnectTimeout, and the loop retries
// with backoff (RetryMin doubling to RetryMax), applying the migrations
// once it connects. DB returns nil (QueryDB: ErrUnavailable) until the
// schema has been applied once. A batch refused for its data (never
// expected: strings are truncated to the column widths and made valid
// UTF-8) is retried row by row and the refused rows are set aside in
// SpoolDir/rejected.jsonl, so one bad event never blocks history.
// Close spools what is pending, writes what the database takes before its
// context ends, and leaves the rest in the spool for the next Open, which
// replays it first.
//
// Retention: every RetentionInterval (5 min) the loop deletes rows older
// than MaxAge and then the oldest rows beyond MaxRows in every history and
// statistics table, RetentionBatch rows per DELETE, a bounded number of
// DELETEs per table per pass (Retain runs one pass on demand).
//
// Times: stored in UTC to the millisecond. On MySQL the session time zone
// is +00:00 (TIMESTAMP(3) columns); on SQLite as text
// 'YYYY-MM-DD HH:MM:SS.SSS'. Bind times in queries with TimeArg so
// comparisons match what is stored.
//
// # Observer: what is recorded
//
// Observer implements observe.Tasks:
//
//   - Launched: a TASK_STAGING status trace, source CLOUD_SCHEDULER,
//     execution type READY or FAILOVER (from the task id), slave id the agent.
//   - StatusChanged: a status trace for every update, with the Mesos state
//     name, message (the reason when there is no message), source
//     CLOUD_EXECUTOR when the executor sent the update and CLOUD_SCHEDULER
//     when the agent or master did.
//   - original_task_id: for a FAILOVER task, the id of the last task of the
//     same shard this scheduler saw fail (TaskEvent does not carry it); if
//     unknown (after a scheduler restart) the writer copies it from the
//     task's TASK_STAGING row, as the original did; "" for READY tasks.
//   - Execution log, transient tasks: ExecutionStart on TASK_RUNNING and
//     ExecutionComplete on a terminal state; success iff TASK_FINISHED; the
//     failure cause is the status message (our executor sends "exit code N:
//     <stderr tail>"). Execution source is TaskEvent.Source
//     (NORMAL_TRIGGER, MISFIRE, FAILOVER). A task that ends without having
//     run gets a completed row whose start is its launch time.
//   - Daemon tasks run their cron inside the executor, so their task-level
//     RUNNING/terminal updates are status traces only; each run's execution
//     log comes from the executor's DAEMON_BEGIN/DAEMON_COMPLETE reports
//     through DaemonRun (observe.Daemons), which honours the app's
//     eventTraceSamplingCount (NewObserver's samplingCount: 0 records every
//     run, N one run in N per task, the Nth, 2Nth, …, as the original).
//
// Durability: the Observer is an observe.Durable. The scheduler calls its
// Sync after handling a batch of status updates and before committing
// them (and so before acknowledging them): Sync waits for the Writer's
// Sync and fails with ErrDropped when the Writer dropped events since the
// last Sync (Dropped), so an acknowledged update's history is always in
// the spool, whatever instant a kill -9 comes at.
//
// Tee combines observers (metrics and this one) and forwards DaemonRun
// and Sync.
//
// Host and IP: DECISION — the executor reports through the scheduler and
// never writes to the database, so no database credentials reach agents.
// On TASK_RUNNING and terminal updates it attaches JSON to TaskStatus.data:
// {"hostname","ip","startTime","completeTime","exitCode"} (executor.Report);
// the Observer takes host, ip and times from it, falling back to the
// agent's hostname (TaskEvent.Hostname) and the scheduler's clock.
//
// # Workflows
//
// WorkflowObserver (a flowengine Observer) records workflow history:
// WORKFLOW_RUN_LOG gets a row per run, upserted at every committed change
// of the run (state, times, node counts) and guarded by the run's registry
// version, so an older state written late (by a deposed leader's spool)
// never overwrites a newer one; WORKFLOW_NODE_LOG gets a row per node
// execution that ended (node, attempt, state, times, task ids, outputs as
// JSON, skip reason, message), written once.
//
// # Audit log
//
// Audit events (rows of AUDIT_LOG: one write request to the REST API,
// built by package api without secrets) take the same path: Record never
// blocks, the spool makes them durable (the API waits for Sync, bounded,
// so a write is answered after its audit row is on disk) and the loop
// writes them with INSERT IGNORE by id. Retention ages them with the rest.
package trace
