// Package clustersim is ejbench's cluster-sim scenario: the scheduler
// against bin/mesos-local's simulated agents, per registry store (embedded,
// ZooKeeper, etcd), with a standby and a timed takeover, and the simulated
// master's own ceiling.
package clustersim
