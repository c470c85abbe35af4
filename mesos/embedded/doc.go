// Package local is an embedded single-node Mesos-compatible master and agent.
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
// Concurrency: all cluster state is guarded by a single mutex. Events are
// encoded under that mutex and appended to a per-connection queue, which a
// single goroutine (the HTTP handler of the stream) drains in order, so
// delivery per framework and per executor is ordered. Process starts,
// fetches and waits run in their own goroutines without holding the mutex.
package embedded
