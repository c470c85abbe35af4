// Package cache is a store.KV that keeps a live in-memory copy of chosen
// subtrees of another store.KV (the registry's /config, /state and /auth on
// ZooKeeper, etcd or SQLite) and serves reads of them from memory.
//
// Every scheduler instance reads through it: a standby answers every read
// endpoint from its own copy, and a new leader loads its catalog from a copy
// that is already warm, so a takeover does not wait for a full read of the
// registry.
//
// How it stays current:
//
//   - At Open it watches each root in the backing store, then reads the whole
//     subtree (a watch set before the read means no change is missed).
//   - On a backing store whose events carry the change (store.Revisioned:
//     etcd, memory), an event is applied as it is told, with no read: the
//     node's value and version, or its removal with its subtree. Its
//     revision orders it against what this process wrote into the copy
//     itself (its commits, applied on their reply; its re-reads): those
//     leave a hold at their revision, and an event not above the hold of
//     its path (or of an ancestor held absent) is already reflected. The
//     events up to the revision of the last whole-subtree read (Open, a
//     resync, which reads level by level) take the re-read path below, as
//     do a compacted watch's (it resyncs). See revision.go.
//   - Otherwise (ZooKeeper, SQLite), a change notification whose version the copy does not hold yet
//     re-reads that one path from the backing store and applies what it
//     finds (the node's value and version, or its absence together with its
//     subtree); a change the copy holds already (this process's own commit
//     put it there) reads nothing, and one of a path that a commit of this
//     process has in flight waits for that commit to land first (its
//     notification arrives before its reply on ZooKeeper). Re-reads of one
//     path are serialised, so the copy of a path never goes back in time.
//   - A notification is passed on to the cache's own watchers only after the
//     copy reflects it: a consumer that re-reads a path on an event always
//     sees at least that change. The events are the backing store's own (same
//     versions, same per-path order), so the store.KV watch contract holds.
//   - Commit goes to the backing store and then, before returning, puts
//     what it wrote into the copy (re-reading the blind puts, whose version
//     it cannot know, first, so a reader never sees the rest of a commit
//     without them), or after a failure re-reads every path it touched: a
//     writer reads its own writes, and a writer whose conditional commit lost
//     a race reads the winner's value next time. CommitChain does the same
//     for each batch of a chain that was applied (store.Chainer). With
//     Options.StrictWatch it also waits
//     until the backing store's events of its writes have been passed on.
//   - A resync (the backing watch overflowed or lost its connection) re-reads
//     the whole subtree while every worker of that root waits.
//
// Paths outside the roots are passed through to the backing store.
//
// The copy is a tree of nodes that hold their children by name (tree.go):
// a node costs its name, its value and an entry in its parent's set, about
// 100 bytes besides the value (BenchmarkCopyHeap, TestCopyHeapPerJob); a
// read walks the path's names from the top. The KV's other parts each own
// their state: the backing store's reads and commits (source.go), a
// root's worker (follow.go), the commits in flight (inflight.go) and those
// waiting for their events (strict.go).
//
// Collect lets an HTTP handler learn which paths a request committed, so a
// standby that forwarded a write to the leader can refresh exactly those
// paths before answering (Refresh): the client then reads its own write from
// any instance.
package cache
