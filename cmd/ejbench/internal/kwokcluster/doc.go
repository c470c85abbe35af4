// Package kwokcluster is a Kubernetes cluster of simulated nodes for the
// benchmarks (kube-scale; clusters-launch's Kubernetes clusters): etcd,
// kube-apiserver, kube-controller-manager and kube-scheduler of the
// single-node build (EJ_K8S_HOME), started with the flags of its
// scripts/start.sh on free loopback ports in a directory of the caller's,
// each stopped by its pid, and kwok playing the nodes (internal/kwoksim's
// release and Stages, with pods that end after their job's run time).
// There is no kubelet: the single-node build's one-per-machine limit is
// its kubelet's (the kubepods cgroups, its ports), so such a control
// plane runs beside it; the benchmarks still take Lock, as their figures
// would not be comparable beside another cluster's load.
package kwokcluster
