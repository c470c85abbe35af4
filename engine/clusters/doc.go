// Package clusters composes several cluster engines (real Mesos clusters, Kubernetes
// clusters, the embedded engine) into one engine behind the same seam (engine.Driver, its
// event stream, engine.Inventory), so the scheduler runs on all of them with one launch
// round and no second scheduling path (docs/clusters.md).
//
// Every id an engine hands out that could clash between clusters (an agent's, an
// offer's) reaches the scheduler qualified with its cluster's name (engine.QualifyID:
// "mesos-dc1:9d1…-S0"), and every call the scheduler makes is routed to the cluster its
// ids name, with the ids as that cluster knows them: an ACCEPT by its offers, a kill or a
// reconciliation by the task's agent (which the registry records with the task), a log by
// the task's agent when known. An id with no cluster (a task recorded before the
// scheduler ran on several clusters) belongs to the home cluster, the first of the list.
//
// One cluster's trouble stays its own: when its engine disconnects its offers are
// rescinded one by one and the others' go on (the scheduler hears Disconnected only when
// every cluster is disconnected); when its inventory cannot be read its agents are left
// out of the answer; its call errors are returned only to the calls routed to it.
package clusters
