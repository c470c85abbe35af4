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
//
// Writes that must not lose a concurrent writer's change (the ready count)
// are compare-and-set on the node version, retried on conflict.
package registry
