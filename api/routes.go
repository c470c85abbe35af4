package api

import (
	"net/http"
	"net/http/pprof"

	"github.com/gin-gonic/gin"
)

// routes builds the gin engine: the middleware, then every route, each to its group's
// handler (core.go lists the groups and their files).
func (s *Server) routes(o Options) *gin.Engine {
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	r.ContextWithFallback = true // handlers pass c as the context: its values are the request's
	r.Use(gin.Recovery(), urgentWrites)
	if o.Limits.SlowRequest > 0 {
		r.Use(logSlow(o.Log, o.Limits.SlowRequest))
	}
	r.HandleMethodNotAllowed = true
	r.RedirectTrailingSlash = false // JSON 404s, never HTML redirects
	r.RedirectFixedPath = false
	r.NoRoute(func(c *gin.Context) {
		c.JSON(http.StatusNotFound, gin.H{"message": "no such endpoint: " + c.Request.Method + " " + c.Request.URL.Path})
	})
	r.NoMethod(func(c *gin.Context) {
		c.JSON(http.StatusMethodNotAllowed, gin.H{"message": "method " + c.Request.Method + " is not allowed on " + c.Request.URL.Path})
	})
	// auditMiddleware wraps auth, so refused writes are recorded too; a
	// write forwarded to the leader is recorded there, not here.
	a := r.Group("/api", s.auditMiddleware, s.authMiddleware, s.forward, s.checkNameParams, s.checkQuery)
	a.GET("/openapi.json", serveOpenAPI)
	a.GET("/audit", s.searchAudit)
	a.POST("/login", s.console.login)
	a.POST("/logout", s.console.logout)
	a.GET("/whoami", s.console.whoami)
	a.GET("/oidc", s.console.oidcInfo)
	a.GET("/oidc/login", s.console.oidcLogin)
	a.GET("/oidc/callback", s.console.oidcCallback)
	s.appRoutes(a.Group("/app"))
	s.jobRoutes(a.Group("/job"))
	s.guideRoutes(a.Group("/jobs"))
	s.historyRoutes(a.Group("/job"))
	s.operateRoutes(a.Group("/operate"))
	s.replicatedRoutes(a.Group("/operate/store"))
	s.cronRoutes(a.Group("/cron"))
	s.workflowRoutes(a.Group("/workflow"))
	s.namespaceRoutes(a.Group("/namespaces"))
	s.registryRoutes(a.Group("/registry"))
	if o.Metrics.Gatherer != nil {
		r.GET("/metrics", s.console.serveMetrics(o.Metrics.Gatherer, o.Metrics.Login || !o.Metrics.Open && (s.auth.Teams() || o.Metrics.Token != ""), o.Metrics.Token))
	}
	r.GET("/healthz", func(c *gin.Context) { c.JSON(http.StatusOK, gin.H{"status": "ok"}) })
	if o.Operate.Pprof {
		EnableProfiling()
		s.pprofRoutes(r)
	}
	if o.Files.Artifacts != nil {
		r.GET("/artifacts/:kind/:sha256/:file", gin.WrapH(o.Files.Artifacts))
		r.HEAD("/artifacts/:kind/:sha256/:file", gin.WrapH(o.Files.Artifacts))
	}
	if o.Operate.Executors != nil {
		s.executorRoutes(r, o.Operate.Executors)
	}
	if o.Tenancy.Secrets != nil { // secretfetch.go: a task's executor fetches its job's secrets
		r.POST(ExecutorSecretsPath, s.forward, s.tenants.fetchSecrets)
	}
	if o.Apps.Packages != nil {
		// The handler reads the same three segments from the path itself
		// (packages.Links); explicit params keep the route documented.
		r.GET("/packages/:sha256/:token/:filename", gin.WrapH(o.Apps.Packages))
		r.HEAD("/packages/:sha256/:token/:filename", gin.WrapH(o.Apps.Packages))
	}
	if o.Files.Web != nil {
		serveWeb(r, o.Files.Web)
	}
	return r
}

