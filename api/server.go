package api

import (
	"context"
	"github.com/ejcloud/elasticjob/deadline"
	"github.com/ejcloud/elasticjob/engine"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/nsusage"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/secrets"
	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
)

// Operations is what the API asks of the running scheduler itself (the leader's term in
// force, and its instances); what it reads of the engine it reads through Engine.
type Operations interface {
	// Wake tells the launcher that work arrived (after a trigger).
	Wake()
	// Reconcile asks Mesos for task states: explicit (every known task)
	// or implicit (all tasks the master knows).
	Reconcile(ctx context.Context, explicit bool) error
	// Cluster describes the leader, standbys and the engine's part (its agents and what
	// it declares it can do).
	Cluster(ctx context.Context) (any, error)
	// KillRun stops a TRANSIENT job's running execution (every running
	// shard killed, its shards waiting to run again dropped) and keeps the
	// job; by is who asks (its shards end "killed by {by}"). A job with no
	// running execution is ErrConflict; a DAEMON job ErrBadRequest.
	KillRun(ctx context.Context, job, by string) (KilledRun, error)
}

// KilledRun is what KillRun stopped.
type KilledRun struct {
	Tasks   []string `json:"taskIds"`
	Dropped int      `json:"droppedShards"` // shards that waited to run again
}

// Engine is what the API reads of the engine on any instance, leading or not, through the
// engine's own interfaces (engine/capabilities.go): task logs, executors' sandboxes, and the
// agents with their totals (the registration's check that a job can ever fit).
type Engine interface {
	engine.Logs
	engine.Sandboxes
	engine.Inventory
}

// Sandbox is one executor's sandbox.
type Sandbox struct {
	Hostname   string `json:"hostname"`
	AgentID    string `json:"agentId"`
	ExecutorID string `json:"executorId"`
	Path       string `json:"path"`
}

// LogChunk is a piece of a task's log.
type LogChunk struct {
	TaskID string `json:"taskId"`
	Stream string `json:"stream"`
	Offset int64  `json:"offset"` // where Data starts
	Size   int64  `json:"size"`   // the file's size
	Data   string `json:"data"`
}

