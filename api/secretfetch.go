package api

import (
	"context"
	"fmt"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/ejcloud/elasticjob/history/view"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/namespace"
	"github.com/ejcloud/elasticjob/secrets"
)

// ExecutorSecretsPath is where a task's executor fetches its job's
// secrets as the task starts (package executor, secrets.go there).
const ExecutorSecretsPath = "/executor/v1/secrets"

// secretFetch is the body of POST /executor/v1/secrets.
type secretFetch struct {
	TaskID string `json:"taskId"`
}

// FetchedSecret is one value in the answer (base64 in JSON).
type FetchedSecret struct {
	Name  string `json:"name"`
	Value []byte `json:"value"`
}

// ExecutorBinding tells whether a secret fetch for a task comes from the
// executor that runs it (Options.Tenancy.ExecutorBinding): proof is what
// the fetch carries in jobs.ExecutorProofHeader. The embedded agent
// implements it (embedded.Cluster.CheckSecretFetch).
type ExecutorBinding func(taskID, proof string) error

// fetchSecrets answers a task's executor with the values of the secrets
// its job names, and nobody else: the task's fetch token (an HMAC of its
// id under the secrets key, carried in its payload) must match; where the
// engine can tell (the embedded agent), the fetch must come from the
// executor that runs the task, proved with that executor's own agent
// credential; the task must be the one the registry records running for
// its shard now, and must not have fetched before (the first fetch
// consumes the token, recorded in the registry). So a token read later
// from a payload (a Mesos checkpoint, a pod spec) opens nothing, neither
// once its task has ended nor while it runs: its executor fetched as the
// task started, and another executor cannot prove itself the task's.
// Every refusal is logged and written to the audit log, in the task's
// namespace. Forwarded to the leader like a write: its registry is the one
// launches are committed to first, and its agent runs the tasks.
func (s *tenancyHandlers) fetchSecrets(c *gin.Context) {
	kr, err := s.keyring()
	if err != nil {
		writeError(c, s.log, fmt.Errorf("%w: %v", ErrUnavailable, secrets.ErrNoKey))
		return
	}
	body, err := readBody(c, 4<<10)
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	var req secretFetch
	if err := decode(body, &req, true); err != nil {
		writeError(c, s.log, err)
		return
	}
	refuse := func(err error, why string) {
		s.log.Warn("secrets: refused a fetch: "+why, "task_id", req.TaskID, "from", c.ClientIP(), "err", err)
		writeError(c, s.log, err)
		if s.auditFetch != nil {
			s.auditFetch(c, req.TaskID, c.Writer.Status(), "secret fetch refused: "+why)
		}
	}
	if !kr.ValidTaskToken(req.TaskID, c.GetHeader(TaskTokenHeader)) {
		refuse(fmt.Errorf("%w: the task token does not match task %q", ErrUnauthorized, req.TaskID),
			"a token that does not match its task")
		return
	}
	tid, err := jobs.ParseTaskID(req.TaskID)
	if err != nil {
		writeError(c, s.log, fmt.Errorf("%w: %v", ErrBadRequest, err))
		return
	}
	if s.binding != nil {
		if err := s.binding(req.TaskID, c.GetHeader(jobs.ExecutorProofHeader)); err != nil {
			refuse(fmt.Errorf("%w: task %s: %v: a task's secrets go only to the executor that runs it", ErrForbidden, req.TaskID, err),
				"not from the executor that runs the task")
			return
		}
	}
	running, err := s.reg.Work().RunningOf(c, tid.JobName)
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	if rt, ok := running[tid.Item]; !ok || rt.TaskID != req.TaskID {
		refuse(fmt.Errorf("%w: task %s is not running: a task gets its secrets only while it runs", ErrForbidden, req.TaskID),
			"a task that is not running")
		return
	}
	first, err := s.reg.Tenancy().ConsumeSecretFetch(c, tid.JobName, tid.Item, req.TaskID)
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	if !first {
		refuse(fmt.Errorf("%w: task %s fetched its secrets already: a fetch token is good for one fetch", ErrForbidden, req.TaskID),
			"a second fetch with a task's token (a token is good for one fetch)")
		return
	}
	job, err := s.reg.Config().Job(c, tid.JobName)
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	ns := namespace.Of(tid.JobName)
	out := []FetchedSecret{}
	for _, name := range job.OwnSecrets() {
		sealed, _, err := s.reg.Tenancy().Secret(c, ns, name)
		if err != nil {
			writeError(c, s.log, secretErr(err))
			return
		}
		v, err := kr.Open(sealed)
		if err != nil {
			writeError(c, s.log, err)
			return
		}
		out = append(out, FetchedSecret{Name: name, Value: v})
	}
	c.Header("Cache-Control", "no-store")
	c.JSON(http.StatusOK, gin.H{"secrets": out})
}

// auditSecretFetch writes a refused secret fetch to the audit log, in the
// namespace of the task it named (default when it names none): whose
// secrets were asked for sees it.
func (s *Server) auditSecretFetch(c *gin.Context, taskID string, status int, summary string) {
	if s.audit == nil {
		return
	}
	ns := namespace.Default
	if tid, err := jobs.ParseTaskID(taskID); err == nil {
		ns = namespace.Of(tid.JobName)
	}
	now := s.clock.Now()
	a := view.Audit{CreationTime: &now, User: "executor", Address: s.addressOf(c), Method: c.Request.Method,
		Route: ExecutorSecretsPath, TargetKind: "task", Target: taskID, Summary: summary, Status: status, Namespace: ns}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.Request.Context()), auditWait)
	defer cancel()
	if err := s.audit.Record(ctx, a); err != nil {
		s.log.Warn("api: audit row not confirmed on disk", "route", ExecutorSecretsPath, "status", status, "err", err)
	}
}