func (s *Server) appRoutes(g *gin.RouterGroup) {
	g.POST("", s.apps.addApp)
	g.PUT("", s.apps.updateApp)
	g.GET("", s.apps.listApps) // 2.x form
	g.GET("/list", s.apps.listApps)
	g.GET("/:appName", s.apps.getApp)
	g.DELETE("/:appName", s.apps.deleteApp)
	g.GET("/:appName/disable", s.apps.isDisabled("app"))
	g.POST("/:appName/disable", s.apps.setDisabled("app", true))
	g.POST("/:appName/enable", s.apps.setDisabled("app", false))
	g.PUT("/:appName/package", s.apps.uploadPackage)
}

func (s *Server) jobRoutes(g *gin.RouterGroup) {
	g.POST("/register", s.jobs.registerJob)
	g.PUT("/update", s.jobs.updateJob)
	g.DELETE("/deregister", s.jobs.deregisterBody)
	g.DELETE("/:jobName/deregister", s.jobs.deregisterPath)
	g.GET("/:jobName/disable", s.apps.isDisabled("job"))
	g.POST("/:jobName/disable", s.apps.setDisabled("job", true))
	g.POST("/:jobName/enable", s.apps.setDisabled("job", false))
	g.POST("/trigger", s.jobs.trigger)
	g.POST("/:jobName/kill", s.runs.killRun)
	g.GET("/trigger/:key", s.runs.triggerRun)
	g.GET("/jobs", s.jobs.listJobs)
	g.GET("/jobs/:jobName", s.jobs.getJob)
	g.GET("/tasks/running", s.jobs.runningTasks)
	g.GET("/tasks/ready", s.jobs.readyTasks)
	g.GET("/tasks/failover", s.jobs.failoverTasks)
	g.GET("/deadlines", s.runs.missedDeadlines)
	g.POST("/backfills", s.backfills.startBackfill)
	g.GET("/backfills", s.backfills.listBackfills)
	g.GET("/backfills/:id", s.backfills.getBackfill)
	g.POST("/backfills/:id/:action", s.backfills.controlBackfill)
	g.GET("/tasks/:taskId", s.runs.taskResult)
	g.GET("/tasks/:taskId/files", s.runs.taskFiles)
	g.GET("/tasks/:taskId/files/download", s.runs.taskFileDownload)
	g.GET("/logs/:taskId", s.runs.taskLog)
	g.GET("/lastResults", s.runs.lastResults)
}

func (s *Server) guideRoutes(g *gin.RouterGroup) {
	g.POST("/register", s.guide.guideRegister)
	g.POST("/:jobName/start", s.guide.guideStart)
	g.POST("/:jobName/pause", s.guide.guidePause(true))
	g.POST("/:jobName/resume", s.guide.guidePause(false))
	g.GET("/:jobName/status", s.guide.guideStatus)
	g.GET("/:jobName/durations", s.runs.jobDurations)
	g.GET("/:jobName/next", s.schedules.jobNext)
}

func (s *Server) historyRoutes(g *gin.RouterGroup) {
	hs := &historyHandlers{s: s.core, h: s.hist}
	g.GET("/events/executions", hs.executions)
	g.GET("/events/statusTraces", hs.statusTraces)
	g.GET("/statistics/tasks/results", hs.taskResults)
	g.GET("/statistics/tasks/results/:period", hs.taskResultSummary)
	g.GET("/statistics/tasks/running", hs.running(requestHistory.TaskRunning))
	g.GET("/statistics/jobs/running", hs.running(requestHistory.JobRunning))
	g.GET("/statistics/jobs/executionType", hs.executionType)
	g.GET("/statistics/jobs/type", hs.jobTypes)
	g.GET("/statistics/jobs/register", hs.registered)
}

func (s *Server) operateRoutes(g *gin.RouterGroup) {
	g.POST("/reconcile/explicit", s.operate.reconcile(true))
	g.POST("/reconcile/implicit", s.operate.reconcile(false))
	g.GET("/sandbox", s.operate.sandbox)
	g.GET("/cluster", s.operate.clusterView)
	s.clusters.routes(g)
	g.POST("/secrets/reseal", s.tenants.resealSecrets)
}

func (s *Server) replicatedRoutes(g *gin.RouterGroup) {
	g.GET("/members", s.operate.storeMembers)
	g.POST("/members", s.operate.addStoreMember)
	g.DELETE("/members/:member", s.operate.removeStoreMember)
	g.GET("/backup", s.operate.backupStore)
	g.POST("/restore", s.operate.restoreStore)
}

