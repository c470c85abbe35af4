// Package realmesos is the real-Mesos test tier: the scheduler against a real Apache Mesos 1.x
// master and agent (the mesos_url path), started by the tests on 127.0.0.1 from a Mesos build
// (EJ_MESOS_HOME, else ../shared/mesos-1.11 beside the
// repository). Without a build every test skips with one clear "skipped: no Mesos build at …"
// message; with one they never skip (the ZooKeeper tests also need EJ_TEST_ZK, required when CI
// is set, as everywhere).
//
// What it proves: a cron job end to end on the real agent (the executor fetched from the
// scheduler over HTTP, shards run, history records them), checkpointing on (the master's own
// log line) and configurable, HTTP Basic framework authentication (a wrong secret is refused
// clearly and retried slowly, the right one subscribes), zk:// leader detection through a master
// failover, a second scheduler instance joining an executor the first one started, and the
// table of behaviours every engine passes (conformance_test.go, e2e/conformance), where losing
// the agent is killing it with its sandboxes, marking it gone and starting a new one.
//
// Harness (harness_test.go, mesos_test.go), for more cluster tests:
//   - startMesos(t, mesosOpts{zk, masters, credentials, resources}) starts masters and an agent;
//     m.leader(), m.activeFrameworks(), m.masterLog(), m.sandboxFiles(name), m.masters[i].kill9();
//   - startSchedulers(t, n, schedOpts{mesosURL, extra: sharedRegistry(t)}) starts n schedulers on
//     one ZooKeeper registry against that Mesos in one call; startScheduler(t, name, dataDir, o)
//     starts (or restarts) one; each has stop, kill9, pause/resume (SIGSTOP/SIGCONT), Log,
//     publishApp, registerJob, trigger, executions; subscribedOf(ss) lists those subscribed;
//   - runsIn(t, out) reads what the recorder app's runs wrote (one line per run, with its task id),
//     noTaskRanTwice checks them.
//
// Run with `go test -race -count=1 ./e2e/realmesos/` (make test runs it with the other tiers).
package realmesos
