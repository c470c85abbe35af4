// Package round decides one launch round: Decide(View) Plan. It is pure:
// no I/O, no clock (View.Now), no goroutine; the same view gives the same
// plan. The scheduler's launcher reads a View (the queues, the jobs, the
// running tasks, the resources on offer, the agents' totals, the last
// round's reservation), calls Decide, and applies the Plan: it commits the
// launches to the registry, then talks to the engine (Mesos ACCEPTs and
// DECLINEs, or Kubernetes pods), and records the wait reasons.
//
// # Policy
//
// Work is taken oldest first: failed shards waiting to run again
// (failover, one shard at a time) before new executions (ready, all shards
// of an execution together or none: a gang), each class by how long it
// has waited. On top of that order:
//
//   - An execution that could not fit even the whole empty cluster (its
//     gang, with the app's executor on every agent it needs, is larger than
//     the agents hold together, or one shard with its executor is larger
//     than every agent) takes no part in the order: it waits as never_fits,
//     with the figures, and is looked at again every round, so it runs once
//     the cluster has grown.
//   - The oldest execution that fits the empty cluster but not the
//     resources on offer now holds the reservation: on every agent that
//     could take some of its shards, the resources on offer up to what it
//     could use there are held for it, so what frees up there goes to it
//     and a stream of smaller work cannot starve it. Later work backfills
//     onto what the reservation cannot use: agents too small for one of its
//     shards, and on larger agents what is free beyond the most it could
//     place there. Only one execution holds a reservation at a time (as in
//     EASY backfill); the others wait behind it in order.
//   - A round places at most View.MaxTasks tasks (one registry commit);
//     the rest wait for the next round, which follows at once. An
//     execution larger than that on its own is placed alone in a round and
//     committed over several commits (Plan.Chunked); it still launches all
//     its shards or none.
//
// # Namespaces (capacity.go, order.go, limits.go, lending.go, preempt.go)
//
// Teams share the cluster by namespace (View.Namespaces: a guarantee, a
// limit, an engine's quota, a weight). A namespace's entries keep their
// own order, and the round takes them in two passes:
//
//  1. Within the guarantee: every entry that fits what is left of its
//     namespace's guarantee, oldest first across namespaces. They go
//     before any borrower, hold the reservation before any borrower can,
//     and may preempt borrowed capacity held by preemptible work.
//  2. Borrowing: the rest, namespace by namespace, the one with the
//     smallest weighted dominant share of what it holds beyond its
//     guarantee first (weighted DRF over CPU and memory, re-ordered after
//     every launch).
//
// A namespace holds its running tasks' shards and its apps' executors:
// each executor counts against its app's namespace once per agent where
// it runs, an idle one too (View.Executors), until it exits. An entry
// costs its shards and its app's executor on each agent where it may
// start one (at most one per shard, on agents with offers that do not run
// it yet: counted before the placement, so conservatively). The executor
// of HTTP jobs without an app serves every namespace and counts against
// none.
//
// Each entry is admitted against its namespace whole (a gang counts all
// its shards and executors): one larger than the namespace's limit or
// quota, with one executor, never runs (never_fits); one that would take
// it over waits (namespace_limit), and so does the rest of the namespace
// that round, so a stream of small work cannot starve it. A borrower must leave free what other namespaces'
// cron fires (View.Fires; less the executors already running) need of
// their unused guarantees before it is expected to end (the p90 of its recent runs, or its timeout; with
// neither, within View.Horizon): guarantee_needed otherwise.
//
// Every entry that does not launch gets a reason (Plan.Waiting), a wait
// about resources with the running work that holds them (holders.go), and a
// round that stopped early or holds a timed wait says when to look again
// (Plan.More, Plan.WakeAt).
//
// # Limits
//
// Runtime estimates (View.Typical: the p90 of each job's recent runs,
// package estimate) say when the holders of what a waiting entry needs
// are expected to free it (queue.Wait.Holders), and decide what may borrow a
// guarantee; they do not steer backfill, so backfill never uses resources the reservation could
// use, even when the backfilled work would end before
// the reservation could launch: a large execution drains the agents it can
// use, as strict oldest-first would. Resources not on offer (used by other
// frameworks, or declined and filtered) are unknown to a round; an
// agent's total comes from the engine's inventory, or from the most it
// ever offered.
//
// # Code
//
// A round is a decider (decide.go: the placement on the offers and the
// plan; rest.go: a backlog's round decided over its head, its rest's
// reasons worked out after, Begin and Rest.Finish) composing parts that
// each own their state: the candidates
// (classify.go), the empty cluster and the reservation (fit.go), the
// running work by agent and the holders it names (occupancy: running.go,
// holders.go), and the namespaces (spaces: capacity.go, with their order,
// limits, lending and preemption in the files named so). words.go words
// the waits; the wait itself (queue.Wait, its reasons and rules, and
// queue.WaitKey) is queue's data, which the registry stores and the API
// shows, so neither imports round for it. Summary and Redact word a wait
// for a reader.
package round
