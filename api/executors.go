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
	// TaskIDHeader names the report's task, so that its token is checked before the body
	// is read.
	TaskIDHeader = "X-Elasticjob-Task-Id"
)

// maxUnnamedReports bounds the reports without TaskIDHeader (an executor of an earlier
// version sends none) whose bodies are read at once.
const maxUnnamedReports = 16

// TaskToken signs a task id: the scheduler puts it into the task's pod, and the executor
// there sends it with its reports, which so can only be about its own task. Every instance
// with the same credentials derives the same key (see tokenKey), so any instance checks it.
func (a *Auth) TaskToken(taskID string) string {
	return "ejt1." + base64.RawURLEncoding.EncodeToString(a.mac("task\x00"+taskID))
}

func (a *Auth) validTaskToken(taskID, tok string) bool {
	return taskID != "" && hmac.Equal([]byte(tok), []byte(a.TaskToken(taskID)))
}

// executorReport serves POST /executor/v1/report. Any client reaches it (a task's pod is
// one), and a body of up to maxBody is read into the scheduler's memory: so a report's
// token is checked against the task TaskIDHeader names before its body is read (401 at
// once), and reports without the header, which are checked only once read, have at most
// maxUnnamedReports bodies read at a time (429, which an executor retries): else a client
// announcing bodies it never finishes, on as many connections as it likes, held maxBody of
// the scheduler's memory on each.
func (s *operateHandlers) executorReport(c *gin.Context, ex Executors) {
	named := c.GetHeader(TaskIDHeader)
	switch {
	case named != "" && !s.auth.validTaskToken(named, c.GetHeader(TaskTokenHeader)):
		writeError(c, s.log, fmt.Errorf("%w: the report's task token does not match its task %q", ErrUnauthorized, named))
		return
	case named == "":
		select {
		case s.unnamedReports <- struct{}{}:
			defer func() { <-s.unnamedReports }()
		default:
			writeError(c, s.log, fmt.Errorf("%w: more than %d reports without %s at once", ErrTooMany, maxUnnamedReports, TaskIDHeader))
			return
		}
	}
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
	if named != "" && rep.TaskID != named {
		writeError(c, s.log, fmt.Errorf("%w: the report is of task %q, not %q its %s names", ErrUnauthorized, rep.TaskID, named, TaskIDHeader))
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
