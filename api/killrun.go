package api

import (
	"net/http"

	"github.com/gin-gonic/gin"
)

// killRun stops a job's running execution and keeps the job (POST
// /api/job/{jobName}/kill): its shards are killed and end "killed by
// {via}:{user}" (history, the run's record); what waited to run again of
// it is dropped; the job's pending executions and cron stay.
func (s *runHandlers) killRun(c *gin.Context) {
	name := c.Param("jobName")
	if _, err := s.regOf(c).Config().Job(c, name); err != nil {
		writeError(c, s.log, err)
		return
	}
	ops, err := s.opsOrErr()
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	by := triggeredBy(c)
	k, err := ops.KillRun(c, keyOf(c, name), by)
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	if k.Tasks == nil {
		k.Tasks = []string{}
	}
	c.JSON(http.StatusOK, gin.H{"jobName": name, "killedBy": by, "taskIds": k.Tasks, "droppedShards": k.Dropped})
}
