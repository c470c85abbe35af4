package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/history/view"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/queue"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/task"
	"github.com/gin-gonic/gin"
)

// guideHandlers serve /api/jobs, the guided job API (register from a few fields, start,
// pause, status).
type guideHandlers struct {
	*core
	*jobHandlers
	hist requestHistory // nil: history off
}

// The practice guide's calls (reference 002 §3.3.2, §7.2.2) as aliases of
// the native API: register with a jarPath, start, pause, resume, status.

// guideSuccess is the guide's answer to its control calls.
func guideSuccess(c *gin.Context, msg string, extra gin.H) {
	body := gin.H{"status": "success", "message": msg}
	for k, v := range extra {
		body[k] = v
	}
	c.JSON(http.StatusOK, body)
}

// guideJob is the guide's register body: a job (jobClass is its JobClass:
// the class each shard runs) plus jarPath (the app's package URL) and, to
// create the app, bootstrapScript (default: the jar itself, when jarPath
// names a .jar).
type guideJob struct {
	jobs.Config
	JarPath         string `json:"jarPath"`
	BootstrapScript string `json:"bootstrapScript"`
}

func (s *guideHandlers) guideRegister(c *gin.Context) {
	body, err := readBody(c, s.maxBody)
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	req := guideJob{Config: jobs.Default()}
	if err := decodeStrict(body, &req); err != nil {
		writeError(c, s.log, err)
		return
	}
	job, newApp, err := s.guidePlan(c, req)
	if err == nil && newApp != nil && s.templates != nil {
		err = s.templates.Check(c, nsOf(c), *newApp, &job)
	} else if err == nil {
		err = s.checkJobTemplate(c, job)
	}
	if err == nil {
		err = s.guideSave(c, job, newApp)
	}
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	msg := fmt.Sprintf("Job [%s] registered.", job.JobName)
	extra := gin.H{"job": job}
	if newApp != nil {
		msg += fmt.Sprintf(" App [%s] created from jarPath.", newApp.AppName)
		extra["app"] = newApp
	}
	guideSuccess(c, msg, extra)
}

// guidePlan checks everything before anything is written: the job, and
// either the app it names (which must agree with jarPath) or the app to
// create from jarPath and bootstrapScript.
func (s *guideHandlers) guidePlan(ctx context.Context, req guideJob) (jobs.Config, *app.Config, error) {
	job := req.Config
	if job.AppName == "" {
		job.AppName = job.JobName
	}
	if err := job.Validate(); err != nil {
		return job, nil, err
	}
	if err := job.CheckFires(s.clock.Now(), s.location); err != nil {
		return job, nil, err // as POST /api/job/register
	}
	if err := s.checkCalendar(ctx, job); err != nil {
		return job, nil, err
	}
	if err := validName("jobName", job.JobName); err != nil {
		return job, nil, err
	}
	if _, err := s.regIn(ctx).Config().Job(ctx, job.JobName); err == nil {
		return job, nil, fmt.Errorf("%w: Job '%s' already existed.", registry.ErrJobExists, job.JobName)
	} else if !errors.Is(err, registry.ErrJobNotFound) {
		return job, nil, err
	}
	existing, err := s.regIn(ctx).Config().App(ctx, job.AppName)
	switch {
	case err == nil:
		return job, nil, guideAppAgrees(existing, req)
	case !errors.Is(err, registry.ErrAppNotFound):
		return job, nil, err
	}
	return s.guideNewApp(job, req)
}

// guideAppAgrees refuses a jarPath or bootstrapScript that differs from
// the existing app's (the alias never changes an app behind its users).
func guideAppAgrees(a app.Config, req guideJob) error {
	if req.JarPath != "" && req.JarPath != a.AppURL {
		return fmt.Errorf("%w: app '%s' already exists with appURL %q; omit jarPath to use it, or change its package with PUT /api/app (or ejctl app publish)", ErrBadRequest, a.AppName, a.AppURL)
	}
	if req.BootstrapScript != "" && req.BootstrapScript != a.BootstrapScript {
		return fmt.Errorf("%w: app '%s' already exists with bootstrapScript %q; omit bootstrapScript to use it, or change it with PUT /api/app", ErrBadRequest, a.AppName, a.BootstrapScript)
	}
	return nil
}

