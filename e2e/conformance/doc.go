// Package conformance is the one table of behaviours every engine passes: the embedded
// engine (e2e/), a real Apache Mesos 1.11 (e2e/realmesos) and a real Kubernetes 1.37
// (e2e/realkube) each run Run(t, engine) in their tier, as every store runs store/storetest
// and every Nomad task driver its plugins/drivers harness.
//
// A behaviour is a function of an engine-neutral handle (Engine, Cluster, Scheduler): start
// or restart a scheduler against the engine, publish the suite's app, register, trigger and
// kill jobs, read the history, the status traces, the logs and why work waits, and two engine
// hooks: Cluster.Lose (lose the node or agent that runs a task, its processes with it) and
// Caps.Report (how a shard's process tells the suite it started and ended: a file on the
// host, or an HTTP request from a pod). Everything is judged from the scheduler's API and
// from what the shards' processes themselves reported, never from engine internals.
//
// The table (Cases):
//
//	gang          all shards of a job run together: every shard starts before any ends
//	history       a success and a failure reach the history, the failure with its cause;
//	              the status traces hold RUNNING and the terminal state of each task
//	kill          killing a job's run ends its running shards "killed by …" (TASK_KILLED),
//	              nothing of them runs on, nothing is relaunched
//	failover      the node or agent running a failover job's shard is lost: the shard runs
//	              again, once, as a FAILOVER task
//	daemon        a DAEMON job is launched once and runs its cron inside that one task;
//	              disabling it ends the task
//	logs          a running shard's stdout is readable live, and stdout and stderr after
//	              its end (after its pod or sandbox is gone, where the engine removes them);
//	              while it runs its app's sandbox is listed on its agent, which the cluster
//	              page names, and the engine declares logs, sandboxes, cluster view, capacity
//	reconcile     the scheduler is killed (SIGKILL) while shards run and started again on
//	              its data: the running work is kept, ends once and is recorded, nothing is
//	              launched twice (and the engine declares checkpointing)
//	why-waiting   a gang that does not fit beside running work waits whole with its reason
//	              (no shard starts); once the room is there, all its shards run
//
// A behaviour an engine cannot do is declared in its Caps.Skip with the reason, and the case
// is skipped saying so (never silently). To add an engine: implement Engine in the engine's
// tier and call conformance.Run(t, engine) from one test function there.
package conformance
