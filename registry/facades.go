package registry

// The facades of a Registry, one per concern. Each is a value holding the
// registry it was taken from (its view, settings and fence): taking one is
// free, and reg.In(ns).Config() reads and writes that namespace's.

// Config holds what users configure: apps, jobs (and their disable flags,
// registration and change times) and the Kubernetes objects that own
// definitions.
type Config struct{ r *Registry }

// Flows holds the workflows: their definitions, runs, idempotency keys and
// the changes the workflow engine follows.
type Flows struct{ r *Registry }

// Work holds the leader's work: the ready and failover queues, running
// tasks, gangs, per-job run state and pauses, trigger keys, waiting
// reasons and the log tails kept of finished tasks.
type Work struct{ r *Registry }

// Schedule holds when things run: calendars and plans, the producer's
// watermark and missed fires, backfills and the deadline alerts raised.
type Schedule struct{ r *Registry }

// Tenancy holds who may use what: namespaces and their holdings, secrets,
// API tokens and revoked sessions.
type Tenancy struct{ r *Registry }

// Term holds the leader's term and the scheduler's own cells: the term
// record, the Mesos framework id, the package key and the CRD webhook's CA.
type Term struct{ r *Registry }

// Config is the registry's configuration: apps, jobs, owners.
func (r *Registry) Config() Config { return Config{r} }

// Flows is the registry's workflows and their runs.
func (r *Registry) Flows() Flows { return Flows{r} }

// Work is the leader's work in the registry.
func (r *Registry) Work() Work { return Work{r} }

// Schedule is the registry's calendars, watermark, backfills and alerts.
func (r *Registry) Schedule() Schedule { return Schedule{r} }

// Tenancy is the registry's namespaces, secrets and tokens.
func (r *Registry) Tenancy() Tenancy { return Tenancy{r} }

// Term is the registry's term record and cells.
func (r *Registry) Term() Term { return Term{r} }
