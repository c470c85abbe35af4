// Package embedded is an embedded single-node Mesos-compatible master and agent.
//
// It is the default resource manager of the product: it runs in-process,
// serves the Mesos v1 scheduler API (/api/v1/scheduler), the v1 executor
// API (/api/v1/executor) and the operator API's GET_EXECUTORS (/api/v1, which a
// scheduler taking over reads to join running executors) over real HTTP on
// loopback, offers this machine's
// resources (cpus, mem, disk, ports with role "*") and runs executors as
// local child processes in Mesos-style sandboxes under Config.WorkDir.
//
// It doubles as the Mesos protocol test double, so it follows Mesos
// semantics rather than the needs of any particular scheduler: one
// outstanding offer per framework, decline filters, suppress/revive,
// reliable status updates with acknowledgements and retries, explicit and
// implicit reconciliation, executor failure handling and failover timeouts.
//
// Authentication (auth.go): with Config.Secret, the scheduler API, the
// operator API and the read endpoints require HTTP Basic
// Config.Principal:Config.Secret (a Mesos master with
// --authenticate_http_frameworks and --authenticate_http_readonly); the
// executor API always requires the calling executor's own token
// (MESOS_EXECUTOR_AUTHENTICATION_TOKEN, sent as a bearer token, as with
// --authenticate_http_executors), for its own executor id and its own tasks.
// Unlike a Mesos agent, it takes an executor's updates only for tasks it
// launched into that executor, at most 64 new ones a task, each at most
// 1 MiB of data and message, messages at most 1 MiB and dropped while the
// scheduler's stream is 64 MiB behind (exec_api.go): an executor's token is within
// a compromised executor's reach, and every update is root's to record.
//
// Our executor (ELASTICJOB_AGENT_CODEC=protobuf in its environment tells it
// this agent is ours) speaks protobuf, and sends the calls that queued
// while one was in flight as one request: a RecordIO body of UPDATE and
// MESSAGE calls (Content-Type application/recordio), applied in order if
// every one passes the checks a call alone gets, else refused whole
// (exec_api.go, handleBatch). Any other executor's single calls, JSON or
// protobuf, are served as a Mesos agent serves them.
//
// Isolation (isolation.go): like a Mesos agent with the cgroups/cpu,
// cgroups/mem isolators, it runs each executor in a container cgroup
// (package cgroups, v2 or v1) limited to the executor's plus its live
// tasks' resources, the executor itself in a child with its own limits;
// the executor gives each task a child of the container (ELASTICJOB_CGROUP
// tells it where). Containers are destroyed when executors end and, at
// start, those an earlier run left, but the recovered executors'. Without writable cgroups it warns once
// and reports posix isolation; /state carries flags.isolation and an
// isolation object (mode, enforced, reason).
//
// Tenants (tenancy.go, package tenant): with Config.Tenancy, each
// executor runs as its tenant's OS user (one uid per tenant from a range,
// recorded in the work directory's tenants.json) in new PID and mount
// namespaces, started through a small init that hides the work directory
// and the configured paths, shows the executor's sandbox and its tenant's
// cache again, and reaps. The sandbox and the container cgroup become the
// tenant's. The agent must run as root (Start fails otherwise;
// CheckTenancy says why beforehand).
//
// Disk (agentid.go, archive.go, gc.go): the agent id is kept per work
// directory, so task ids keep naming this agent across restarts, and the
// sandboxes of earlier runs are listed again in /state as completed
// executors. Sandboxes of terminated executors are removed by the Mesos
// rule (package sandboxgc: gc_delay shortened as the disk fills), never a
// live executor's. One agent runs per work directory (lock.go).
//
// Restarts (checkpoint.go, recover.go), as a Mesos agent with
// checkpointing: for frameworks with FrameworkInfo.checkpoint the agent
// writes under WORKDIR/meta what it runs (framework and executor infos,
// each executor's pid and start time, each task's info and status updates
// and acknowledgements) before it acts on it, and records its address.
// Executors start in a session of their own; Close and a kill -9 leave
// those of checkpointing frameworks running (others, and those that never
// subscribed, are shut down by Close; those of other frameworks die with
// the process), with MESOS_CHECKPOINT=1 and MESOS_RECOVERY_TIMEOUT
// (Config.RecoveryTimeout, default 15 minutes: how long they keep their
// tasks without an agent). A start on the same work directory listens on
// the recorded address, rebuilds the frameworks (disconnected, each with
// its failover timeout), executors and tasks, and:
//   - takes over every executor whose process still runs (same boot, pid
//     and start time): charged, in its cgroup with its limits, watched by
//     pidfd; it must subscribe again within ExecutorReregistrationTimeout
//     (default 10s) or it is killed and its tasks are LOST/GONE; tasks it
//     was sent but does not know are LOST/DROPPED, queued ones are sent;
//   - ends every executor that is gone: its live tasks fail ("the executor
//     was gone when the <Config.Process> restarted"), dated when they were
//     last seen alive (the agent's alive mark, touched every second, or
//     the last write to the sandbox's logs, whichever is later);
//   - resends every update not acknowledged when the framework subscribes
//     again, and answers reconciliation from the recovered state;
//   - kills whatever else an earlier run left in its sandboxes and cgroups.
//
// With Config.Recover = cleanup (Mesos --recover=cleanup) the start shuts
// down the executors it finds (SIGTERM, SIGKILL after the shutdown grace
// period), accepts no framework, and closes Cleaned once none is left.
//
// Agents (agent.go): the cluster has one real agent, or in simulation mode
// (Config.Sim, tests and benchmarks only; sim.go, simrun.go, simexec.go)
// many simulated agents whose executors run in-process and whose tasks
// run no process. Offers are per agent (one outstanding offer per
// framework and agent, batched in one OFFERS event), decline filters are
// per agent, an ACCEPT must name offers of one agent, and each agent's
// charges and free pool are kept up to date as executors and tasks come
// and go, so an allocation costs no resource sums. Allocation runs for
// the agents whose pool may have grown (every agent on SUBSCRIBE and
// REVIVE).
//
// Layout: Cluster (cluster.go) serves HTTP and owns the lock; its state
// is two halves. master (master.go) keeps the agents' resource pools, the
// frameworks and their subscriptions, offers, decline filters and the
// task status stream with its acknowledgements (allocator.go,
// framework.go, updates.go, control.go); host (host.go) keeps what runs
// on the machine: executors by sandbox, their processes, cgroups,
// sandboxes, the checkpoint and what a restart recovered (executor.go,
// process.go, recover.go, archive.go, gc.go). The decisions are pure
// functions with table tests, applied by those files: allocation
// (allocation.go: who is offered which pool, refuse filters, the
// eligible frameworks), recovery (recovery.go: a checkpointed run's fate,
// a task replayed from its records, what Close leaves running, how a loss
// is reported), reliable updates (reliable.go), launch validation
// (accept.go) and sandbox collection (gc.go).
//
// Concurrency: all cluster state, both halves, is guarded by the single
// mutex Cluster.mu (an executor's end changes both in one step); master
// and host keep a pointer to it for their timers. Events are
// encoded under that mutex and appended to a per-connection queue, which a
// single goroutine (the HTTP handler of the stream) drains in order, so
// delivery per framework and per executor is ordered. Process starts,
// fetches and waits run in their own goroutines without holding the mutex.
package embedded
