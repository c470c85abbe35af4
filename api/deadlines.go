package api

import (
	"encoding/json"
	"net/http"
	"sort"

	"github.com/gin-gonic/gin"

	"github.com/ejcloud/elasticjob/observe"
)

// missedDeadlines answers GET /api/job/deadlines: the request's
// namespace's deadlines missed by work still waiting or running (the
// leader's records of the alerts it raised, deadline.Watcher), soonest
// due first. The history keeps every one (status traces of state
// DEADLINE_MISSED).
func (s *runHandlers) missedDeadlines(c *gin.Context) {
	recs, err := s.reg.Schedule().Alerts(c)
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	ns := nsIn(c)
	out := []observe.DeadlineAlert{}
	for _, b := range recs {
		var a observe.DeadlineAlert
		if json.Unmarshal(b, &a) != nil || a.Namespace != ns {
			continue
		}
		if job := c.Query("jobName"); job != "" && a.Job != job {
			continue
		}
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Due.Equal(out[j].Due) {
			return out[i].Due.Before(out[j].Due)
		}
		return out[i].Key() < out[j].Key()
	})
	c.JSON(http.StatusOK, out)
}
