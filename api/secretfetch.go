package api

import (
	"fmt"
	"net/http"

	"github.com/gin-gonic/gin"

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

// fetchSecrets answers a task's executor with the values of the secrets
// its job names, and nobody else: the task's fetch token (an HMAC of its
// id under the secrets key, carried in its payload) must match, and the
// task must be the one the registry records running for its shard now,
// and must not have fetched before (the first fetch consumes the token,
// recorded in the registry). So a token read later from a payload (a
// Mesos checkpoint, a pod spec) opens nothing, neither once its task has
// ended nor while it runs: its executor fetched as the task started. Forwarded to the leader like a
// write: its registry is the one launches are committed to first.
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
	if !kr.ValidTaskToken(req.TaskID, c.GetHeader(TaskTokenHeader)) {
		s.log.Warn("secrets: refused a fetch with a token that does not match its task", "task_id", req.TaskID, "from", c.ClientIP())
		writeError(c, s.log, fmt.Errorf("%w: the task token does not match task %q", ErrUnauthorized, req.TaskID))
		return
	}
	tid, err := jobs.ParseTaskID(req.TaskID)
	if err != nil {
		writeError(c, s.log, fmt.Errorf("%w: %v", ErrBadRequest, err))
		return
	}
	running, err := s.reg.Work().RunningOf(c, tid.JobName)
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	if rt, ok := running[tid.Item]; !ok || rt.TaskID != req.TaskID {
		s.log.Warn("secrets: refused a fetch for a task that is not running", "task_id", req.TaskID, "from", c.ClientIP())
		writeError(c, s.log, fmt.Errorf("%w: task %s is not running: a task gets its secrets only while it runs", ErrForbidden, req.TaskID))
		return
	}
	first, err := s.reg.Tenancy().ConsumeSecretFetch(c, tid.JobName, tid.Item, req.TaskID)
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	if !first {
		s.log.Warn("secrets: refused a second fetch with a task's token (a token is good for one fetch)",
			"task_id", req.TaskID, "from", c.ClientIP())
		writeError(c, s.log, fmt.Errorf("%w: task %s fetched its secrets already: a fetch token is good for one fetch", ErrForbidden, req.TaskID))
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
