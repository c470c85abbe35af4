// Package replog replicates the run history through the replicated
// store, so that a cluster of schedulers on embedded etcd (registry=etcd)
// serves complete history from every replica with no database to
// install (no event_trace_rdb_url).
//
// # Path of a row
//
//	trace.Writer.Record ─► spool (fsync) ─► Log.Publish: one etcd put per batch (≤ 512 KiB of lines, gzip)
//	                                              │  key Prefix/log/<replica>-<boot>-<seq>, ordered by revision
//	      every replica: Log.Run ◄── read from its position, then watch ──┘
//	                     │
//	                     └─► trace.Writer.Apply: rows + position (HISTORY_REPLICATION) in one SQLite transaction
//
// The trace writer keeps its whole write-ahead path (Record never
// blocks, the spool makes an event durable, the loop retries); with
// Options.Sink set its loop publishes batches to the log instead of
// writing the database, and a spool segment is deleted once its events
// are in the log, that is, committed by a quorum. Every replica's writer
// publishes (task events on the leader, audit rows wherever the API
// answers), and every replica applies the log to its own SQLite, the
// publisher's included, so every copy receives the same batches in the
// same (revision) order and ends up identical.
//
// An entry's value is the batch's lines compressed with gzip (entry.go):
// every member holds its last etcd_catchup_entries raft entries in
// memory, and its entries until pruned in its database, so the history
// is most of a member's raft log; compressed, a batch is about an eighth
// (BenchmarkEntryBytes: 406 → 45 B per event). Entries written before
// are read as they are.
//
// A takeover loses nothing: an event the old leader spooled but did not
// publish stays in its spool and is published when it starts again
// (rows are idempotent by ID, so a batch published twice, or applied
// twice, changes nothing); an event in the log reaches every replica.
// Only a leader that loses its disk loses the events it had not yet
// published (at most a flush interval's worth, 200 ms by default).
//
// # Catching up
//
// A replica reads the entries after its position a page at a time (a
// Get sorted by mod revision at one revision), applies each page with
// the position in the same transaction, then watches from the revision
// it read at. A watch that fails (its member lost the leader, compaction
// passed it) goes back to reading, so etcd's compaction never loses
// entries: they stay until pruned. A replica down for a day catches up
// the same way. A replica started with an empty database (a new member,
// a lost disk) holds what the log still has; the rows pruned before it
// joined are not copied to it (copy another replica's history file).
//
// # Bound
//
// Each replica acknowledges its position under Prefix/ack/<name> (at
// most every AckInterval). Prune (every PruneInterval, on the leader
// when PruneIf says so) deletes the entries every replica of
// Options.Replicas applied, then the oldest beyond MaxEntries (4,096
// entries of at most 512 KiB: 2 GiB at worst, typically a few MiB),
// recording the highest revision the bound removed under Prefix/floor. A
// replica that finds the floor above its position counts a gap
// (elasticjob_history_log_gaps_total) and logs it: its history misses
// those rows. Deletes are idempotent, so several replicas may prune.
//
// # Statistics
//
// With Options.CountResults each replica counts task results into
// TASK_RESULT_STATISTICS_MINUTE as it applies their traces (stats.go),
// exactly once per trace; the snapshots (running tasks and jobs,
// registered jobs) and the hour and day roll-ups come from a
// history.Collector on each replica, which reads the replicated registry
// and is fed no task results.
package replog