// Options configure a Server, grouped by the handlers that use them.
type Options struct {
	// Every group: the registry, the credentials, the clock, the logger, the body limit.
	Registry     *registry.Registry
	Auth         *Auth
	Clock        clock.Clock
	Log          *slog.Logger
	MaxBodyBytes int64

	// The running scheduler, its engine and history (runs, jobs, operate, workflows).
	Ops     Operations // may be nil until the scheduler is up
	Engine  Engine     // may be nil until the engine is chosen
	History History    // event trace and statistics; nil: history off

	// The server's middleware: forwarding writes to the leader, the audit log, slow requests.

	// Cluster, when set, routes writes to the elected leader (forward.go);
	// nil: this instance serves everything (the embedded mode).
	Cluster Cluster
	// Refresh re-reads registry paths into this instance's copy after a
	// write it forwarded (all: everything); may be nil.
	Refresh func(ctx context.Context, paths []string, all bool) error
	// PeerTransport carries forwarded writes (default: a transport with
	// bounded timeouts).
	PeerTransport http.RoundTripper
	// Audit records every write request and answers GET /api/audit; nil:
	// nothing is recorded and GET /api/audit answers 503.
	Audit AuditLog
	// ClientAddr is the client address recorded in the audit log and used
	// by the login throttle; default RemoteAddr (the TCP peer). A cluster
	// leader replaces it to trust the address a standby forwards.
	ClientAddr func(*http.Request) string
	// SlowRequest: a request that takes at least this long is logged
	// (warning "slow API request": method, route, status, duration);
	// default 2 s, negative: never.
	SlowRequest time.Duration

	// Apps (apps.go, packages.go, podtemplates.go).

	// RejectFileAppURLs refuses file:// app URLs (agents may run on other machines; see appurl.go).
	RejectFileAppURLs bool
	// Packages, when set, hosts app packages: PUT /api/app/{appName}/package
	// uploads, and GET/HEAD /packages/{sha256}/{token}/{filename} serves them
	// without authentication.
	Packages Packages
	// PodTemplates, when set (the Kubernetes engine), checks the podTemplates of apps and
	// jobs at registration; nil: a podTemplate is refused (podtemplates.go).
	PodTemplates PodTemplates

	// Schedules: calendars, cron previews and the plans of fires (calendars.go, cron.go).

	// Location is the scheduler's default time zone of crons (time_zone; nil: the machine's).
	Location *time.Location
	// CronJitter is the scheduler-wide jitter window (cron_jitter), so the
	// previews show the fires the leader makes.
	CronJitter time.Duration

	// Jobs (jobs.go, estimates.go).

	// TriggerCommitted, when set, is told of every execution a trigger
	// queued: when (the ready entry's time, taken as its commit began) and
	// when the commit returned; the launch-path metrics' first stage.
	TriggerCommitted func(job string, queued, committed time.Time)
	// Typicals, when set, gives jobs' recent run durations for the start
	// estimates of waiting work (GET /api/job/tasks/ready); nil: from the
	// jobs' timeouts alone (estimates.go).
	Typicals *deadline.TypicalCache

	// Tenancy: namespaces and secrets (namespaces.go, nsusage.go, secrets.go); jobs check
	// their secrets with the keyring too.

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
	// EngineCaps, when set (Kubernetes), says what the engine allows a namespace: its
	// Kubernetes namespace and ResourceQuota, shown by GET /api/namespaces/{name}/usage.
	EngineCaps func(ns string) *EngineCap
	// IdleExecutors, when set, lists a namespace's idle executors (up
	// between tasks, charged to it); ok false where this instance does not
	// lead (a standby does not know them).
	IdleExecutors func(ctx context.Context, ns string) (idle []IdleExecutor, ok bool)
	// NamespaceChanged, when set, is told that a namespace's record was
	// written or deleted (the leader's launch round reads the capacities
	// again at once).
	NamespaceChanged func()

	// Operate (operate.go, replicated.go, executors.go).

	// ReconcileEvery bounds how often reconciliation may be requested.
	ReconcileEvery time.Duration
	// Replicated, when set, operates the replicated store's cluster
	// (registry=etcd): /api/operate/store/… (replicated.go).
	Replicated ReplicatedStore
	// Executors, when set, takes the reports of executors in Kubernetes pods at POST
	// /executor/v1/report (executors.go).
	Executors Executors

	// Served as they are, beside the API: the console, artifacts, metrics, profiles.
	Web fs.FS // console assets; nil serves none
	// Artifacts, when set, is served without authentication at GET/HEAD /artifacts/… (the
	// executor binary agents fetch, content-addressed; see engine/mesos/artifacts).
	Artifacts http.Handler
	Metrics   prometheus.Gatherer // served at /metrics; nil serves none
	// MetricsLogin: /metrics asks for the API's credentials; an admin reads every series,
	// anyone else only those of the namespaces it may read (metricsaccess.go). False: it
	// asks for them whenever teams are configured (a users file or OIDC) or MetricsToken is
	// set, unless MetricsOpen; else it is served to anyone, as before.
	MetricsLogin bool
	// MetricsOpen: /metrics is served to anyone even with teams configured (the operator's
	// metrics_access=open).
	MetricsOpen bool
	// MetricsToken, when set, is a bearer token that reads every series of /metrics and
	// nothing else (metrics_token_file).
	MetricsToken string
	// Pprof serves Go's profiles at /debug/pprof/ to admins and turns on
	// block and mutex sampling (pprof.go); off: the routes do not exist.
	Pprof bool
}

// IdleExecutor is an app's executor up on an agent without a task of its
// app there: it holds its app's resources until it exits
// (executor_idle_timeout) and counts against its namespace.
type IdleExecutor struct {
	App      string  `json:"app"`
	AgentID  string  `json:"agentId"`
	CPUCount float64 `json:"cpuCount"`
	MemoryMB float64 `json:"memoryMB"`
}

// Server is the route table (routes.go) and the middleware every request passes:
// authentication and authorization (auth.go, access.go), the audit log (audit.go) and
// forwarding writes to the leader (forward.go). The handlers live in groups by concern
// (core.go lists them). It embeds the definitions' group: what is not HTTP, the
// definitions of Kubernetes objects (definitions.go).
type Server struct {
	*core
	*definitionHandlers
	// clientAddr is Options.ClientAddr.
	clientAddr func(*http.Request) string
	cluster    Cluster
	refresh    func(ctx context.Context, paths []string, all bool) error
	peerHTTP   http.RoundTripper
	audit      AuditLog

	apps      *appHandlers
	jobs      *jobHandlers
	schedules *scheduleHandlers
	runs      *runHandlers
	guide     *guideHandlers
	workflows *workflowHandlers
	backfills *backfillHandlers
	tenants   *tenancyHandlers
	operate   *operateHandlers
	console   *consoleHandlers
	hist      requestHistory // the request's namespace's (nsHistory); nil: history off
}

// New builds the gin engine with every route.
func New(o Options) http.Handler {
	h, _ := NewServer(o)
	return h
}

// NewServer is New, with the server for what is not HTTP: the
// definitions of Kubernetes objects (definitions.go).
func NewServer(o Options) (http.Handler, *Server) {
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = 1 << 20
	}
	if o.Location == nil {
		o.Location = time.Local
	}
	if o.ReconcileEvery <= 0 {
		o.ReconcileEvery = 10 * time.Second
	}
	if o.ClientAddr == nil {
		o.ClientAddr = RemoteAddr
	}
	if o.SlowRequest == 0 {
		o.SlowRequest = 2 * time.Second
	}
	s := newServer(o)
	return s.routes(o), s
}

