// Package zk implements store.KV on ZooKeeper (github.com/go-zookeeper/zk
// v1.0.4). Store paths live under one znode, "/"+Options.Namespace
// ("/elasticjob-cloud" by default); the store root "/" is that znode.
//
// Mapping:
//   - Node.Version is the znode's data version; values are the znode data.
//   - Commit is one ZooKeeper multi. Ops that need a read first are planned
//     against the current tree (plus the effects of the batch's earlier ops):
//     Create and Put add creates for missing ancestors, Put becomes a set or a
//     create, and Delete lists the whole subtree and deletes it bottom-up in
//     the same multi. When an op that was planned from a read fails (the tree
//     changed between the read and the multi), the whole commit is planned
//     and tried again, a bounded number of times.
//   - With Options.Digest set, the connection authenticates with the digest
//     scheme and every znode it creates gets the creator-all ACL.
//   - A commit whose context is store.Urgent (the producer's cron fires,
//     the API's writes) goes on a second session of its own (urgent.go),
//     not behind the multis queued on the first (the launch loop's
//     chains): a session answers in order, and at 100,000 jobs a fire
//     waited 0.05-1.7 s there. Its ops are unchanged, the leader's fence
//     check included; reads, watches and chains stay on the first session.
//
// Watch: one persistent recursive watch per watched root (AddWatch,
// ZooKeeper 3.6+, sent through the client's own request path since
// go-zookeeper v1.0.4 has no method for it: wire.go). The server then
// notifies every create, data change and delete under the root, once
// each, in commit order (the ops of one multi in their order), and the
// watch stays set, so after its first scan the watch reads nothing: a
// node's version is counted (0 at its create, one more per change) and
// one event is emitted per notification. Events of all paths come in
// commit order. The scan (at the start, and after a lost connection)
// reads every node's stat; the notifications that arrive meanwhile are
// placed exactly against its reads (persist.go). Cost: one server-side
// watch per root and one map entry per node; a writer's own changes come
// back as notifications only (no read). ZooKeeper 3.6 or later is
// required: on a server without AddWatch, Watch fails with an error
// wrapping ErrNoPersistentWatches (the store's other calls work).
//
// Commit plans with reads (whether a Put's node exists, what a Delete's
// subtree holds); CommitReportHinted plans from a caller's belief instead
// (the registry cache's copy), and a step the multi refuses because the
// belief was wrong makes the commit planned again from reads.
//
// A lost connection or an expired session yields one EventResync once the
// client has a session again, after the subtree has been re-read and all
// watches re-armed; so does a consumer that falls behind by more than
// maxPending events. Events are handed on as the notifications that make
// them are handled, not after a run of them: the consumer's channel
// buffers outBuffer of them, so a consumer that keeps up never sees a
// long run of notifications as falling behind.
package zk
