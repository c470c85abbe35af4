package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/ejcloud/elasticjob/deadline"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/queue"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/secrets"
	"github.com/ejcloud/elasticjob/task"
	"github.com/gin-gonic/gin"
)

// jobHandlers serve /api/job's configuration and queues: register, update,
// deregister, trigger, and the running, ready and failover tasks; registration checks a
// job's app, calendar, secrets, pod template and fit.
type jobHandlers struct {
	*core
	*appHandlers
	*scheduleHandlers
	live
	secrets   *secrets.Keyring                              // Options.Tenancy.Secrets
	typicals  *deadline.TypicalCache                        // Options.Jobs.Typicals
	committed func(job string, queued, committed time.Time) // Options.Jobs.TriggerCommitted
}

func (s *jobHandlers) registerJob(c *gin.Context) {
	body, err := readBody(c, s.maxBody)
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	s.saveJob(c, body, jobs.Default(), func(cfg jobs.Config) error {
		return s.checkNewJob(c, cfg, headerWarning(c))
	}, s.addJob)
}

// checkNewJob is a job's registration's check: checkJob and its name.
func (s *jobHandlers) checkNewJob(ctx context.Context, cfg jobs.Config, warn func(string)) error {
	return s.checkJobAs(ctx, cfg, warn, true)
}

// checkJob is a job's update's check.
func (s *jobHandlers) checkJob(ctx context.Context, cfg jobs.Config, warn func(string)) error {
	return s.checkJobAs(ctx, cfg, warn, false)
}

// checkJobAs checks a job's config as it is registered or updated: its
// fields, its cron's fires, its secrets, that it fits the cluster and its
// podTemplate; warn gets what is accepted with a warning.
func (s *jobHandlers) checkJobAs(ctx context.Context, cfg jobs.Config, warn func(string), isNew bool) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	if err := cfg.CheckFires(s.clock.Now(), s.location); err != nil {
		return err
	}
	if err := s.checkCalendar(ctx, cfg); err != nil {
		return err
	}
	if isNew {
		if err := validName("jobName", cfg.JobName); err != nil {
			return err
		}
	}
	if err := s.checkSecrets(ctx, cfg); err != nil {
		return err
	}
	if err := s.checkFits(ctx, cfg, warn); err != nil {
		return err
	}
	return s.checkJobTemplate(ctx, cfg)
}

// headerWarning sends a warning as a Warning header of the answer.
func headerWarning(c *gin.Context) func(string) {
	return func(m string) { c.Header("Warning", fmt.Sprintf(`299 elasticjob %q`, m)) }
}

// updateJob merges the body onto the current config (absent fields keep
// their values; a "props" object replaces the props whole), then
// reschedules: the leader kills the running tasks and clears the queues.
func (s *jobHandlers) updateJob(c *gin.Context) {
	body, err := readBody(c, s.maxBody)
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	var probe map[string]json.RawMessage
	if err := decodeLoose(body, &probe); err != nil {
		writeError(c, s.log, err)
		return
	}
	var name string
	_ = json.Unmarshal(probe["jobName"], &name)
	if name == "" {
		writeError(c, s.log, fmt.Errorf("%w: jobName is required", jobs.ErrInvalid))
		return
	}
	if err := validName("jobName", name); err != nil { // before it becomes a store path
		writeError(c, s.log, err)
		return
	}
	if err := s.checkNotOwned(c, DefJob, name); err != nil {
		writeError(c, s.log, err)
		return
	}
	cfg, err := s.regIn(c).Config().Job(c, name)
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	if _, ok := probe["props"]; ok {
		cfg.Props = map[string]string{}
	}
	if _, ok := probe["secrets"]; ok { // a new list replaces the old one whole
		cfg.Secrets = nil
	}
	s.saveJob(c, body, cfg, func(cfg jobs.Config) error {
		return s.checkJob(c, cfg, headerWarning(c))
	}, func(ctx context.Context, cfg jobs.Config) error {
		return s.regOf(c).Config().UpdateJobAt(ctx, cfg, s.clock.Now()) // the catch-up counts from here
	})
}

func (s *jobHandlers) deregisterBody(c *gin.Context) {
	body, err := readBody(c, s.maxBody)
	if err == nil {
		var name string
		if name, err = nameBody(body, "jobName"); err == nil {
			err = s.deregister(c, name)
		}
	}
	if err != nil {
		writeError(c, s.log, err)
	}
}

func (s *jobHandlers) deregisterPath(c *gin.Context) {
	if err := s.deregister(c, c.Param("jobName")); err != nil {
		writeError(c, s.log, err)
	}
}

