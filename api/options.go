package api

import (
	"context"
	"io/fs"
	"log/slog"
	"net/http"
	"time"

	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/deadline"
	"github.com/ejcloud/elasticjob/nsusage"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/secrets"
	"github.com/prometheus/client_golang/prometheus"
)

// Options configure a Server: what every handler uses at the top, then
// one group per concern. A group left zero turns its features off (or to
// their defaults), as each field says.
type Options struct {
	// What every handler uses: the registry, the credentials, the clock,
	// the logger.
	Registry *registry.Registry
	Auth     *Auth
	Clock    clock.Clock
	Log      *slog.Logger

	Limits     Limits          // how large and how slow a request may be
	Live       Live            // the running scheduler, its engine and history
	Forwarding Forwarding      // a cluster's instances: writes to the leader
	Audit      AuditLog        // every write request; nil: none recorded, GET /api/audit answers 503
	Apps       AppOptions      // apps, packages, pod templates
	Schedules  ScheduleOptions // crons' time zone and jitter
	Jobs       JobOptions      // triggers and start estimates
	Tenancy    TenancyOptions  // namespaces and secrets
	Operate    OperateOptions  // reconciliation, the replicated store, executors' reports, profiles
	Metrics    MetricsOptions  // /metrics and who reads it
	Files      Files           // served as they are beside the API: the console, artifacts
}

// Limits bound requests.
type Limits struct {
	// MaxBodyBytes bounds a request's body (default 1 MiB).
	MaxBodyBytes int64
	// SlowRequest: a request that takes at least this long is logged
	// (warning "slow API request": method, route, status, duration);
	// default 2 s, negative: never.
	SlowRequest time.Duration
}

// Live is the running scheduler, its engine and history (runs, jobs,
// operate, workflows).
type Live struct {
	Ops     Operations // may be nil until the scheduler is up
	Engine  Engine     // may be nil until the engine is chosen
	History History    // event trace and statistics; nil: history off
}

// Forwarding joins a cluster's instances (forward.go).
type Forwarding struct {
	// Cluster, when set, routes writes to the elected leader; nil: this
	// instance serves everything (the embedded mode).
	Cluster Cluster
	// Refresh re-reads registry paths into this instance's copy after a
	// write it forwarded (all: everything); may be nil.
	Refresh func(ctx context.Context, paths []string, all bool) error
	// PeerTransport carries forwarded writes (default: a transport with
	// bounded timeouts).
	PeerTransport http.RoundTripper
	// ClientAddr is the client address recorded in the audit log and used
	// by the login throttle; default RemoteAddr (the TCP peer). A cluster
	// leader replaces it to trust the address a standby forwards.
	ClientAddr func(*http.Request) string
}

// AppOptions serve apps (apps.go, packages.go, podtemplates.go).
type AppOptions struct {
	// RejectFileAppURLs refuses file:// app URLs (agents may run on other
	// machines; see appurl.go).
	RejectFileAppURLs bool
	// Packages, when set, hosts app packages: PUT /api/app/{appName}/package
	// uploads, and GET/HEAD /packages/{sha256}/{token}/{filename} serves them
	// without authentication.
	Packages Packages
	// PodTemplates, when set (the Kubernetes engine), checks the
	// podTemplates of apps and jobs at registration; nil: a podTemplate is
	// refused (podtemplates.go).
	PodTemplates PodTemplates
}

// ScheduleOptions serve calendars, cron previews and the plans of fires
// (calendars.go, cron.go).
type ScheduleOptions struct {
	// Location is the scheduler's default time zone of crons (time_zone;
	// nil: the machine's).
	Location *time.Location
	// CronJitter is the scheduler-wide jitter window (cron_jitter), so the
	// previews show the fires the leader makes.
	CronJitter time.Duration
}

// JobOptions serve jobs (jobs.go, estimates.go).
type JobOptions struct {
	// TriggerCommitted, when set, is told of every execution a trigger
	// queued: when (the ready entry's time, taken as its commit began) and
	// when the commit returned; the launch-path metrics' first stage.
	TriggerCommitted func(job string, queued, committed time.Time)
	// Typicals, when set, gives jobs' recent run durations for the start
	// estimates of waiting work (GET /api/job/tasks/ready); nil: from the
	// jobs' timeouts alone (estimates.go).
	Typicals *deadline.TypicalCache
}

