package api

import (
	"context"
	"io/fs"
	"log/slog"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/engine"
	"github.com/gin-gonic/gin"
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
	clusters  *clusterHandlers
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
	if o.Limits.MaxBodyBytes <= 0 {
		o.Limits.MaxBodyBytes = 1 << 20
	}
	if o.Schedules.Location == nil {
		o.Schedules.Location = time.Local
	}
	if o.Operate.ReconcileEvery <= 0 {
		o.Operate.ReconcileEvery = 10 * time.Second
	}
	if o.Forwarding.ClientAddr == nil {
		o.Forwarding.ClientAddr = RemoteAddr
	}
	if o.Limits.SlowRequest == 0 {
		o.Limits.SlowRequest = 2 * time.Second
	}
	s := newServer(o)
	return s.routes(o), s
}

// newServer builds the groups, each with what it uses of o.
func newServer(o Options) *Server {
	c := &core{reg: o.Registry, clock: o.Clock, log: o.Log, maxBody: o.Limits.MaxBodyBytes, auth: o.Auth}
	l := live{ops: o.Live.Ops, eng: o.Live.Engine}
	var hist requestHistory
	if o.Live.History != nil {
		hist = nsHistory{o.Live.History}
	}
	peer := o.Forwarding.PeerTransport
	if peer == nil {
		peer = &http.Transport{Proxy: nil, ResponseHeaderTimeout: time.Minute, IdleConnTimeout: time.Minute, MaxIdleConnsPerHost: 8}
	}
	s := &Server{core: c, clientAddr: o.Forwarding.ClientAddr, cluster: o.Forwarding.Cluster, refresh: o.Forwarding.Refresh, peerHTTP: peer, audit: o.Audit, hist: hist}
	s.apps = &appHandlers{core: c, live: l, noFiles: o.Apps.RejectFileAppURLs, tenancy: o.Tenancy.TenantIsolation, pkgs: o.Apps.Packages, templates: o.Apps.PodTemplates}
	s.schedules = &scheduleHandlers{core: c, location: o.Schedules.Location, cronJitter: o.Schedules.CronJitter}
	s.jobs = &jobHandlers{core: c, appHandlers: s.apps, scheduleHandlers: s.schedules, live: l, secrets: o.Tenancy.Secrets,
		typicals: o.Jobs.Typicals, committed: o.Jobs.TriggerCommitted}
	s.runs = &runHandlers{core: c, live: l, hist: hist}
	s.guide = &guideHandlers{core: c, jobHandlers: s.jobs, hist: hist}
	s.workflows = &workflowHandlers{core: c, scheduleHandlers: s.schedules, hist: hist}
	s.backfills = &backfillHandlers{core: c, jobHandlers: s.jobs}
	s.tenants = &tenancyHandlers{core: c, secrets: o.Tenancy.Secrets, tenancy: o.Tenancy.TenantIsolation, nsSeries: o.Tenancy.NamespaceSeries,
		engineCaps: o.Tenancy.EngineCaps, idleExecs: o.Tenancy.IdleExecutors, nsChanged: o.Tenancy.NamespaceChanged,
		binding: o.Tenancy.ExecutorBinding, clusters: o.Operate.Clusters}
	s.tenants.auditFetch = s.auditSecretFetch
	s.operate = &operateHandlers{core: c, live: l, replicated: o.Operate.Replicated, every: o.Operate.ReconcileEvery, lastReconcile: map[bool]time.Time{},
		unnamedReports: make(chan struct{}, maxUnnamedReports)}
	s.clusters = &clusterHandlers{core: c, live: l, clusters: o.Operate.Clusters, health: o.Operate.ClusterHealth}
	s.console = &consoleHandlers{core: c, clientAddr: o.Forwarding.ClientAddr}
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
			if path.Ext(p) != "" { // a missing asset (/x.js): a 404, not index.html as script
				c.String(http.StatusNotFound, "no such file: %s\n", p)
				return
			}
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
