package api

import (
	"context"
	"crypto/hmac"
	"encoding/base64"
	"fmt"
	"net/http"

	"github.com/gin-gonic/gin"

	clusterengine "github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/jobs"
)

// Executors takes the reports of executors that run without a Mesos agent (in Kubernetes
// pods) and hands them to the leader's cluster engine.
type Executors interface {
	Report(ctx context.Context, r clusterengine.ExecutorReport) error
}

// Paths and headers of executor reports (package executor sends them).
const (
	ExecutorReportPath = "/executor/v1/report"
	TaskTokenHeader    = "X-Elasticjob-Task-Token"
)

// TaskToken signs a task id: the scheduler puts it into the task's pod, and the executor
// there sends it with its reports, which so can only be about its own task. Every instance
// with the same credentials derives the same key (see tokenKey), so any instance checks it.
func (a *Auth) TaskToken(taskID string) string {
	return "ejt1." + base64.RawURLEncoding.EncodeToString(a.mac("task\x00"+taskID))
}

func (a *Auth) validTaskToken(taskID, tok string) bool {
	return taskID != "" && hmac.Equal([]byte(tok), []byte(a.TaskToken(taskID)))
}

func (s *operateHandlers) executorReport(c *gin.Context, ex Executors) {
	body, err := readBody(c, s.maxBody)
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	var rep clusterengine.ExecutorReport
	if err := decode(body, &rep, false); err != nil {
		writeError(c, s.log, err)
		return
	}
	if !s.auth.validTaskToken(rep.TaskID, c.GetHeader(TaskTokenHeader)) {
		writeError(c, s.log, fmt.Errorf("%w: the report's task token does not match its task %q", ErrUnauthorized, rep.TaskID))
		return
	}
	if rep.State == "" {
		// A message: a daemon run's report, which names its task in its data. The token
		// vouches for rep.TaskID alone, and the task runs the tenant's code beside the
		// executor that holds it: a report of another task (another team's, its id read
		// where it shows) would mark it busy, notify its failures or pause its job.
		d, err := jobs.ParseDaemonReport(rep.Data)
		if err != nil {
			writeError(c, s.log, fmt.Errorf("%w: an executor's message must be a daemon report: %v", ErrBadRequest, err))
			return
		}
		if d.TaskID != rep.TaskID {
			writeError(c, s.log, fmt.Errorf("%w: the daemon report names task %q, not the report's task %q", ErrForbidden, d.TaskID, rep.TaskID))
			return
		}
	}
	if err := ex.Report(c, rep); err != nil {
		writeError(c, s.log, err)
		return
	}
	c.Status(http.StatusNoContent)
}