// TenancyOptions serve namespaces and secrets (namespaces.go, nsusage.go,
// secrets.go); jobs check their secrets with the keyring too.
type TenancyOptions struct {
	// Secrets is the operator's keyring (secrets_key_file) that seals the
	// namespaces' secrets; nil: storing a secret or naming one is refused
	// with how to set a key.
	Secrets *secrets.Keyring
	// TenantIsolation is what keeps one namespace's tasks from another's
	// where they run, shown with every namespace (nil: not said). While
	// it is "unavailable", no namespace but default can be made.
	TenantIsolation *TenantIsolation
	// NamespaceSeries is the leader's record of each namespace's usage
	// over the last hour and its fires on time (nsusage); nil: GET
	// /api/namespaces/{name}/usage shows the usage now and no series.
	NamespaceSeries *nsusage.Series
	// EngineCaps, when set (Kubernetes), says what the engine allows a
	// namespace: its Kubernetes namespace and ResourceQuota, shown by GET
	// /api/namespaces/{name}/usage.
	EngineCaps func(ns string) *EngineCap
	// IdleExecutors, when set, lists a namespace's idle executors (up
	// between tasks, charged to it); ok false where this instance does not
	// lead (a standby does not know them).
	IdleExecutors func(ctx context.Context, ns string) (idle []IdleExecutor, ok bool)
	// NamespaceChanged, when set, is told that a namespace's record was
	// written or deleted (the leader's launch round reads the capacities
	// again at once).
	NamespaceChanged func()
	// ExecutorBinding, when set (the embedded agent), checks that a
	// secret fetch comes from the executor that runs its task; nil: the
	// engine cannot tell, and a fetch is bound to its task and one use only.
	ExecutorBinding ExecutorBinding
}

// OperateOptions serve the operators' routes (operate.go, replicated.go,
// executors.go, pprof.go).
type OperateOptions struct {
	// ReconcileEvery bounds how often reconciliation may be requested
	// (default 10 s).
	ReconcileEvery time.Duration
	// Replicated, when set, operates the replicated store's cluster
	// (registry=etcd): /api/operate/store/… (replicated.go).
	Replicated ReplicatedStore
	// Executors, when set, takes the reports of executors in Kubernetes
	// pods at POST /executor/v1/report (executors.go).
	Executors Executors
	// Pprof serves Go's profiles at /debug/pprof/ to admins and turns on
	// block and mutex sampling (pprof.go); off: the routes do not exist.
	Pprof bool
	// Clusters are the scheduler's clusters, the home one first (clusters.go,
	// /api/operate/clusters); none: the routes list none.
	Clusters []ClusterConfig
	// ClusterHealth, when set, is each cluster's connection as the leading
	// term's engine sees it (nil or empty when not leading); nil: the
	// listing shows none.
	ClusterHealth func() []ClusterHealth
}

// MetricsOptions serve /metrics (metricsaccess.go).
type MetricsOptions struct {
	Gatherer prometheus.Gatherer // served at /metrics; nil serves none
	// Login: /metrics asks for the API's credentials; an admin reads every
	// series, anyone else only those of the namespaces it may read. False:
	// it asks for them whenever teams are configured (a users file or
	// OIDC) or Token is set, unless Open; else it is served to anyone.
	Login bool
	// Open: /metrics is served to anyone even with teams configured (the
	// operator's metrics_access=open).
	Open bool
	// Token, when set, is a bearer token that reads every series of
	// /metrics and nothing else (metrics_token_file).
	Token string
}

// Files are served as they are, beside the API.
type Files struct {
	Web fs.FS // console assets; nil serves none
	// Artifacts, when set, is served without authentication at GET/HEAD
	// /artifacts/… (the executor binary agents fetch, content-addressed;
	// see engine/mesos/artifacts).
	Artifacts http.Handler
}
