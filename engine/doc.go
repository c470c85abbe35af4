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
// declares it in one Capabilities value, answered alike by the term's
// Driver and by its API side (Declarer), with no optional interface to
// find by type assertion. The launch round reads ExecutorSharing (whether
// the tasks of one executor id on one agent share an executor that
// outlives them, Mesos, or each run one of their own, Kubernetes) and
// Accepts (how many ACCEPTs it may have in flight together). Every Driver
// also answers NamespaceCaps (caps.go): nil on Mesos, each namespace's
// Kubernetes namespace and quota on Kubernetes.
//
// # Capabilities
//
// An engine declares what it can do (Capabilities), and offers
// what the API reads of it on any scheduler instance, leading or not,
// through narrow interfaces: Logs (a task's stdout and stderr), Sandboxes
// (where an app's executors run), ClusterView (its agents for the console's
// cluster page) and Inventory (its agents' totals, for the registration fit
// check and the launcher's "can never fit"). Errors the API shows wrap
// ErrNotFound (404), ErrInvalid (400) or ErrUnavailable (503).
//
//	capability       embedded Mesos        real Mesos            Kubernetes
//	checkpointing    mesos_checkpoint      mesos_checkpoint      yes: pods outlive the scheduler
//	executor sharing yes: one per app      yes: one per app      no: one pod per task
//	                 and agent             and agent
//	logs             the sandbox's files   the agents' /files    pods/log while the pod
//	                 (/files/read)         (/files/read)         exists, then the kept tail
//	sandboxes        executor sandboxes    executor sandboxes    the app's pods
//	cluster view     master and agent      master and agents     nodes and this scheduler's
//	                 (isolation)           (isolation)           pods (why each waits)
//	capacity         the agent's totals    active agents'        usable nodes' allocatable
//	                                       totals                resources
//
// Checkpointing means that a task keeps running when the scheduler (or, on
// Mesos, an agent) restarts, and the next leader term takes it over by
// reconciliation instead of counting it lost. Executor sharing means that
// tasks of one app on one agent run in one executor process, which keeps
// its cache and its state between tasks; without it every task runs in a
// process (a pod) of its own, which carries a part of the app's executor
// resources. The Mesos side is engine/mesos/agents.Engine (read through the leading
// master), the Kubernetes side kube.Cluster (which also builds each term's
// kube.Engine, hands the executors' reports to it, and checks podTemplates).
// cmd/scheduler only chooses one of them from the settings.
package engine
