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
// back as notifications only (no read). A server that answers AddWatch
// with an error other than a lost connection (a server before 3.6) gets
// one-shot watches instead, as does Options.OneShotWatches:
//
// One-shot watches (watch.go) keep a data watch and a child watch per
// node (an exists watch on a missing root), re-armed each time one fires.
// Notifications come from the connection's event callback in server order;
// one goroutine per Watch applies them to its copy of the subtree (path →
// version), re-reads what changed and emits the differences. Limits of that
// approach:
//   - writes to one node between a notification and the re-read coalesce in
//     ZooKeeper; the data version counts them, so one EventPut per version is
//     still reported, but back to back, not interleaved with other nodes'
//     events; a node created and deleted in between is not reported at all;
//   - order is the order of notifications; siblings created by one multi
//     are found by one child listing and reported in name order, not in the
//     multi's order (one multi has one zxid, so the order is not
//     recoverable without AddWatch); a new node's subtree is read and
//     reported whole at the notification that revealed it, before the
//     notifications queued meanwhile, so every change made before a later
//     one is reported before it, the children of a new directory included;
//   - cost is two server-side watches and one map entry per watched node;
//     starting a Watch reads the whole subtree;
//   - a deleted node's name is read again when its delete is handled: if
//     the parent's child watch had fired already, the name may have been
//     taken again with no notification, and a listing showing it would
//     have been taken for the deleted node;
//   - each notification needs a read (which re-arms the watch): the
//     notifications queued are read up to 1,024 at a time, 64 reads in
//     flight, and handled in their order with those reads, so the watch
//     follows a busy writer at the server's read rate, not one round trip
//     per change;
//   - a directory of 256 children or more is re-listed at most every 20 ms,
//     or four times as long as its last listing took (up to 1 s): listing
//     100,000 names takes tens of milliseconds. Notifications after its
//     child notification wait for that listing, so events keep their order.
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
