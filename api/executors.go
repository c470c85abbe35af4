package api

import (
	"context"
	"crypto/hmac"
	"encoding/base64"
	"fmt"
	"net/http"

	"github.com/gin-gonic/gin"

	clusterengine "github.com/ejcloud/elasticjob/engine"
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
	if err := ex.Report(c, rep); err != nil {
		writeError(c, s.log, err)
		return
	}
	c.Status(http.StatusNoContent)
}
