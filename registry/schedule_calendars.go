package registry

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/jobs/calendar"
	"github.com/ejcloud/elasticjob/jobs/cron"
	"github.com/ejcloud/elasticjob/namespace"
	"github.com/ejcloud/elasticjob/store"
	"github.com/ejcloud/elasticjob/workflow"
)

// calendarsPath holds the namespaces' business calendars,
// /calendars/{namespace}/{name}: each a calendar.Calendar, read and
// written by its namespace's users alone (the API's namespace routes).
const calendarsPath = "/calendars"

// ErrCalendarNotFound: no such calendar in the namespace.
var ErrCalendarNotFound = errors.New("calendar not found")

func calendarPath(ns, name string) string { return calendarsPath + "/" + ns + "/" + name }

// PutCalendar stores a namespace's calendar, made or replaced; created
// says which.
func (sc Schedule) PutCalendar(ctx context.Context, ns string, c calendar.Calendar) (created bool, err error) {
	var ops []store.Op
	if ns != namespace.Default {
		ops = append(ops, store.Check(nsPath(ns), store.AnyVersion)) // not into a namespace deleted meanwhile
	}
	_, version, err := sc.Calendar(ctx, ns, c.Name)
	switch {
	case errors.Is(err, ErrCalendarNotFound):
		ops = append(ops, store.Create(calendarPath(ns, c.Name), mustJSON(c)))
		created = true
	case err != nil:
		return false, err
	default:
		ops = append(ops, store.Set(calendarPath(ns, c.Name), mustJSON(c), version))
	}
	return created, sc.r.phys.Commit(ctx, ops...)
}

// Calendar reads a namespace's calendar and its stored version.
func (sc Schedule) Calendar(ctx context.Context, ns, name string) (calendar.Calendar, int64, error) {
	return readNamed[calendar.Calendar](ctx, sc.r, calendarPath(ns, name),
		func() error {
			return fmt.Errorf("%w: no calendar '%s' in namespace '%s'", ErrCalendarNotFound, name, ns)
		})
}

// Calendars lists a namespace's calendars by name.
func (sc Schedule) Calendars(ctx context.Context, ns string) ([]calendar.Calendar, error) {
	return listNamed(ctx, sc.r, calendarsPath+"/"+ns, func(c calendar.Calendar) string { return c.Name })
}

// DeleteCalendar deletes a namespace's calendar.
func (sc Schedule) DeleteCalendar(ctx context.Context, ns, name string) error {
	if _, _, err := sc.Calendar(ctx, ns, name); err != nil {
		return err
	}
	return sc.r.phys.Commit(ctx, store.Delete(calendarPath(ns, name), store.AnyVersion))
}

// CompiledCalendar reads and compiles a namespace's calendar (fallback:
// the zone of one that names none): what a job's plan consults.
func (sc Schedule) CompiledCalendar(ctx context.Context, ns, name string, fallback *time.Location) (*calendar.Compiled, error) {
	c, _, err := sc.Calendar(ctx, ns, name)
	if err != nil {
		return nil, err
	}
	return c.Compile(fallback)
}

// Plan is job j's schedule as the leader fires it (jobs.Config.PlanWith),
// with the calendar it names read from its namespace: the one function the
// producer and the API's previews share. j.JobName is the scheduler-wide
// key (namespace.Key), which "H" and the jitter offset hash; parse is
// cron.ParseFor or a memo of it; inherited is the scheduler-wide jitter
// window; fallback the zone of a calendar naming none.
func (sc Schedule) Plan(ctx context.Context, j jobs.Config, parse func(expr, key string) (*cron.Schedule, error),
	inherited time.Duration, fallback *time.Location) (*cron.Plan, error) {
	var cal cron.Excluder
	if j.Calendar != "" && j.HasSchedule() {
		c, err := sc.CompiledCalendar(ctx, namespace.Of(j.JobName), j.Calendar, fallback)
		if err != nil {
			return nil, fmt.Errorf("calendar %q: %w", j.Calendar, err)
		}
		cal = c
	}
	return j.PlanWith(parse, cal, inherited)
}

// WorkflowPlan is Plan for a workflow (w.Name the scheduler-wide key).
func (sc Schedule) WorkflowPlan(ctx context.Context, w workflow.Config, inherited time.Duration, fallback *time.Location) (*cron.Plan, error) {
	var cal cron.Excluder
	if w.Calendar != "" && strings.TrimSpace(w.Cron) != "" {
		c, err := sc.CompiledCalendar(ctx, namespace.Of(w.Name), w.Calendar, fallback)
		if err != nil {
			return nil, fmt.Errorf("calendar %q: %w", w.Calendar, err)
		}
		cal = c
	}
	return w.Plan(cal, inherited)
}

// dropCalendarsOps deletes every calendar of a namespace (with the
// namespace).
func dropCalendarsOps(ns string) []store.Op {
	return []store.Op{store.Delete(calendarsPath+"/"+ns, store.AnyVersion)}
}

// Jitters is the jitter window each namespace gives its jobs and
// workflows that set none (namespace.Record.JitterOr over Wide, the
// scheduler's cron_jitter), read from the namespaces' records again at
// most every Refresh: the leader's producer and workflow engine each keep
// one, so computing 100,000 next fires reads the records once. A change
// applies from each job's next fire computed after it is read.
type Jitters struct {
	Reg     *Registry
	Wide    time.Duration
	Refresh time.Duration

	mu sync.Mutex
	at time.Time
	m  map[string]time.Duration
}

// Of is namespace ns's window at now; on a failed read the last one read
// (or Wide) stays in force.
func (j *Jitters) Of(ns string, now time.Time) time.Duration {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.m == nil || now.Sub(j.at) >= j.Refresh || now.Before(j.at) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		recs, err := j.Reg.Tenancy().Namespaces(ctx)
		cancel()
		if err == nil || j.m == nil {
			j.at, j.m = now, map[string]time.Duration{}
			for _, r := range recs {
				if r.Jitter != "" {
					j.m[r.Name] = r.JitterOr(j.Wide)
				}
			}
		}
	}
	if d, ok := j.m[ns]; ok {
		return d
	}
	return j.Wide
}
