// Package engine is the vocabulary between the scheduler and a cluster
// engine: the resources on offer, the tasks to launch, the status updates
// that come back, and the calls the scheduler makes (Driver) and receives
// (Handler). Mesos (package mesos: the embedded single-node master and
// agent, or a real cluster) is one engine; Kubernetes is the other. The
// launch decision does not know which one it talks to.
//
// # The values are the scheduler's, not an engine's
//
// A TaskLaunch carries the executor's payload typed (Task, a
// jobs.TaskData), not encoded: each engine hands it over in its own way
// (the Mesos client encodes it as TaskInfo.data; the Kubernetes engine
// reads the job, app and sharding context to build the pod and passes the
// same encoding in the pod's environment), so the executor reads one
// format everywhere.
//
// A Status carries task.State, task.Reason and task.Source (package task
// owns them, with named constants; they are spelled as Mesos spells them,
// which is also what history has always stored). The Mesos client turns
// its protobuf enums into them at its edge; the Kubernetes engine makes
// them from pods and executor reports with the same constants. Packages
// above the engines (scheduler, history, metrics, round, task, queue)
// use these types and never import package mesos.
//
// # What an engine declares
//
// Where engines differ in a way the scheduler must know, the engine
// declares it through a narrow interface the scheduler asserts
// (caps.go): ExecutorSharing says whether the tasks of one executor id on
// one agent share an executor that outlives them (Mesos) or each run one
// of their own (Kubernetes); NamespaceCaps (driver.go) caps namespaces.
// An engine that declares nothing gets the Mesos behaviour.
package engine
