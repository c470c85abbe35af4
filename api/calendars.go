package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/jobs/calendar"
	"github.com/ejcloud/elasticjob/jobs/cron"
	"github.com/ejcloud/elasticjob/namespace"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/workflow"
)

// scheduleHandlers serve a namespace's calendars and the cron previews, and plan the
// fires of jobs and workflows (time zone, calendars, jitter) for the other groups.
type scheduleHandlers struct {
	*core
	location   *time.Location
	cronJitter time.Duration // Options.Schedules.CronJitter
}

// A namespace's business calendars (docs/jobs.md, "Jitter, calendars and
// several crons"): anyone with a role there reads them, an editor writes
// them (the namespace routes' access), jobs of that namespace name them.

func calendarParam(c *gin.Context) (string, error) {
	name := c.Param("calendar")
	if err := calendar.ValidateName(name); err != nil {
		return "", fmt.Errorf("%w: %v", ErrBadRequest, strings.TrimPrefix(err.Error(), calendar.ErrInvalid.Error()+": "))
	}
	return name, nil
}

func (s *scheduleHandlers) listCalendars(c *gin.Context) {
	list, err := s.reg.Schedule().Calendars(c, nsOf(c))
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	c.JSON(http.StatusOK, list)
}

func (s *scheduleHandlers) getCalendar(c *gin.Context) {
	name, err := calendarParam(c)
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	cal, _, err := s.reg.Schedule().Calendar(c, nsOf(c), name)
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	c.JSON(http.StatusOK, cal)
}

// putCalendar stores a calendar, new (201) or replacing (200). The body
// is the calendar as JSON, or an iCalendar file (Content-Type text/calendar)
// whose events become its exclude list, with ?timeZone=, ?weekdays=MON,TUE,…
// and ?description= for the rest.
func (s *scheduleHandlers) putCalendar(c *gin.Context) {
	name, err := calendarParam(c)
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	body, err := readBody(c, s.maxBody)
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	var cal calendar.Calendar
	if strings.HasPrefix(c.ContentType(), "text/calendar") {
		cal, err = s.calendarFromICS(c, body)
	} else {
		err = decodeStrict(body, &cal)
	}
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	if cal.Name == "" {
		cal.Name = name
	}
	if cal.Name != name {
		writeError(c, s.log, fmt.Errorf("%w: name %q differs from the path's %q", ErrBadRequest, cal.Name, name))
		return
	}
	if err := cal.Validate(); err != nil {
		writeError(c, s.log, err)
		return
	}
	cal.Weekdays = calendar.SortedWeekdays(cal.Weekdays)
	created, err := s.reg.Schedule().PutCalendar(c, nsOf(c), cal)
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	code := http.StatusOK
	if created {
		code = http.StatusCreated
	}
	c.JSON(code, cal)
}

func (s *scheduleHandlers) calendarFromICS(c *gin.Context, body []byte) (calendar.Calendar, error) {
	cal := calendar.Calendar{Name: c.Param("calendar"), TimeZone: c.Query("timeZone"), Description: c.Query("description")}
	if w := c.Query("weekdays"); w != "" {
		cal.Weekdays = strings.Split(w, ",")
	}
	loc := s.location
	if cal.TimeZone != "" {
		l, err := time.LoadLocation(cal.TimeZone)
		if err != nil {
			return cal, fmt.Errorf("%w: timeZone %q is not an IANA time zone name", ErrBadRequest, cal.TimeZone)
		}
		loc = l
	}
	if loc == nil {
		loc = time.Local
	}
	ps, err := calendar.ImportICS(strings.NewReader(string(body)), loc)
	if err != nil {
		return cal, err
	}
	cal.Exclude = ps
	return cal, nil
}

func (s *scheduleHandlers) deleteCalendar(c *gin.Context) {
	name, err := calendarParam(c)
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	users, err := s.calendarUsers(c, nsOf(c), name)
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	if len(users) > 0 {
		writeError(c, s.log, fmt.Errorf("%w: calendar %q is named by %s: change them first", ErrConflict, name, strings.Join(users, ", ")))
		return
	}
	if err := s.reg.Schedule().DeleteCalendar(c, nsOf(c), name); err != nil {
		writeError(c, s.log, err)
		return
	}
	c.Status(http.StatusNoContent)
}

