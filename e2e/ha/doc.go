// Package ha is the chaos tier of cluster mode: real bin/scheduler
// processes (three per test) elect a leader on a real 3-server ZooKeeper
// ensemble and share one bin/mesos-local, while the tests kill -9 the
// leader ten times in a row, pause it with SIGSTOP past its session
// timeout, cut it off from ZooKeeper and Mesos behind proxies the test
// controls, restart a ZooKeeper server and take the quorum away, and send
// writes to a standby while the leader is replaced.
//
// Every test judges the cluster from the outside: the job processes' own
// output (one line per start and end of a shard run, with its task id and
// a timestamp), the schedulers' logs ("leading" / "no longer leading"
// give each term's span), and what the proxies saw a deposed leader send.
// The assertions are the issue's: at most one leader at any instant, no
// shard run executed twice, no fire lost beyond what the misfire rule
// allows (exact counts from cron windows fixed in advance with a year
// field), running tasks never killed by a takeover.
//
// The tests need EJ_TEST_ZK_ENSEMBLE (scripts/services.sh start-ensemble
// DIR; . DIR/ensemble.env), except the quorum test, which starts and stops
// an ensemble of its own; in CI (CI set) they never skip. EJ_HA_LOGS=DIR
// keeps every process's log and the jobs' runs.log of each test in DIR.
package ha
