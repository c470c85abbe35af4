// Package workflow is the workflow domain: a workflow is a named DAG whose
// nodes are registered TRANSIENT jobs, each starting when its trigger rule
// over the nodes it depends on is met (config.go: the model and its
// validation); a run is one execution of the DAG (run.go: run and node
// states, cancel and retry); Step (step.go) is the pure decision that
// advances a run from what is known of its nodes' executions. The leader's
// engine (package flowengine) reads the registry, calls Step, commits the
// result with the term's fence and then acts on it.
//
// Run lifecycle:
//
//	QUEUED ──(a slot under maxConcurrentRuns)──► RUNNING ──► SUCCEEDED | FAILED | CANCELLED
//	   ▲                                                           │
//	   └──────────────────────── retry (FAILED, CANCELLED) ◄───────┘
//
// Node lifecycle within a run:
//
//	PENDING ──(rule met: Start)──► RUNNING ──► SUCCEEDED | FAILED | CANCELLED
//	   └──(rule can no longer be met, or the run is cancelled)──► SKIPPED
//
// A node's execution is one keyed trigger of its job (registry.TriggerRun
// semantics): its idempotency key is NodeKey(workflow, run, node, attempt),
// so a start issued twice queues one execution; the scheduler records how
// its shards ended under /state/trigger_keys/{key}, and Step reads that as
// an Execution.
package workflow
