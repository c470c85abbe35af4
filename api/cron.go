package api

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/ejcloud/elasticjob/jobs/cron"
	"github.com/gin-gonic/gin"
)

// MaxCronCount bounds GET /api/cron/next's count.
const MaxCronCount = 100

// CronNext is the answer of GET /api/cron/next: the next fire times of an
// expression in a zone, each as RFC 3339 with the zone's offset (its first
// 19 characters are the wall clock). Fires is empty when the expression
// never fires again.
type CronNext struct {
	Cron     string   `json:"cron"`
	TimeZone string   `json:"timeZone"`
	Fires    []string `json:"fires"`
}

// cronNext previews an expression with the scheduler's own parser:
// ?cron=…&timeZone=…&count=5[&from=RFC 3339][&job=NAME: the job whose name
// an "H" field hashes; a job's actual fires, with its jitter and calendar,
// are GET /api/jobs/{jobName}/next]. Bad input is a 400 whose
// message starts with the field's name.
func (s *scheduleHandlers) cronNext(c *gin.Context) {
	ans, err := s.previewCron(c.Query("cron"), keyOf(c, c.Query("job")), c.Query("timeZone"), c.Query("count"), c.Query("from"))
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	c.JSON(http.StatusOK, ans)
}

func (s *scheduleHandlers) previewCron(expr, key, zone, count, from string) (CronNext, error) {
	expr = strings.TrimSpace(expr)
	if expr == "" {
		return CronNext{}, fmt.Errorf("%w: cron is required (a Quartz expression such as 0/5 * * * * ?)", ErrBadRequest)
	}
	sched, err := cron.ParseFor(expr, key)
	if err != nil {
		return CronNext{}, fmt.Errorf("%w: %v", ErrBadRequest, err)
	}
	loc := s.location
	if zone = strings.TrimSpace(zone); zone != "" {
		if loc, err = time.LoadLocation(zone); err != nil {
			return CronNext{}, fmt.Errorf("%w: timeZone %q is not an IANA time zone name", ErrBadRequest, zone)
		}
	}
	n := 5
	if count != "" {
		if n, err = strconv.Atoi(count); err != nil || n < 1 || n > MaxCronCount {
			return CronNext{}, fmt.Errorf("%w: count must be a whole number from 1 to %d, got %q", ErrBadRequest, MaxCronCount, count)
		}
	}
	at := s.clock.Now()
	if from != "" {
		if at, err = time.Parse(time.RFC3339, from); err != nil {
			return CronNext{}, fmt.Errorf("%w: from must be an RFC 3339 time such as 2026-01-01T00:00:00Z, got %q", ErrBadRequest, from)
		}
	}
	ans := CronNext{Cron: expr, TimeZone: machineZoneName(loc), Fires: []string{}}
	for _, t := range sched.NextN(at, loc, n) {
		ans.Fires = append(ans.Fires, t.In(loc).Format(time.RFC3339))
	}
	return ans, nil
}