func (s *guideHandlers) guideNewApp(job jobs.Config, req guideJob) (jobs.Config, *app.Config, error) {
	if req.JarPath == "" {
		return job, nil, fmt.Errorf("%w: app '%s' does not exist; send jarPath (the package URL) and bootstrapScript (the command the executor runs inside the package, e.g. \"bin/start.sh\") to create it, or publish the app first with POST /api/app and send its appName", ErrBadRequest, job.AppName)
	}
	if req.BootstrapScript == "" && jarName(req.JarPath) != "" {
		req.BootstrapScript = jarName(req.JarPath) // the executor runs the jar: its jobClass, or java -jar
	}
	if req.BootstrapScript == "" {
		return job, nil, fmt.Errorf("%w: jarPath names the package of the new app '%s', which also needs bootstrapScript: the command the executor runs inside the package (e.g. \"bin/start.sh\"); only a jarPath ending in .jar runs by itself, or publish the app first with POST /api/app and send its appName", ErrBadRequest, job.AppName)
	}
	a := app.Default()
	a.AppName, a.AppURL, a.BootstrapScript = job.AppName, req.JarPath, req.BootstrapScript
	if err := checkNewApp(a); err != nil {
		return job, nil, fmt.Errorf("%w (from jarPath and bootstrapScript)", err)
	}
	if err := s.checkAppURL(a); err != nil {
		return job, nil, err
	}
	return job, &a, nil
}

// jarName is the file name of a jar URL ("" when it names no .jar).
func jarName(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return ""
	}
	name := path.Base(p.Path)
	if !strings.HasSuffix(name, ".jar") || name == ".jar" {
		return ""
	}
	return name
}

// guideSave creates the app (when planned) and the job; a job refused at
// the last moment takes the app it created with it.
func (s *guideHandlers) guideSave(ctx context.Context, job jobs.Config, newApp *app.Config) error {
	if newApp != nil {
		if err := s.regIn(ctx).Config().AddApp(ctx, *newApp); err != nil {
			return err
		}
	}
	err := s.addJob(ctx, job)
	if err != nil && newApp != nil {
		if _, derr := s.regIn(ctx).Config().DeleteApp(ctx, newApp.AppName); derr != nil {
			s.log.Warn("api: remove the app created for a job that was refused", "app", newApp.AppName, "err", derr)
		}
	}
	return err
}

// guideStart triggers the job (body optional: {"jobParameter",
// "idempotencyKey"}, as POST /api/job/trigger).
func (s *guideHandlers) guideStart(c *gin.Context) {
	body, err := readBody(c, s.maxBody)
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	req := triggerRequest{JobName: c.Param("jobName")}
	if len(strings.TrimSpace(string(body))) > 0 {
		var opts struct {
			JobParameter   *string `json:"jobParameter"`
			IdempotencyKey string  `json:"idempotencyKey"`
		}
		if err := decodeStrict(body, &opts); err != nil {
			writeError(c, s.log, err)
			return
		}
		req.JobParameter, req.IdempotencyKey = opts.JobParameter, opts.IdempotencyKey
		if err := checkRunOptions(req); err != nil {
			writeError(c, s.log, err)
			return
		}
	}
	duplicate, err := s.queueRun(c, req)
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	msg := fmt.Sprintf("Job [%s] started.", req.JobName)
	if duplicate {
		msg = fmt.Sprintf("Job [%s] was already started with idempotency key %s.", req.JobName, req.IdempotencyKey)
	}
	guideSuccess(c, msg, gin.H{"queued": !duplicate, "duplicate": duplicate})
}

// guidePause disables (pause) or enables (resume) the job.
func (s *guideHandlers) guidePause(disable bool) gin.HandlerFunc {
	return func(c *gin.Context) {
		name, err := s.checkExists(c, "job")
		if err == nil {
			err = s.regIn(c).Config().SetDisabled(c, "job", name, disable, s.clock.Now())
		}
		if err != nil {
			writeError(c, s.log, err)
			return
		}
		verb := "paused"
		if !disable {
			verb = "resumed"
			if s.ops != nil {
				s.ops.Wake()
			}
		}
		guideSuccess(c, fmt.Sprintf("Job [%s] %s.", name, verb), nil)
	}
}

// Job states of GET /api/jobs/{jobName}/status.
const (
	StatePaused  = "PAUSED"  // the job or its app is disabled
	StateRunning = "RUNNING" // a task of the job runs
	StateReady   = "READY"   // enabled, waiting for its next fire or trigger (or queued)
)

type guideInstance struct {
	TaskID       string     `json:"taskId"`
	Host         string     `json:"host"`
	Status       task.State `json:"status"`
	ShardingItem int        `json:"shardingItem"`
	LaunchedAt   time.Time  `json:"launchedAt"`
}

type guideJobStatus struct {
	JobName               string          `json:"jobName"`
	State                 string          `json:"state"`
	ShardingTotalCount    int             `json:"shardingTotalCount"`
	Instances             []guideInstance `json:"instances"`
	RegisteredAt          *time.Time      `json:"registeredAt,omitempty"` // history counts from here
	LastTriggerTime       *time.Time      `json:"lastTriggerTime"`
	NextFireTime          *time.Time      `json:"nextFireTime,omitempty"`
	PendingExecutions     int             `json:"pendingExecutions"`
	FailoverShards        int             `json:"failoverShards"`
	ConsecutiveFailedRuns int             `json:"consecutiveFailedRuns"`
	Pause                 *task.Pause     `json:"pause,omitempty"`
	Waiting               *waitView       `json:"waiting,omitempty"` // why its pending execution has not launched
}

