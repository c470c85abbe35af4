// Package scheduler holds the leader's loops: the producer (cron fires →
// ready queue), the launcher (ready and failover work → offers.Match →
// commit state → ACCEPT), the status handler (Mesos updates → running,
// failover, history) and the reconciler. See README.md in this folder for
// the task state machine and the launch pipeline.
//
// Everything that decides runs on one goroutine (the loop), fed by events:
// Mesos events from the client, fires from the producer, configuration
// changes from the catalog, and wake-ups from the API. I/O happens at the
// edges: snapshot the registry, decide with pure functions, commit the
// state, then call the network.
package scheduler
