// Package kube is the Kubernetes engine (client-go v0.37.2) behind the
// engine vocabulary (package engine), so that the scheduler and the launch
// round do not know which engine they talk to (docs/kubernetes.md).
//
// Inventory: informers follow the nodes and this scheduler's pods; a node's
// allocatable resources minus the requests bound to it are offered with
// Mesos' semantics (offers.go: offered while there is room and offers are
// not suppressed; a declined offer comes back when the node changes or its
// refuse time has passed), so the round's decision is the one it makes on
// Mesos. An offer replaced since the round saw it (its node's room changed)
// is still accepted while the node is there, usable, and has the room; an
// ACCEPT on a node deleted, unusable or short of room is refused. Agents
// lists the usable nodes.
//
// Launch: a shard runs in a pod built from the app's and the job's pod
// templates (podtemplate.go, merged as kubectl patch merges; checked by a
// server-side dry run, dryrun.go) and confined by default (security.go),
// bound to the node the round chose or left to kube-scheduler (binding.go).
// The executor in the pod reports to the scheduler's API with its task's
// token (reports.go); the pod's phase and its Warning events are the
// fallback (status.go, events.go). A finished task's pod is deleted once
// its end is committed (release.go), its log tail kept (tails.go). A launch
// again after a roll-back adopts the pods it made (adopt.go); a creation
// whose answer was lost leaves its launch STAGING (engine.ErrOutcomeUnknown),
// and the API server is asked whether a pod not shown by the informer is
// there (unseen.go); a task on a node that left is lost only with its pod,
// which is deleted after the pod GC's quarantine (nodegc.go).
//
// Namespaces: each scheduler namespace's pods live in a Kubernetes
// namespace of its own or the default one; a missing namespace or a full
// ResourceQuota is told to the round before it launches (namespaces.go).
//
// Shape: Engine composes parts by concern. The launch decisions' state (the
// nodes, the task table, the offer book: offers.go, tasks.go) is read in one
// step and kept under Engine's one lock; the parts with state of their own
// each hold their own lock, taken after Engine's: the pod maker (pods.go,
// and the nodes without cluster DNS, dns.go), the namespaces and quotas
// (namespaces.go), the pods' Warning events (events.go); the tail keeper
// (tails.go) has none. A task's state is derived from the task alone
// (task.derive, pure).
//
// Cluster (cluster.go) is the engine for the whole process, leading or
// not: it builds each term's Engine and answers the API's questions (logs,
// sandboxes, nodes) on every instance. The CRDs' reconciler and webhook
// are not here but in api/crd: they register definitions through the
// API, and nothing under engine/ imports api.
package kube