// deregister deletes a job, refusing (409) when workflows run it unless
// ?force=true (inuse.go).
func (s *jobHandlers) deregister(c *gin.Context, name string) error {
	force, err := forceParam(c)
	if err != nil {
		return err
	}
	if _, err := s.regIn(c).Config().Job(c, name); err != nil && !errors.Is(err, registry.ErrDamaged) {
		return err // (a job whose stored config does not decode is deleted too)
	}
	if err := s.checkNotOwned(c, DefJob, name); err != nil {
		return err
	}
	broken, err := s.checkUnused(c, force, "job '"+name+"'", []string{name})
	if err != nil {
		return err
	}
	if err := s.regIn(c).Config().DeleteJob(c, name); err != nil {
		return err
	}
	deleted(c, "Job '"+name+"'", broken)
	return nil
}

// triggerRequest is the JSON form of a trigger.
type triggerRequest struct {
	JobName        string  `json:"jobName"`
	JobParameter   *string `json:"jobParameter"`
	IdempotencyKey string  `json:"idempotencyKey"`
}

// trigger queues one execution of a transient job. The body is the job
// name (plain text or a JSON string, the original's form: 204), or a JSON
// object {"jobName", "jobParameter", "idempotencyKey"}: the parameter
// overrides the job's jobParameter for that execution, and a key seen in
// the last 24 h queues nothing, so a retried call never runs twice (200
// with {"queued", "duplicate"}).
func (s *jobHandlers) trigger(c *gin.Context) {
	body, err := readBody(c, s.maxBody)
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	req, object, err := parseTrigger(body)
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	duplicate, err := s.queueRun(c, req)
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	if !object || (req.JobParameter == nil && req.IdempotencyKey == "") {
		c.Status(http.StatusNoContent) // the original's reply
		return
	}
	c.JSON(http.StatusOK, gin.H{"jobName": req.JobName, "queued": !duplicate, "duplicate": duplicate})
}

// queueRun queues one execution of a transient job (see trigger) and
// wakes the launcher; it reports a repeated idempotency key.
func (s *jobHandlers) queueRun(c *gin.Context, req triggerRequest) (bool, error) {
	cfg, err := s.triggerable(c, req.JobName)
	if err != nil {
		return false, err
	}
	now := s.clock.Now()
	duplicate, queued := false, false
	by := triggeredBy(c)
	if req.JobParameter != nil || req.IdempotencyKey != "" {
		run := queue.PendingRun{IdempotencyKey: req.IdempotencyKey, JobParameter: cfg.JobParameter, By: by}
		if req.JobParameter != nil {
			run.JobParameter = *req.JobParameter
		}
		duplicate, err = s.regIn(c).Work().TriggerRun(c, req.JobName, run, now)
		queued = !duplicate
	} else {
		// false: the trigger collapsed into an execution already waiting
		// (misfire false), or the job's queue is full; nothing was written.
		queued, err = s.regIn(c).Work().TriggerBy(c, req.JobName, cfg.Misfire, now, by)
	}
	if err != nil || !queued {
		// Nothing committed: no commit stage to observe, nothing new for
		// the launcher (under a trigger stream faster than the job runs,
		// most triggers are these).
		return duplicate, err
	}
	if s.committed != nil {
		s.committed(keyOf(c, req.JobName), now, s.clock.Now())
	}
	if s.ops != nil {
		s.ops.Wake()
	}
	return false, nil
}

// ClientHeader names the client a request comes from, for where a run
// came from (triggeredBy): the console sends "console", ejctl "ejctl";
// without it a trigger is the API's.
const ClientHeader = "X-EJ-Client"

// triggeredBy is who triggers a run: "api:{user}", "console:{user}" or
// "ejctl:{user}" ("anonymous" with open access).
func triggeredBy(c *gin.Context) string {
	via := "api"
	switch strings.ToLower(strings.TrimSpace(c.GetHeader(ClientHeader))) {
	case "console":
		via = "console"
	case "ejctl":
		via = "ejctl"
	}
	user := c.GetString(ctxUser)
	if user == "" {
		user = "anonymous"
	}
	return via + ":" + user
}