// calendarUsers lists the namespace's jobs that name a calendar.
func (s *scheduleHandlers) calendarUsers(ctx context.Context, ns, name string) ([]string, error) {
	list, err := s.reg.In(ns).Config().Jobs(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, j := range list {
		if j.Calendar == name {
			out = append(out, j.JobName)
		}
	}
	flows, err := s.reg.In(ns).Flows().Workflows(ctx)
	if err != nil {
		return nil, err
	}
	for _, w := range flows {
		if w.Calendar == name {
			out = append(out, "workflow "+w.Name)
		}
	}
	return out, nil
}

// checkCalendar refuses a job naming a calendar its namespace does not
// hold (400), and one whose crons the calendar leaves no fire to.
func (s *scheduleHandlers) checkCalendar(ctx context.Context, job jobs.Config) error {
	if job.Calendar == "" {
		return nil
	}
	p, loc, err := s.jobPlan(ctx, job)
	if errors.Is(err, registry.ErrCalendarNotFound) {
		return fmt.Errorf("%w: calendar %q: the namespace has no such calendar (PUT /api/namespaces/{name}/calendars/%s first)", ErrBadRequest, job.Calendar, job.Calendar)
	}
	if err != nil {
		return err
	}
	if p != nil && p.Next(s.clock.Now(), loc).IsZero() {
		return fmt.Errorf("%w: calendar %q excludes every fire of the job's crons", ErrBadRequest, job.Calendar)
	}
	return nil
}

// jobPlan is a job's schedule as the leader fires it (registry's Plan,
// with the scheduler-wide jitter) and the zone it is read in; job is as
// the request's namespace knows it.
func (s *scheduleHandlers) jobPlan(ctx context.Context, job jobs.Config) (*cron.Plan, *time.Location, error) {
	ns, _ := ctx.Value(ctxNamespace).(string)
	job.JobName = namespace.Key(ns, job.JobName)
	if _, err := job.Location(s.location); err != nil {
		return nil, nil, err
	}
	if _, err := job.Plan(nil, 0); err != nil { // its own errors, as the job's
		return nil, nil, err
	}
	return s.reg.Schedule().Plan(ctx, job.Timing(), s.cronJitter, s.location)
}

// workflowPlan is jobPlan for a workflow.
func (s *scheduleHandlers) workflowPlan(ctx context.Context, w workflow.Config) (*cron.Plan, *time.Location, error) {
	ns, _ := ctx.Value(ctxNamespace).(string)
	w.Name = namespace.Key(ns, w.Name)
	if _, err := w.Location(s.location); err != nil {
		return nil, nil, err
	}
	if _, err := w.Plan(nil, 0); err != nil { // its own errors, as the workflow's
		return nil, nil, err
	}
	return s.reg.Schedule().Plan(ctx, w.Timing(), s.cronJitter, s.location)
}

// JobNext is the answer of GET /api/jobs/{jobName}/next: the job's next
// fires as the leader makes them (its crons' union, H, jitter, calendar).
type JobNext struct {
	JobName  string   `json:"jobName"`
	Crons    []string `json:"crons"`
	TimeZone string   `json:"timeZone"`
	Calendar string   `json:"calendar,omitempty"`
	// JitterSeconds is the fixed offset every fire of the job is moved by.
	JitterSeconds int64    `json:"jitterSeconds"`
	Fires         []string `json:"fires"`
}

// jobNext previews a job's fires: ?count=5[&from=RFC 3339].
func (s *scheduleHandlers) jobNext(c *gin.Context) {
	job, err := s.regOf(c).Config().Job(c, c.Param("jobName"))
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	n := 5
	if v := c.Query("count"); v != "" {
		if n, err = strconv.Atoi(v); err != nil || n < 1 || n > MaxCronCount {
			writeError(c, s.log, fmt.Errorf("%w: count must be a whole number from 1 to %d, got %q", ErrBadRequest, MaxCronCount, v))
			return
		}
	}
	at := s.clock.Now()
	if v := c.Query("from"); v != "" {
		if at, err = time.Parse(time.RFC3339, v); err != nil {
			writeError(c, s.log, fmt.Errorf("%w: from must be an RFC 3339 time such as 2026-01-01T00:00:00Z, got %q", ErrBadRequest, v))
			return
		}
	}
	p, loc, err := s.jobPlan(c, job)
	if errors.Is(err, registry.ErrCalendarNotFound) {
		err = fmt.Errorf("%w: the job names calendar %q, which its namespace does not hold: it does not fire until the calendar exists", ErrConflict, job.Calendar)
	}
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	ans := JobNext{JobName: job.JobName, Crons: job.CronList(), TimeZone: machineZoneName(loc), Calendar: job.Calendar, Fires: []string{}}
	if ans.Crons == nil {
		ans.Crons = []string{}
	}
	if p != nil {
		ans.JitterSeconds = int64(p.Offset / time.Second)
		for _, t := range p.NextN(at, loc, n) {
			ans.Fires = append(ans.Fires, t.In(loc).Format(time.RFC3339))
		}
	}
	c.JSON(http.StatusOK, ans)
}
