// Package ha is ejbench's ha scenario: three schedulers on this machine
// (ZooKeeper, or an etcd member in each), leader kills timed to the next
// job start, writes through the leader and a standby, elections under CPU
// burners.
package ha