var idempotencyKeyRE = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,128}$`)

// maxJobParameter bounds a trigger's jobParameter, in bytes.
const maxJobParameter = 4096

func parseTrigger(body []byte) (triggerRequest, bool, error) {
	var req triggerRequest
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		name, err := nameBody(body, "jobName")
		req.JobName = name
		return req, false, err
	}
	if err := decodeStrict(body, &req); err != nil {
		return req, true, err
	}
	if req.JobName == "" {
		return req, true, fmt.Errorf("%w: the JSON body must hold \"jobName\"", ErrBadRequest)
	}
	if err := validName("jobName", req.JobName); err != nil {
		return req, true, err
	}
	return req, true, checkRunOptions(req)
}

// checkRunOptions checks a trigger's idempotencyKey and jobParameter.
func checkRunOptions(req triggerRequest) error {
	if req.IdempotencyKey != "" && (!idempotencyKeyRE.MatchString(req.IdempotencyKey) || req.IdempotencyKey == "." || req.IdempotencyKey == "..") {
		// "." and ".." would name no key of the store (its path /state/trigger_keys/.).
		return fmt.Errorf("%w: idempotencyKey must be 1-128 characters of letters, digits, '.', '_', ':' or '-', other than . and ..", ErrBadRequest)
	}
	if req.JobParameter != nil && len(*req.JobParameter) > maxJobParameter {
		return fmt.Errorf("%w: jobParameter must be at most %d bytes", ErrBadRequest, maxJobParameter)
	}
	return nil
}

// triggerable checks that a job may run now (registry.CanRun) and is
// TRANSIENT.
func (s *jobHandlers) triggerable(c *gin.Context, name string) (jobs.Config, error) {
	cfg, why, err := s.regIn(c).Config().CanRun(c, name)
	switch {
	case err != nil:
		return cfg, err
	case why == jobs.JobMissing:
		_, err := s.regIn(c).Config().Job(c, name) // its not-found error, as every other endpoint words it
		return cfg, err
	case cfg.JobExecutionType != jobs.Transient:
		return cfg, fmt.Errorf("%w: Job '%s' is a DAEMON job; only TRANSIENT jobs can be triggered.", ErrBadRequest, name)
	case why != jobs.Runnable:
		return cfg, fmt.Errorf("%w: %s; enable or publish it first.", ErrConflict, why.Why(name, cfg.AppName))
	}
	return cfg, nil
}

// jobRow is a job config plus its disable flag, for lists, and why
// pauseAfterFailures paused it.
type jobRow struct {
	jobs.Config
	Disabled bool
	Pause    *task.Pause
}

// MarshalJSON keeps the config's own encoding and adds "disabled" (and
// "pause" when pauseAfterFailures disabled the job).
func (r jobRow) MarshalJSON() ([]byte, error) {
	b, err := withDisabled(r.Config, r.Disabled)
	if err != nil || r.Pause == nil {
		return b, err
	}
	p, err := json.Marshal(r.Pause)
	if err != nil {
		return nil, err
	}
	return append(append(append(b[:len(b)-1:len(b)-1], `,"pause":`...), p...), '}'), nil
}

func (s *jobHandlers) listJobs(c *gin.Context) {
	all, err := s.regIn(c).Config().Jobs(c)
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	pauses, err := s.regIn(c).Work().Pauses(c)
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	s.listWithDisabled(c, "job", len(all), func(i int, off map[string]bool) any {
		row := jobRow{Config: all[i], Disabled: off[all[i].JobName]}
		if p, ok := pauses[all[i].JobName]; ok {
			row.Pause = &p
		}
		return row
	})
}

// withDisabled encodes v (a JSON object) with a "disabled" member added.
func withDisabled(v any, disabled bool) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil || len(b) < 2 {
		return b, err
	}
	return append(b[:len(b)-1:len(b)-1], fmt.Sprintf(`,"disabled":%t}`, disabled)...), nil
}

func (s *jobHandlers) getJob(c *gin.Context) {
	cfg, err := s.regIn(c).Config().Job(c, c.Param("jobName"))
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	c.JSON(http.StatusOK, cfg)
}

type runningView struct {
	JobName      string     `json:"jobName"`
	ShardingItem int        `json:"shardingItem"`
	TaskID       string     `json:"taskId"`
	AgentID      string     `json:"agentId"`
	Hostname     string     `json:"hostname"`
	State        task.State `json:"state"`
	Busy         bool       `json:"busy"` // a DAEMON task inside a run
	LaunchedAt   time.Time  `json:"launchedAt"`
	RunKey       string     `json:"runKey,omitempty"` // the idempotency key of the trigger it serves
	// Retiring: the old task of a DAEMON shard's overlapping move (registry.Retiring),
	// listed beside the shard's new one until that one runs.
	Retiring      bool       `json:"retiring,omitempty"`
	RetiringSince *time.Time `json:"retiringSince,omitempty"`
	StartBy       *time.Time `json:"startBy,omitempty"`
}

func (s *jobHandlers) runningTasks(c *gin.Context) {
	all, err := s.regIn(c).Work().RunningTasks(c)
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	retiring, err := s.regIn(c).Work().RetiringTasks(c)
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	out := []runningView{}
	for job, items := range all {
		for item, rt := range items {
			out = append(out, runningView{JobName: job, ShardingItem: item, TaskID: rt.TaskID, AgentID: rt.AgentID, Hostname: rt.Hostname,
				State: rt.State, Busy: rt.Busy, LaunchedAt: rt.LaunchedAt, RunKey: rt.RunKey})
		}
	}
	for job, items := range retiring {
		for item, r := range items {
			out = append(out, runningView{JobName: job, ShardingItem: item, TaskID: r.TaskID, AgentID: r.AgentID, Hostname: r.Hostname,
				State: r.State, Busy: r.Busy, LaunchedAt: r.LaunchedAt, RunKey: r.RunKey, Retiring: true, RetiringSince: &r.Since, StartBy: &r.StartBy})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].JobName != out[j].JobName {
			return out[i].JobName < out[j].JobName
		}
		if out[i].ShardingItem != out[j].ShardingItem {
			return out[i].ShardingItem < out[j].ShardingItem
		}
		return !out[i].Retiring && out[j].Retiring // the shard's current task first
	})
	c.JSON(http.StatusOK, out)
}

// readyTasks and failoverTasks read the reasons before the queue: a
// reason is recorded while its entry waits and removed only after the
// entry has left its queue (launched or gone), so an entry the later read
// of the queue still holds had its reason in the earlier read, unless it
// was queued in between. Read the other way round, an entry launched
// between the reads was listed with its reason already removed.
func (s *jobHandlers) readyTasks(c *gin.Context) {
	why, err := s.regIn(c).Work().WaitingReasons(c)
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	q, err := s.regIn(c).Work().ReadyQueue(c)
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	var fo []queue.Failover
	if len(q) > 0 {
		fo, _ = s.regIn(c).Work().FailoverQueue(c) // ahead of executions in the namespace's order; an error leaves estimates out
	}
	places := s.places(c, q, fo)
	out := make([]gin.H, 0, len(q))
	for _, r := range q {
		row := gin.H{"jobName": r.Job, "times": r.Count, "since": r.Since}
		w, waits := why[queue.WaitKey(false, r.Job, 0)]
		if waits {
			row["waiting"] = s.waitView(c, w)
		}
		p, ok := places[deadline.ReadyKey(r.Job)]
		placeFields(row, p, ok, waits && w.Reason == queue.WaitTooLarge)
		out = append(out, row)
	}
	c.JSON(http.StatusOK, out)
}

func (s *jobHandlers) failoverTasks(c *gin.Context) {
	why, err := s.regIn(c).Work().WaitingReasons(c)
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	q, err := s.regIn(c).Work().FailoverQueue(c)
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	var places map[string]deadline.Place
	if len(q) > 0 {
		if ready, err := s.regIn(c).Work().ReadyQueue(c); err == nil {
			places = s.places(c, ready, q)
		}
	}
	out := make([]gin.H, 0, len(q))
	for _, f := range q {
		row := gin.H{"jobName": f.Job, "shardingItem": f.Item, "taskId": f.TaskID, "since": f.Since}
		w, waits := why[queue.WaitKey(true, f.Job, f.Item)]
		if waits {
			row["waiting"] = s.waitView(c, w)
		}
		p, ok := places[deadline.FailoverKey(f.Job, f.Item)]
		placeFields(row, p, ok, waits && w.Reason == queue.WaitTooLarge)
		out = append(out, row)
	}
	c.JSON(http.StatusOK, out)
}

// waitView is a recorded wait reason with its holders summed up as of now,
// as the caller may read it (another namespace's holders are
// round.OtherWork to a caller without a role there: redact.go).
type waitView struct {
	queue.Wait
	Summary string `json:"summary,omitempty"`
}

// addJob registers a job, recording when (history of an earlier job of
// the same name is not its own).
func (s *jobHandlers) addJob(ctx context.Context, job jobs.Config) error {
	return s.regIn(ctx).Config().AddJobAt(ctx, job, s.clock.Now())
}

// checkSecrets checks a job's secrets as it is registered or updated:
// each secret of the namespace it names exists (with a key to open it).
func (s *jobHandlers) checkSecrets(c context.Context, cfg jobs.Config) error {
	ns := nsFrom(c)
	if k := cfg.KubeSecrets(); len(k) > 0 && s.templates == nil { // never silently dropped
		return fmt.Errorf("%w: secrets: kubernetesSecret %s is for the Kubernetes engine (kube_config or kube_in_cluster); "+
			"this scheduler runs its tasks on Mesos: store the value as a secret of the namespace and name it instead", jobs.ErrInvalid, k[0].KubernetesSecret)
	}
	own := cfg.OwnSecrets()
	if len(own) == 0 {
		return nil
	}
	if s.secrets == nil {
		return fmt.Errorf("%w: secrets: %v", jobs.ErrInvalid, secrets.ErrNoKey)
	}
	for _, n := range own {
		if _, _, err := s.reg.Tenancy().Secret(c, ns, n); errors.Is(err, registry.ErrSecretNotFound) {
			return fmt.Errorf("%w: secrets: namespace '%s' holds no secret '%s': store it first (PUT /api/namespaces/%s/secrets/%s, ejctl secret set)",
				jobs.ErrInvalid, ns, n, ns, n)
		} else if err != nil {
			return err
		}
	}
	return nil
}
