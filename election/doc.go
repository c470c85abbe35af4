// Package election elects one leader among the scheduler instances that
// share a ZooKeeper registry, and fences what a leader does.
//
// Each candidate creates an ephemeral sequential node under /ha/election
// (in the store's namespace; protected create, so a lost reply never leaves
// an orphan node behind), holding its Member description. The lowest
// sequence leads. Every candidate watches the node just before its own, so
// one departure wakes one candidate, and the leader's node, so standbys know
// where to forward writes.
//
// Leadership is handed out as Terms. A term ends:
//
//   - the moment the ZooKeeper connection is suspended (disconnected), not
//     only when the session expires: a partitioned leader stops before the
//     server can expire its session and another candidate can win;
//   - when its node disappears or the session expires;
//   - when its lease lapses: the leader confirms its node every
//     SessionTimeout/9 and its term is valid only for SessionTimeout/3 after
//     the send time of the last confirmed check (measured on the injected,
//     monotonic clock). The term ends when the lease lapses (a timer watches
//     it), so a leader cut off from ZooKeeper stops at a third of the session
//     timeout even if its client is slow to notice. A leader that was paused
//     (SIGSTOP, a long GC, a frozen VM) finds its lease lapsed the instant it
//     runs again, before its ZooKeeper client has noticed anything, and must
//     not act.
//
// Fencing: Term.Fence returns a Check of the term's election node, which the
// registry prepends to every write the leader makes, so the write and the
// check are one ZooKeeper multi: once the node is gone (session expired,
// another leader elected) no write of the old term can commit. Term.Valid is
// checked before side effects that ZooKeeper cannot fence (calls to Mesos),
// which Mesos fences further by refusing the old subscription's stream once
// the new leader has subscribed with the same framework id.
//
// After a suspension that did not expire the session, the node still exists;
// if it is still the lowest, the candidate leads again in a new term (no one
// else can have led in between, as no one else was lowest).
//
// Term.StillLeads is Valid plus, where the election offers one, a
// linearizable check that the leadership is still in force; on ZooKeeper
// it is Valid alone.
//
// The election on etcd (store/etcd Candidate) hands out the same Terms,
// made with NewFencedTerm and confirmed with Term.Confirm: an etcd lease
// and a key under it in place of the session and the ephemeral node, the
// key's create_revision in place of the sequence number.
//
// Solo is the leader-of-one of the embedded mode: one term that ends only
// with its context, and no fence.
package election
