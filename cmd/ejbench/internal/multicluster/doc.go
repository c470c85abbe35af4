// Package multicluster is ejbench's scenarios of one scheduler on several
// clusters (docs/clusters.md): clusters-launch, the launch rate at 10,000
// jobs with 1, 2 and 4 clusters, simulated Mesos ones (bin/mesos-local
// each), Kubernetes ones of kwok nodes (kwokcluster), or both, the same
// agents in all split between them; and clusters-move, fire lateness on
// two clusters (the embedded engine and a mesos-local) while the jobs'
// namespace is moved between them and one of them is drained, against the
// same run's calm phases.
package multicluster