func (s *guideHandlers) guideStatus(c *gin.Context) {
	job, err := s.regIn(c).Config().Job(c, c.Param("jobName"))
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	st, err := s.jobStatus(c, job)
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	c.JSON(http.StatusOK, st)
}

func (s *guideHandlers) jobStatus(ctx context.Context, job jobs.Config) (guideJobStatus, error) {
	st := guideJobStatus{JobName: job.JobName, State: StateReady, ShardingTotalCount: job.ShardingTotalCount, Instances: []guideInstance{}}
	running, err := s.regIn(ctx).Work().RunningOf(ctx, job.JobName)
	if err != nil {
		return st, err
	}
	registered, err := s.regIn(ctx).Config().JobRegisteredAt(ctx, job.JobName)
	if err != nil {
		return st, err
	}
	if !registered.IsZero() {
		st.RegisteredAt = &registered
	}
	var last time.Time
	for item, rt := range running {
		st.Instances = append(st.Instances, guideInstance{rt.TaskID, rt.Hostname, rt.State, item, rt.LaunchedAt})
		if rt.LaunchedAt.After(last) {
			last = rt.LaunchedAt
		}
	}
	sort.Slice(st.Instances, func(i, j int) bool { return st.Instances[i].ShardingItem < st.Instances[j].ShardingItem })
	if len(running) > 0 {
		st.State = StateRunning
	}
	if t := s.lastStart(ctx, job.JobName, registered); t.After(last) {
		last = t
	}
	if !last.IsZero() {
		st.LastTriggerTime = &last
	}
	if err := s.queueCounts(ctx, &st); err != nil {
		return st, err
	}
	if err := s.pauseState(ctx, job, &st); err != nil {
		return st, err
	}
	if st.State != StatePaused {
		st.NextFireTime = s.nextFire(ctx, job, s.clock.Now())
	}
	return st, nil
}

// lastStart is the start of the job's latest execution in history since
// it was registered (zero without history).
func (s *guideHandlers) lastStart(ctx context.Context, job string, registered time.Time) time.Time {
	if s.hist == nil {
		return time.Time{}
	}
	page, err := s.hist.Executions(ctx, view.Query{Page: 1, PerPage: 1, Sort: "startTime", Order: "desc", Start: historyFrom(registered),
		Filters: map[string]string{"jobName": job}})
	if err != nil || len(page.Rows) == 0 || page.Rows[0].StartTime == nil {
		return time.Time{}
	}
	return page.Rows[0].StartTime.UTC()
}

func (s *guideHandlers) queueCounts(ctx context.Context, st *guideJobStatus) error {
	q, err := s.regIn(ctx).Work().ReadyQueue(ctx)
	if err != nil {
		return err
	}
	for _, rd := range q {
		if rd.Job == st.JobName {
			st.PendingExecutions = rd.Count
		}
	}
	if st.PendingExecutions > 0 {
		w, ok, err := s.regIn(ctx).Work().WaitingOf(ctx, queue.WaitKey(false, st.JobName, 0))
		if err != nil {
			return err
		}
		if ok {
			v := s.waitView(ctx, w)
			st.Waiting = &v
		}
	}
	fo, err := s.regIn(ctx).Work().FailoverQueue(ctx)
	if err != nil {
		return err
	}
	for _, f := range fo {
		if f.Job == st.JobName {
			st.FailoverShards++
		}
	}
	return nil
}

func (s *guideHandlers) pauseState(ctx context.Context, job jobs.Config, st *guideJobStatus) error {
	rs, err := s.regIn(ctx).Work().RunStateOf(ctx, job.JobName)
	if err != nil {
		return err
	}
	st.ConsecutiveFailedRuns = rs.Consecutive
	for _, k := range []struct{ kind, name string }{{"job", job.JobName}, {"app", job.AppName}} {
		if k.name == "" { // an HTTP job without an app
			continue
		}
		d, err := s.regIn(ctx).Config().IsDisabled(ctx, k.kind, k.name)
		if err != nil {
			return err
		}
		if d {
			st.State = StatePaused
		}
	}
	p, ok, err := s.regIn(ctx).Work().PauseOf(ctx, job.JobName)
	if ok {
		st.Pause = &p
	}
	return err
}

// nextFire is the job's next fire after now (nil without a cron or when
// its plan cannot be made), as the producer fires it (jobPlan).
func (s *guideHandlers) nextFire(ctx context.Context, job jobs.Config, now time.Time) *time.Time {
	p, loc, err := s.jobPlan(ctx, job)
	if err != nil || p == nil {
		return nil
	}
	t := p.Next(now, loc)
	if t.IsZero() {
		return nil
	}
	t = t.UTC()
	return &t
}

// historyFrom is where a job's own history starts: its registration,
// floored to the second (a database may keep start times to the second
// only). Zero (not recorded): all of it.
func historyFrom(registered time.Time) time.Time {
	if registered.IsZero() {
		return registered
	}
	return registered.Truncate(time.Second)
}
