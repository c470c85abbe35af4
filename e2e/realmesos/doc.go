// Package realmesos is the real-Mesos test tier: the scheduler against a real Apache Mesos 1.x
// master and agent (the mesos_url path), started by the tests on 127.0.0.1 from a Mesos build
// (EJ_MESOS_HOME, default /work/shared/mesos-1.11, or ../shared/mesos-1.11 beside the
// repository). Without a build every test skips with one clear "skipped: no Mesos build at …"
// message; with one they never skip (the ZooKeeper tests also need EJ_TEST_ZK, required when CI
// is set, as everywhere).
//
// What it proves: a cron job end to end on the real agent (the executor fetched from the
// scheduler over HTTP, shards run, history records them), checkpointing on (the master's own
// log line), HTTP Basic framework authentication (a wrong secret is refused clearly and retried
// slowly, the right one subscribes), and zk:// leader detection including a master failover.
//
// Harness (harness_test.go, mesos_test.go): startMesos starts masters and an agent with options
// (ZooKeeper election, framework credentials), startSchedulers starts N schedulers against them
// in one call, and each process can be stopped, killed with SIGKILL or paused, so tests of
// several schedulers on one master and of a takeover with tasks surviving on the agent are a few
// lines each.
//
// Run with `go test -race -count=1 ./e2e/realmesos/` (make test runs it with the other tiers).
package realmesos
