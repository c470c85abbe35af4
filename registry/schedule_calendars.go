package registry

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ejcloud/elasticjob/jobs/calendar"
	"github.com/ejcloud/elasticjob/jobs/cron"
	"github.com/ejcloud/elasticjob/jobs/timing"
	"github.com/ejcloud/elasticjob/namespace"
	"github.com/ejcloud/elasticjob/store"
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

// Plan is s as the leader fires it (timing.Inputs.Plan) and the zone its
// crons are read in, with the inputs of s's namespace read now: its
// calendars and jitter window (wide: the scheduler-wide window; fallback:
// the default zone). For a preview; the leader reads every namespace's
// inputs once (TimingInputs) and plans from them.
func (sc Schedule) Plan(ctx context.Context, s timing.Schedule, wide time.Duration, fallback *time.Location) (*cron.Plan, *time.Location, error) {
	in, err := sc.TimingInputs(ctx, wide, fallback, namespace.Of(s.Key))
	if err != nil {
		return nil, nil, err
	}
	p, loc, err := in.Plan(s, cron.ParseFor)
	if errors.Is(err, timing.ErrCalendarNotFound) { // the registry's own not-found, as a read gives it
		ns := namespace.Of(s.Key)
		err = fmt.Errorf("calendar %q: %w: no calendar '%s' in namespace '%s'", s.Calendar, ErrCalendarNotFound, s.Calendar, ns)
	}
	return p, loc, err
}

// dropCalendarsOps deletes every calendar of a namespace (with the
// namespace).
func dropCalendarsOps(ns string) []store.Op {
	return []store.Op{store.Delete(calendarsPath+"/"+ns, store.AnyVersion)}
}

// TimingInputs reads what plans read besides the schedules
// (timing.Inputs): the namespaces' jitter windows (over wide, the
// scheduler-wide one) and their calendars, compiled in zone, of the
// namespaces named (none: every namespace and the default one).
func (sc Schedule) TimingInputs(ctx context.Context, wide time.Duration, zone *time.Location, namespaces ...string) (timing.Inputs, error) {
	in := timing.Inputs{Zone: zone, Wide: wide, Jitters: map[string]time.Duration{}, Calendars: map[string]timing.Compiled{}}
	recs, err := sc.r.Tenancy().Namespaces(ctx)
	if err != nil {
		return timing.Inputs{}, fmt.Errorf("read the namespaces' jitter windows: %w", err)
	}
	for _, r := range recs {
		if r.Jitter != "" {
			in.Jitters[r.Name] = r.JitterOr(wide)
		}
	}
	if len(namespaces) == 0 { // those holding a calendar: one read, not one per namespace
		if namespaces, err = sc.r.phys.Children(ctx, calendarsPath); err != nil {
			return timing.Inputs{}, fmt.Errorf("list the namespaces' calendars: %w", err)
		}
	}
	for _, ns := range namespaces {
		cals, err := sc.Calendars(ctx, ns)
		if err != nil {
			return timing.Inputs{}, fmt.Errorf("read the calendars of namespace %s: %w", ns, err)
		}
		for _, c := range cals {
			compiled, err := c.Compile(zone)
			in.Calendars[timing.CalendarKey(ns, c.Name)] = timing.Compiled{Calendar: compiled, Err: err, Source: string(mustJSON(c))}
		}
	}
	return in, nil
}
