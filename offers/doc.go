// Package offers is the pure matcher that places shard tasks on Mesos
// resource offers. It replaces Netflix Fenzo from the Java original.
//
// Match takes a snapshot (offers, requests, executors already running) and
// returns a Plan: the launches per offer, the offers to decline and the
// requests left unplaced with a reason. It does no I/O, reads no clock,
// starts no goroutine and never modifies its input; the same input always
// gives the same plan (offers are numbered by ID and requests sorted, so
// input order matters only to decide which of two duplicates is the first). "Does not fit" is data (Unplaced), never an error.
//
// # Resources
//
// CPU is fixed-point in thousandths of a core (Milli) and memory is whole MB,
// so 0.1+0.2 cores fit exactly in 0.3 and sums never drift. CPUs rounds to
// the nearest thousandth; MemMB rounds fractional megabytes up.
//
// # Algorithm
//
//  1. Screen: requests that are malformed are Unplaced "invalid_request"; a
//     request repeating an earlier (Job, Shard, Kind) is Unplaced "duplicate".
//     With no offers at all, every remaining request is Unplaced "no_offers".
//  2. Order: requests are grouped per (Kind, Job). All FAILOVER groups come
//     before all READY groups; within a class the group whose smallest Seq is
//     smallest (waited longest) goes first, ties by job name; inside a group
//     shards go in increasing order. Nothing is served by name alone, so no
//     job starves.
//  3. Place each request greedily:
//     a. among offers on agents where the app's executor is already running
//     or was charged earlier in this plan, take the best fit for the task
//     alone (least free CPU left after placement, then least memory, then
//     lowest offer ID);
//     b. otherwise take the best fit, over all offers, for task plus
//     executor; that launch has ChargesExecutor set and the agent joins the
//     app's executor set, so other offers of the same agent are never
//     charged again.
//     FAILOVER requests are placed one by one (partial placement allowed).
//     The shards of one READY execution form a gang: they are placed
//     tentatively, and if any shard does not fit every tentative placement is
//     undone in reverse order (free resources, indexes and executor charges
//     return exactly to their previous state) and all its shards are Unplaced
//     "gang_incomplete" with a Detail naming the short resource.
//  4. Plan: offers with launches map to them in placement order; every other
//     offer ID is declined (sorted).
//
// A request that does not fit is diagnosed against the current state:
// "insufficient_cpu" or "insufficient_mem" when no offer has enough of that
// resource (counting the executor on agents that lack it), and
// "insufficient_resources" when each resource exists but never on one offer.
//
// # Data structures
//
// Offers are kept in a slice sorted by (free CPU, free memory, offer number),
// and each app has one such slice holding only the offers on agents where its
// executor is present. A best-fit lookup is a binary search for the first
// offer with enough CPU followed by a forward scan for enough memory. A
// placement lowers one offer's free resources, which moves it left in the
// global slice and in the slices of the apps present on its agent: a binary
// search plus a short memmove. Matching n requests on m offers costs about
// O(n·(log m + k)) where k is the memory-scan length and the number of apps
// present on an agent, instead of Fenzo-style O(n·m) scans.
package offers