func (s *Server) cronRoutes(g *gin.RouterGroup) {
	g.GET("/next", s.schedules.cronNext)
}

// Workflows: /api/workflow (docs/workflows.md). The handlers validate and
// write configs and new runs, and write cancel and retry requests into a
// run; the leader's engine (flowengine) advances runs.
func (s *Server) workflowRoutes(g *gin.RouterGroup) {
	g.POST("", s.workflows.registerWorkflow)
	g.PUT("", s.workflows.updateWorkflow)
	g.GET("/list", s.workflows.listWorkflows)
	g.GET("/events/runs", s.workflows.workflowRunEvents)
	g.GET("/events/nodes", s.workflows.workflowNodeEvents)
	g.GET("/:workflowName", s.workflows.getWorkflow)
	g.DELETE("/:workflowName", s.workflows.deleteWorkflow)
	g.POST("/:workflowName/disable", s.workflows.setWorkflowDisabled(true))
	g.POST("/:workflowName/enable", s.workflows.setWorkflowDisabled(false))
	g.POST("/:workflowName/trigger", s.workflows.triggerWorkflow)
	g.GET("/:workflowName/runs", s.workflows.listWorkflowRuns)
	g.GET("/:workflowName/runs/:runId", s.workflows.getWorkflowRun)
	g.POST("/:workflowName/runs/:runId/cancel", s.workflows.cancelWorkflowRun)
	g.POST("/:workflowName/runs/:runId/retry", s.workflows.retryWorkflowRun)
}

// The namespaces' admin API (docs/tenancy.md): the admin creates, changes
// and deletes namespaces; anyone lists those it has a role in; an editor
// manages its namespace's API tokens.
func (s *Server) namespaceRoutes(g *gin.RouterGroup) {
	g.GET("", s.tenants.listNamespaces)
	g.GET("/:name", s.tenants.getNamespace)
	g.PUT("/:name", s.tenants.putNamespace)
	g.DELETE("/:name", s.tenants.deleteNamespace)
	g.GET("/:name/usage", s.tenants.namespaceUsage)
	g.GET("/:name/tokens", s.tenants.listTokens)
	g.POST("/:name/tokens", s.tenants.createToken)
	g.DELETE("/:name/tokens/:id", s.tenants.revokeToken)
	s.secretRoutes(g)
	s.calendarRoutes(g)
}

func (s *Server) secretRoutes(g *gin.RouterGroup) {
	g.GET("/:name/secrets", s.tenants.listSecrets)
	g.GET("/:name/secrets/:secret", s.tenants.getSecret)
	g.PUT("/:name/secrets/:secret", s.tenants.putSecret)
	g.DELETE("/:name/secrets/:secret", s.tenants.deleteSecret)
}

func (s *Server) calendarRoutes(g *gin.RouterGroup) {
	g.GET("/:name/calendars", s.schedules.listCalendars)
	g.GET("/:name/calendars/:calendar", s.schedules.getCalendar)
	g.PUT("/:name/calendars/:calendar", s.schedules.putCalendar)
	g.DELETE("/:name/calendars/:calendar", s.schedules.deleteCalendar)
}

func (s *Server) registryRoutes(g *gin.RouterGroup) {
	g.GET("/damaged", s.operate.listDamaged)
	g.DELETE("/damaged", s.operate.removeDamaged)
	g.PUT("/damaged", s.operate.repairDamaged)
}

func (s *Server) pprofRoutes(r *gin.Engine) {
	g := r.Group("/debug/pprof", s.console.adminCaller)
	g.GET("/", gin.WrapF(pprof.Index))
	g.GET("/:profile", s.console.serveProfile)
	g.POST("/symbol", gin.WrapF(pprof.Symbol)) // go tool pprof looks symbols up with POST
}

// executorRoutes serves executor reports: authenticated by the task's token (never by a
// user's credentials), forwarded to the leader by a standby like any write.
func (s *Server) executorRoutes(r *gin.Engine, ex Executors) {
	r.POST(ExecutorReportPath, s.forward, func(c *gin.Context) { s.operate.executorReport(c, ex) })
}