// newServer builds the groups, each with what it uses of o.
func newServer(o Options) *Server {
	c := &core{reg: o.Registry, clock: o.Clock, log: o.Log, maxBody: o.MaxBodyBytes, auth: o.Auth}
	l := live{ops: o.Ops, eng: o.Engine}
	var hist requestHistory
	if o.History != nil {
		hist = nsHistory{o.History}
	}
	peer := o.PeerTransport
	if peer == nil {
		peer = &http.Transport{Proxy: nil, ResponseHeaderTimeout: time.Minute, IdleConnTimeout: time.Minute, MaxIdleConnsPerHost: 8}
	}
	s := &Server{core: c, clientAddr: o.ClientAddr, cluster: o.Cluster, refresh: o.Refresh, peerHTTP: peer, audit: o.Audit, hist: hist}
	s.apps = &appHandlers{core: c, live: l, noFiles: o.RejectFileAppURLs, pkgs: o.Packages, templates: o.PodTemplates}
	s.schedules = &scheduleHandlers{core: c, location: o.Location, cronJitter: o.CronJitter}
	s.jobs = &jobHandlers{core: c, appHandlers: s.apps, scheduleHandlers: s.schedules, live: l, secrets: o.Secrets,
		typicals: o.Typicals, committed: o.TriggerCommitted}
	s.runs = &runHandlers{core: c, live: l, hist: hist}
	s.guide = &guideHandlers{core: c, jobHandlers: s.jobs, hist: hist}
	s.workflows = &workflowHandlers{core: c, scheduleHandlers: s.schedules, hist: hist}
	s.backfills = &backfillHandlers{core: c, jobHandlers: s.jobs}
	s.tenants = &tenancyHandlers{core: c, secrets: o.Secrets, tenancy: o.TenantIsolation, nsSeries: o.NamespaceSeries,
		engineCaps: o.EngineCaps, idleExecs: o.IdleExecutors, nsChanged: o.NamespaceChanged}
	s.operate = &operateHandlers{core: c, live: l, replicated: o.Replicated, every: o.ReconcileEvery, lastReconcile: map[bool]time.Time{}}
	s.console = &consoleHandlers{core: c, clientAddr: o.ClientAddr}
	s.definitionHandlers = &definitionHandlers{core: c, guideHandlers: s.guide, workflowHandlers: s.workflows, hist: hist}
	return s
}

func serveWeb(r *gin.Engine, web fs.FS) {
	files := http.FileServer(http.FS(web))
	r.NoRoute(func(c *gin.Context) {
		p := c.Request.URL.Path
		if notConsole(p) {
			c.JSON(http.StatusNotFound, gin.H{"message": "no such endpoint: " + c.Request.Method + " " + p})
			return
		}
		if c.Request.Method != http.MethodGet && c.Request.Method != http.MethodHead {
			c.JSON(http.StatusMethodNotAllowed, gin.H{"message": "method not allowed"})
			return
		}
		if _, err := fs.Stat(web, trimSlash(p)); err != nil {
			c.Request.URL.Path = "/" // single-page app: unknown paths serve index.html
		}
		files.ServeHTTP(c.Writer, c.Request)
	})
}

// notConsole reports whether a path belongs to the API or to the files
// agents download: an unknown one is a 404, never the console's index.html
// (a mistyped package URL must not hand an agent an HTML page as its
// package).
func notConsole(p string) bool {
	for _, prefix := range []string{"/api/", "/packages/", "/artifacts/", "/executor/"} {
		if strings.HasPrefix(p, prefix) {
			return true
		}
	}
	return false
}

func trimSlash(p string) string {
	for len(p) > 0 && p[0] == '/' {
		p = p[1:]
	}
	if p == "" {
		return "."
	}
	return p
}

// logSlow logs every request that took at least limit: what an operator
// (or a test that timed out) looks for first when the console hangs. Wall
// time, not the injected clock: it measures the server, not the schedule.
func logSlow(log *slog.Logger, limit time.Duration) gin.HandlerFunc {
	return func(c *gin.Context) {
		start := time.Now()
		c.Next()
		if strings.HasPrefix(c.Request.URL.Path, "/debug/pprof/") {
			return // a profile takes as long as it was asked to
		}
		if took := time.Since(start); took >= limit {
			route := c.FullPath()
			if route == "" {
				route = c.Request.URL.Path
			}
			log.Warn("slow API request", "method", c.Request.Method, "route", route, "status", c.Writer.Status(),
				"took", took.Round(time.Millisecond))
		}
	}
}
