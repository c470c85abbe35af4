// Package sqlite is the embedded, durable store.KV: one SQLite file in the
// scheduler's data directory, through modernc.org/sqlite (pure Go,
// database/sql).
//
// Layout: nodes(path PRIMARY KEY, parent, value, version) WITHOUT ROWID with
// an index on parent. Children and List read the parent index (already in
// path order); a recursive delete removes the key range [p+"/", p+"0").
//
// Concurrency: one writer goroutine owns the single write connection and
// runs every Commit in a BEGIN IMMEDIATE transaction; reads go to a small
// pool of read-only connections and see WAL snapshots, so they never wait
// for the writer. Group commit: Commits that arrive while a transaction is
// being written queue up and are committed together; a failing batch
// leaves nothing written and the others still commit; the group costs one
// fsync. Commit returns only after COMMIT. A batch whose ops are on
// independent paths (none is another's or its ancestor) is checked whole
// before any op is written; any other runs inside its own SAVEPOINT and is
// rolled back to it when an op fails. Commits under store.Urgent (the
// producer's fires, the API's writes) are taken before the others. A
// chain (store.Chainer: a launch round in links of a few hundred launches)
// is applied link by link in one transaction, which is committed early
// when an urgent commit waits, so that commit goes after the link under
// way instead of after the whole chain (chain.go).
//
// Durability: the journal is WAL. With Options.Sync = SyncFull (the
// default) SQLite fsyncs the WAL at every COMMIT, so an acknowledged Commit
// survives kill -9 of the process and also OS crash or power loss. With
// SyncNormal the WAL is fsynced only at checkpoints: acknowledged Commits
// still survive kill -9 (the data is in the OS page cache) but the last
// ones can be lost if the machine loses power. Group commit amortises the
// fsync over concurrent writers, which is why FULL is affordable as the
// default at the API's target rate (see BenchmarkCommitParallel).
//
// Ownership and Watch: Open takes an exclusive flock on "<path>.lock" and
// writes its pid there; a second scheduler on the same data directory fails
// with "data directory ... is in use by another scheduler (pid N)". Being
// the only writer, the Store reports changes to watchers in process, after
// each commit, through memory.Hub (bounded queues; a lagging watcher gets
// one store.EventResync instead of blocking writers).
package sqlite
