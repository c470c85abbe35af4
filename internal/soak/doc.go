// Package soak is the fault soak: a workload of cron jobs (shards,
// misfire on and off, failover on and off, daemons, triggers with
// idempotency keys retried by the client, configuration changes) runs on
// a cluster shape while a nemesis drawn from a seed injects faults, every
// shard run is appended to a run log outside the fault domain
// (soak/runlog), and a checker reads it at the end: no fire's shard
// started twice, no shard running twice at once, every fire run or
// accounted for by the misfire rule, one run per idempotency key, launches
// only by the newest term, every job firing again soon after the last
// fault heals. The checker first computes each expected fire's fates from
// the workload and the fault log alone (expect.go's rules), then judges
// the recorded history against them (judge.go). cmd/ejsoak runs it (make
// soak); see docs/testing.md.
package soak
