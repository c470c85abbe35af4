// Package history reads the event trace tables (JOB_EXECUTION_LOG,
// JOB_STATUS_TRACE_LOG) and keeps the statistics tables of the original
// ElasticJob-Cloud (TASK_RESULT_STATISTICS_MINUTE|HOUR|DAY,
// TASK_RUNNING_STATISTICS, JOB_RUNNING_STATISTICS, JOB_REGISTER_STATISTICS)
// on SQLite or MySQL.
//
// Store answers the API: paged, sorted, filtered searches of the two event
// tables, built only from whitelisted column names and bound parameters,
// and the statistics series with gaps filled, so the console's charts get
// continuous series. Audits searches the audit log (AUDIT_LOG, written by
// the trace writer) the same way: filters on user, role, address, method,
// route, targetKind, target and status, a creation_time range, newest first.
//
// Collector is the leader-only statistics loop. It is the scheduler's
// Observer for task results (FINISHED counts as a success; FAILED, LOST,
// ERROR, DROPPED, GONE, GONE_BY_OPERATOR and UNKNOWN as failures; KILLED as
// neither, as in the original), counts them per minute in memory and
// flushes every minute boundary, so a leadership change loses at most the
// current minute (and nothing on a clean stop, which flushes the partial
// minute; minute rows are merged by adding, so the next leader's counts for
// the same minute add up). Hour and day rows are sums of the finer rows,
// written when the hour or day is complete and recomputed idempotently on
// start, so nothing is counted twice. Every minute it also snapshots the
// running tasks and the jobs with running tasks from the registry, and every
// day the number of registered jobs.
//
// # The history tree
//
// What the scheduler remembers of what ran is a top-level tree beside
// package scheduler; neither imports the other (the import-direction tests
// in internal/archtest keep it so): both import package observe.
//
//	history          the reading and aggregating side: Store (searches of the
//	                 event tables and the audit log, statistics series),
//	                 Collector (the leader's statistics loop), AuditLog
//	history/view     the rows, statistics and queries the API shows, with no
//	                 SQL, so package api depends on it without a database driver
//	history/trace    the writing side: the spooled event-trace writer that
//	                 never blocks scheduling, and the observe.Tasks and
//	                 workflow observer that feed it
//	history/webhook  failure notifications (an observe.Notifier)
//
// The split follows what each side does: trace writes (task events on the
// leader, audit rows wherever the API answers) and owns its goroutines,
// spool and retries so that writing never blocks scheduling; history reads
// and, on the leader, aggregates. They share the database schema (package
// migrations), not state; AuditLog hands audit rows to the trace writer.
// The types they consume, observe.TaskEvent, observe.Tasks and
// observe.Notifier, are in package observe.
package history
