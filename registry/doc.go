// Package registry is the typed layer over store.KV: apps and jobs under
// /config, scheduler state under /state (ready queue, running tasks, failover
// queue, disable flags, framework id). The API and every scheduler loop go
// through it; the layout is the original's registry layout, so an operator
// who knows the original's ZooKeeper tree can read ours:
//
//	/config/app/{appName}                        app.Config (JSON)
//	/config/job/{jobName}                        jobs.Config (JSON)
//	/state/ready/{jobName}                       Ready (JSON: count, since)
//	/state/running/{jobName}/{jobName}@-@{item}  Running (JSON: taskId, agent, state…)
//	/state/failover/{jobName}/{jobName}@-@{item} Failover (JSON: failed taskId, since)
//	/state/disable/app/{appName}                 present = disabled
//	/state/disable/job/{jobName}                 present = disabled
//	/state/framework_id                          the Mesos framework id
//	/state/leader_term                           the term that leads now (written first by every term)
//	/state/trigger_keys/{key}                    RunRecord of a keyed trigger (and of a workflow node's execution)
//	/config/workflow/{name}                      workflow.Config (JSON)
//	/state/workflow/{name}                       WorkflowState (the cron watermark); its children:
//	/state/workflow/{name}/{runId}               workflow.Run (JSON)
//	/state/workflow_keys/{name}/{key}            the run a trigger's idempotency key created
//	/state/disable/workflow/{name}               present = disabled
//
// That tree is the default namespace's. Every other namespace has the same
// tree under /namespaces/{ns} (its record at /namespaces/{ns}, its API
// tokens at /auth/tokens); layout.go maps the two views the registry reads
// through (New: every namespace, names as keys "ns~name"; In: one
// namespace, its own names), and codec.go the names inside stored values.
//
// Writes that must not lose a concurrent writer's change (the ready count)
// are compare-and-set on the node version, retried on conflict.
package registry
