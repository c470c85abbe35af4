// Package registry is the typed layer over store.KV: apps and jobs under
// /config, scheduler state under /state (ready queue, running tasks, failover
// queue, disable flags), the scheduler's own nodes under /ha, /auth,
// /packages and /kube. The API and every scheduler loop go through it; the
// layout is the original's registry layout, so an operator who knows the
// original's ZooKeeper tree can read ours:
//
//	/config/app/{appName}                        app.Config (JSON)
//	/config/job/{jobName}                        jobs.Config (JSON)
//	/state/ready/{jobName}                       queue.Ready (JSON: count, since, pending runs)
//	/state/running/{jobName}/{jobName}@-@{item}  task.Entry (JSON: taskId, agent, state…)
//	/state/failover/{jobName}/{jobName}@-@{item} queue.Failover (JSON: failed taskId, since)
//	/state/retiring/{jobName}/{jobName}@-@{item} Retiring (a DAEMON shard's old task while its move overlaps)
//	/state/disable/app/{appName}                 present = disabled
//	/state/disable/job/{jobName}                 present = disabled (task.Pause when the scheduler paused it)
//	/state/runs/{jobName}                        task.RunState (failed runs in a row)
//	/state/waiting/ready/{jobName}               queue.Wait (why a ready entry has not launched)
//	/state/waiting/failover/{job}/{job}@-@{item} queue.Wait (why a failover shard has not)
//	/state/registered/{jobName}                  when the job was registered (RFC 3339)
//	/state/gang/{jobName}                        the gang id of a launch recorded over several commits
//	/state/leader_term                           the term that leads now (written first by every term)
//	/state/producer/fired_until                  the cron producer's watermark
//	/state/producer/fired_commit                 the id of the last fire commit (a retried one lands once)
//	/state/trigger_keys/{key}                    task.RunRecord of a keyed trigger (and of a workflow node's execution)
//	/config/workflow/{name}                      workflow.Config (JSON)
//	/state/workflow/{name}                       WorkflowState (the cron watermark); its children:
//	/state/workflow/{name}/{runId}               workflow.Run (JSON)
//	/state/workflow_keys/{name}/{key}            the run a trigger's idempotency key created
//	/state/disable/workflow/{name}               present = disabled
//	/ha/framework_id                             the Mesos framework id (earlier versions: /state/framework_id, still read)
//	/ha/commit_chain                             the node chained batches link their parts through
//	/auth/tokens, /auth/revoked                  API tokens (hashes) and revoked sessions
//	/secrets/{namespace}/{name}                  sealed secrets
//	/packages/key                                the key of package URL tokens (package packages' own value)
//	/kube/logs/{jobName}/{taskId}                a finished task's log tail (package kube's own encoding)
//	/kube/owners/{kind}/{ns~name}                the Kubernetes object that owns a definition
//	/kube/webhook/ca                             the CRD webhook's certificate authority (package crd's own value)
//
// The original ElasticJob-Cloud's values at those paths (3.0.x YAML apps
// and jobs, 2.1.x Gson jobs, decimal ready counts, bare task ids under
// running and failover) are read as it left them and rewritten in the
// form above at their next change (legacy.go, docs/upgrading.md).
//
// That tree is the default namespace's. Every other namespace has the same
// tree under /namespaces/{ns} (its record at /namespaces/{ns}); layout.go
// maps the two views the registry reads through (New: every namespace,
// names as keys "ns~name"; In: one namespace, its own names), and codec.go
// the names inside stored values. The exported path constants (AppsPath,
// JobsPath, ReadyPath, RunningPath, TriggerKeysPath, WorkflowsPath,
// WorkflowRunsPath, RegisteredJobPath, ChangedJobPath, TailsPath,
// NamespacesPath) name the parts of that layout readers outside look at:
// the registry cache's roots, and tests that inspect or corrupt the store
// they own. The other
// paths are the registry's own.
//
// # Intents only
//
// The registry is sealed: nothing outside it reads or writes the store
// through it, and it exports no raw store operation. Every caller says what
// it means, and the registry turns that into store operations behind the
// leader's fence (Options.Fence, given to New: a deposed leader's writes
// fail with ErrFenced and write nothing).
//
// Registry is the core: the namespace views (In), the fence, the leader's
// state changes and their commits, watches and the damaged entries. The
// rest is reached through one facade per concern (facades.go; the files
// are named after them: config_*.go, flows_*.go, work_*.go, …):
//
//   - Config: apps, jobs, disable flags, owners. AddApp, UpdateApp,
//     SetAppURL, DeleteApp (with its jobs), AddJob, UpdateJob, DeleteJob,
//     SetDisabled, SetOwner; reads App, Apps, Job, Jobs, CanRun (the one
//     "may this job run now" rule), …
//   - Flows: the workflow definitions (AddWorkflow, UpdateWorkflow,
//     DeleteWorkflow), their runs and idempotency keys.
//   - Work: the leader's work. Trigger, TriggerBy, TriggerMany (the
//     producer's batch), TriggerRun (a keyed run), Requeue; reads of the
//     ready and failover queues, running tasks, run state, pauses, gangs,
//     waiting reasons; the Kubernetes engine's log tails (LogTails, LogTail,
//     WriteLogTails: the engine's encoding, stored as given, fenced).
//   - Schedule: calendars and plans, the producer's watermark and
//     TriggerMissed (a new leader's replay of the fires no leader fired),
//     backfills, deadline alerts.
//   - Tenancy: namespaces, secrets, API tokens and revocations.
//   - Term: BeginTerm writes a new term's record through the registry
//     copy's barrier, so the copy holds every write of the terms before;
//     the framework id; the cells components own in their own format (a
//     Cell they read and create once, unfenced since every instance may
//     create it): the package token key (PackageKey) and the CRD webhook's
//     certificate authority (WebhookCA).
//   - The core's state changes: Change, a set of named changes committed
//     together in one transaction — Launch, Mark, End, Unlaunch, Dequeue,
//     FailOver, TakeFailover, DropFailover, DropReady, RecordRun, CountRun,
//     Pause, MarkGang, Wait, Unwait and the workflow ones (CreateWorkflowRun,
//     PutWorkflowRun, QueueNodes, DropPendingRun, …); CommitChanges and
//     Batch/ChainedBatch commit many. A Change conditional on what was read
//     fails as a whole with ErrConflict, to be read again and retried.
//   - The core's watches: WatchConfig, WatchApps, WatchReady, WatchWorkflows.
//
// The records are the pure packages' types under their own names (one name
// per concept): task.Entry, task.RunRecord, task.RunState, task.Pause,
// queue.Ready, queue.Failover, queue.PendingRun, queue.Wait and its reasons
// (queue.WaitKey names a waiting entry). A reader that keeps its own
// decoded copy lists Stored records (StoredApps, StoredJobs,
// StoredWorkflows, Backfills): key, version and a fingerprint of the
// stored bytes, decoded only when it differs (Stored.Decode). Nothing
// exported takes or returns store.Node or store.Event; TestRegistryIsSealed
// keeps it so, and archtest keeps every package above the registry from
// naming them.
//
// Writes that must not lose a concurrent writer's change (the ready count)
// are compare-and-set on the node version, retried on conflict.
package registry
