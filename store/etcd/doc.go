// Package etcd implements store.KV on etcd (go.etcd.io/etcd/client/v3
// v3.7.3), and runs an embedded etcd member (go.etcd.io/etcd/server/v3
// v3.7.3, its embed package) for a scheduler that replicates its
// registry with no other service. The same Store talks to the embedded
// members' client URLs or to an external cluster (Options.Endpoints).
//
// # Keys
//
// Every key starts with Options.Prefix ("/elasticjob-cloud"). A node at
// path p with d segments is the key prefix+"/n/"+d+p ("/a/b" is
// ".../n/2/a/b"); the root is not stored. A node's direct children are
// then one contiguous range (prefix+"/n/"+(d+1)+p+"/"), in name order:
// Children and List read exactly the children, never a grandchild, and
// a directory of 100,000 jobs under a deep tree costs what it holds. The
// price is on subtrees, which are one range per level: a recursive
// delete is a range delete per level below the node, the deepest first
// (so watchers see each node's delete after its descendants'), and a
// watch reads every node key and keeps those under its root. A separate
// children index would have doubled every create and delete instead.
//
// A value is the node's version (uvarint) followed by its bytes: the
// contract counts every write of a commit (a create and a set in one
// commit make version 1) where etcd's version and mod_revision count one
// per transaction.
//
// # Commits
//
// etcd compares only keys' revisions and values and refuses a
// transaction that writes a key twice, so a commit is planned on the
// client, as store/zk plans its multis: one consistent read (read-only
// transactions at one revision) of every op's node, the ancestors of
// what it creates, and the levels below what it deletes (count-only,
// until an empty one); then the ops are applied in order to that
// snapshot, which finds the first failing op exactly as store/memory
// does (nothing is sent then), and leaves each touched node's final
// state. The transaction puts those nodes, deletes the others (level
// ranges with holes for keys the commit puts again), and is conditional
// on what the plan read: each op's node at its mod_revision (0: absent;
// a store.Check is this compare, so a leader's fence is a term-conditional
// write as ZooKeeper's check is), each ancestor at its create_revision,
// and the first empty level below a deleted node still empty. If another
// writer changed any of it, nothing is applied and the commit is planned
// again (at most 16 times, then store.ErrConflict).
//
// With Options.LocalPlans (the scheduler's store on its own member) the
// first snapshot is a serializable read of that member's applied state:
// no raft round trip (a linearizable read waits for the raft leader to
// confirm its leadership with a quorum). The compares make this safe as
// they make a fresh snapshot overtaken by another writer safe: the
// transaction applies only if everything the plan relied on is as the
// snapshot had it. What the snapshot alone would decide (an op that
// fails, a commit with nothing to write, the guard held) is decided from
// a linearizable read, as is every attempt after a failed compare.
//
// etcd caps a transaction at --max-txn-ops requests (128 by default;
// Options.MaxTxnOps) and a request at --max-request-bytes (1.5 MiB). The
// scheduler's own members run with EmbeddedMaxTxnOps (8,192), so that its
// routine commits (a fire instant's entries, a batch of launches) are flat
// transactions; the guard below is then only for an external cluster's
// cap and for the rare commit bigger than that. Every
// commit also puts one guard key (prefix+"/g"), so a commit that does not
// fit its compares in one transaction is made conditional on the guard's
// mod_revision alone (no commit came between the snapshot and it), and
// its writes go as nested transactions inside that one: k nested
// transactions may hold 128-k-1 requests each, about 4,000 writes in one
// atomic etcd transaction at the default cap. Such a guarded commit
// loses to any commit that comes between, so after two losses it holds
// the guard (lock.go): it puts the guard key with a lease of its own,
// every other commit waits while the key has a lease (a flat commit is
// also conditional on the guard having none), and its last transaction
// frees it; a writer that dies holding it frees it when the lease
// expires (15 s). A commit bigger than one transaction holds (about
// 4,000 writes at the default cap, or more than the request bytes) holds
// the guard from the start and is sent as a chain of such transactions,
// each conditional on the guard as the one before left it, as store/zk
// chains its multis with a chain node. No other commit comes between its
// links, but a reader may see a prefix of them, and a writer that dies
// (or pauses past the lease) between two links leaves a prefix applied:
// the next link then fails with store.ErrConflict. Only such a chain is
// weaker than the contract's atomic Commit; an op that fails fails in
// the plan, before the first link.
//
// # Watches
//
// A Watch is one etcd watch of every node key from the revision after
// the one current when Watch is called (a linearizable read), filtered to
// the watched subtree. Events come in commit order, the requests of one
// transaction in their order; several writes of one node in one commit
// are one put, so a watcher sees one EventPut with the final version (a
// delete and a create of a node in one commit is one EventPut of version
// 0). A watch that ends (its member lost the leader or went away; the
// client fails over to another endpoint) is opened again from the
// revision after the last one delivered, so nothing is lost or repeated;
// if that revision was compacted, the consumer gets one EventResync and
// the events from the compaction on. A consumer that falls 65,536 events
// behind gets one EventResync instead of its backlog.
//
// # Election
//
// The election on etcd (package election/etcd) is built on this store:
// its keys are node keys of the store (NodeKey, ChildrenKey, their values
// EncodeValue's), written with the store's client. A term's fence
// (election.Term.Fence) is a store.Check of the term's key at the store
// version the term wrote (so a later term of the same key fences the
// earlier one out), which a flat
// commit turns into a compare of the key's mod_revision, and a guarded
// commit (nested or chained, see Commits) carries beside the guard's
// compare in each of its transactions, since a lease's expiry deletes
// the key without moving the guard: once the key is gone, no write of
// the term commits.
//
// # Member
//
// A scheduler's store on its own member calls it in-process
// (Options.Member: etcd's v3client, function calls into the server, no
// gRPC framing or protobuf encoding); only the calls that name a member
// by URL (status, defragmentation) go over gRPC.
//
// StartMember runs one member: name, data directory, peer and client
// URLs, a static initial cluster, raft timers (the measured 50 ms
// heartbeat and 500 ms election in the tests), quota and
// auto-compaction. A data directory remembers (elasticjob-member.json)
// which member of which cluster wrote it, and a start in a directory of
// another cluster or member fails with ErrForeignDataDir before etcd
// runs; while it waits for its cluster, a member asks its peers which
// cluster they are in, and one that answers with another cluster id (a
// different peer list or token) fails the start with ErrPeersDisagree.
package etcd
