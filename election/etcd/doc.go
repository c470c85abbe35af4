// Package etcd is the leader election on the etcd store (store/etcd):
// the etcd counterpart of election.Candidate, handing out the same
// election.Terms. It sits under election, not under the store, so that
// the store imports nothing of the election that fences its writes.
//
// A Candidate elects one leader among the schedulers that
// share the cluster and hands out election.Terms, as election.Candidate
// does on ZooKeeper. Each candidate grants a lease (ElectionConfig.TTL,
// 1 s by default: etcd's minimum with the 500 ms election
// timeout; etcd rounds up to whole seconds and to 1.5 election timeouts)
// and creates, under it, the store node Dir+"/n_<lease id>" (a node key
// of the store, holding its election.Member as JSON), so the key goes
// when the lease expires or is revoked. The key with the lowest
// create_revision leads, and every term begins with the candidate writing
// its key again (same value and lease, the next store version), whose
// revision is the term's number (Term.Seq); a term that ended while its
// key lived (a loop failed, or its renewals were not confirmed in time
// although etcd renewed the lease) is followed by another leadership
// under the same key so too. A term's write comes after every write of
// the terms before it (theirs ended before its key was the lowest), so
// numbers grow strictly with every leadership, the same candidate's
// included. The key's create_revision would not: a standby's key created
// before another key's second term began would number its first term
// lower than that one. A candidate watches the election's keys from the revision it listed at
// and looks again when one changes, and at least every TTL.
//
// The candidate renews its lease every sixth of the TTL itself
// (KeepAliveOnce, each bounded by the TTL, sent to the raft leader's
// member: one forwarded by a follower is answered only once the raft
// leader has applied its backlog, over the TTL under a write load;
// renewals overlap, so one late answer does not end a term). The term's own
// lease is half the TTL from the send time of the last renewal that
// etcd confirmed: the server's lease lasts at least a TTL from when it
// received that renewal. Terms are election.NewFencedTerm: past its lease
// a term refuses acts (Valid, StillLeads: the engine calls) but goes on,
// its writes fenced by etcd; unconfirmed for a whole TTL it ends (its
// context is cancelled with election.ErrLeaseLapse), by the time its key
// can expire and another candidate lead, even when the candidate cannot
// reach the cluster at all; a leader that was paused refuses every act
// the instant it runs again, and its term ends at once or at its next
// renewal. Slow renewals (etcd applies a backlog first) thus hold a
// leader back without restarting its term. A renewal that finds the lease gone ends the term at once
// and the candidate joins again under a new lease (a new key, at the
// back of the queue). Run's end revokes the lease: the next candidate
// leads at once.
//
// Fence: Term.Fence is a store.Check of the term's key at the store
// version the term wrote, which the store turns into a compare of the
// key's mod_revision in every transaction of a commit (store/etcd's doc).
// Term.StillLeads adds a linearizable read of the key
// (present, with the term's lease, create_revision and mod_revision) to the lease
// check, for side effects the store cannot fence; a key with a lower
// create_revision cannot appear later, so the key's presence is the
// leadership's.
//
// With the tests' timers (50 ms heartbeat, 500 ms election, 1 s TTL),
// a leader whose member is killed stops acting within half a second and
// loses its term within a second;
// etcd expires its lease 1 to 1.5 s after the last renewal (it looks
// for expired leases every 500 ms), later if the killed member was
// etcd's leader (a new raft leader first extends every lease by an
// election timeout), and the next candidate leads on the watch event.
package etcd
