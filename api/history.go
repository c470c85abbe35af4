package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/ejcloud/elasticjob/history/view"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/namespace"
	"github.com/gin-gonic/gin"
)

// History is what the history endpoints ask of the event trace and
// statistics database (implemented by history.Store): every search names
// the namespaces it reads (view.Query.Namespaces), every statistic its
// namespace. With none configured (Options.Live.History nil) the searches
// answer {"total":0,"rows":[]} and the statistics empty lists and zero
// counts, as the original did without an RDB.
type History interface {
	Executions(ctx context.Context, q view.Query) (view.Page[view.Execution], error)
	StatusTraces(ctx context.Context, q view.Query) (view.Page[view.StatusTrace], error)
	// TaskResults is the per-interval series of ?since=last24hours|lastWeek.
	TaskResults(ctx context.Context, ns string, since view.Since) ([]view.TaskResult, error)
	// TaskResultSummary is /results/{online|lastWeek|lastHour|lastMinute}.
	TaskResultSummary(ctx context.Context, ns string, period view.Since) (view.TaskResult, error)
	TaskRunning(ctx context.Context, ns string, since view.Since) ([]view.Running, error)
	JobRunning(ctx context.Context, ns string, since view.Since) ([]view.Running, error)
	JobRegistered(ctx context.Context, ns string) ([]view.Registered, error)
}

// requestHistory is History as the handlers ask it: of the request's
// namespace alone (nsHistory reads it from the request's context, set by
// authorize), so no handler can read another namespace's rows.
type requestHistory interface {
	Executions(ctx context.Context, q view.Query) (view.Page[view.Execution], error)
	StatusTraces(ctx context.Context, q view.Query) (view.Page[view.StatusTrace], error)
	TaskResults(ctx context.Context, since view.Since) ([]view.TaskResult, error)
	TaskResultSummary(ctx context.Context, period view.Since) (view.TaskResult, error)
	TaskRunning(ctx context.Context, since view.Since) ([]view.Running, error)
	JobRunning(ctx context.Context, since view.Since) ([]view.Running, error)
	JobRegistered(ctx context.Context) ([]view.Registered, error)
}

// nsHistory scopes a History to the request's namespace.
type nsHistory struct{ h History }

func nsIn(ctx context.Context) string {
	if ns, _ := ctx.Value(ctxNamespace).(string); ns != "" {
		return ns
	}
	return namespace.Default
}

func scope(ctx context.Context, q view.Query) view.Query {
	q.Namespaces = []string{nsIn(ctx)}
	return q
}

func (n nsHistory) Executions(ctx context.Context, q view.Query) (view.Page[view.Execution], error) {
	return n.h.Executions(ctx, scope(ctx, q))
}

func (n nsHistory) StatusTraces(ctx context.Context, q view.Query) (view.Page[view.StatusTrace], error) {
	return n.h.StatusTraces(ctx, scope(ctx, q))
}

func (n nsHistory) TaskResults(ctx context.Context, since view.Since) ([]view.TaskResult, error) {
	return n.h.TaskResults(ctx, nsIn(ctx), since)
}

func (n nsHistory) TaskResultSummary(ctx context.Context, period view.Since) (view.TaskResult, error) {
	return n.h.TaskResultSummary(ctx, nsIn(ctx), period)
}

func (n nsHistory) TaskRunning(ctx context.Context, since view.Since) ([]view.Running, error) {
	return n.h.TaskRunning(ctx, nsIn(ctx), since)
}

func (n nsHistory) JobRunning(ctx context.Context, since view.Since) ([]view.Running, error) {
	return n.h.JobRunning(ctx, nsIn(ctx), since)
}

func (n nsHistory) JobRegistered(ctx context.Context) ([]view.Registered, error) {
	return n.h.JobRegistered(ctx, nsIn(ctx))
}

// WorkflowRuns and WorkflowNodes scope the workflow history the same way.
func (n nsHistory) WorkflowRuns(ctx context.Context, q view.Query) (view.Page[view.WorkflowRun], error) {
	w, ok := n.h.(WorkflowHistory)
	if !ok {
		return view.Page[view.WorkflowRun]{Rows: []view.WorkflowRun{}}, nil
	}
	return w.WorkflowRuns(ctx, scope(ctx, q))
}

func (n nsHistory) WorkflowNodes(ctx context.Context, q view.Query) (view.Page[view.WorkflowNode], error) {
	w, ok := n.h.(WorkflowHistory)
	if !ok {
		return view.Page[view.WorkflowNode]{Rows: []view.WorkflowNode{}}, nil
	}
	return w.WorkflowNodes(ctx, scope(ctx, q))
}

// searchParams are the query parameters of the searches that are not
// filters (the original's JobEventRdbSearch.Condition).
var searchParams = map[string]bool{"namespace": true, "page": true, "per_page": true, "sort": true, "order": true, "startTime": true, "endTime": true}

// timeLayouts are the accepted startTime/endTime forms: the original's
// yyyy-MM-dd HH:mm:ss (in the scheduler's zone), an HTML datetime-local
// value, a date alone, and RFC 3339.
var timeLayouts = []string{"2006-01-02 15:04:05", "2006-01-02T15:04:05", "2006-01-02 15:04", "2006-01-02T15:04", "2006-01-02"}

type historyHandlers struct {
	s *core
	h requestHistory
}

// fail writes err, answering the store's bad-query errors with 400.
func (hs *historyHandlers) fail(c *gin.Context, err error) {
	writeError(c, hs.s.log, queryError(err))
}

// queryError turns the store's bad-query errors into bad requests.
func queryError(err error) error {
	if errors.Is(err, view.ErrBadQuery) {
		return fmt.Errorf("%w: %s", ErrBadRequest, strings.TrimPrefix(err.Error(), view.ErrBadQuery.Error()+": "))
	}
	return err
}

// searchQuery decodes the paging, sorting, time range and filters of a
// search. Filters are every other parameter with a value (names starting
// with "_", such as jQuery's cache buster, are ignored); the store rejects
// the ones it does not know.
func searchQuery(v url.Values) (view.Query, error) {
	q := view.Query{Sort: v.Get("sort"), Order: v.Get("order"), Filters: map[string]string{}}
	for _, p := range []struct {
		name string
		dst  *int
	}{{"page", &q.Page}, {"per_page", &q.PerPage}} {
		raw := strings.TrimSpace(v.Get(p.name))
		if raw == "" {
			continue
		}
		n, err := strconv.Atoi(raw)
		if err != nil || n < 1 {
			return q, fmt.Errorf("%w: %s must be a positive integer, got %q", ErrBadRequest, p.name, raw)
		}
		*p.dst = n
	}
	for _, p := range []struct {
		name string
		dst  *time.Time
	}{{"startTime", &q.Start}, {"endTime", &q.End}} {
		raw := strings.TrimSpace(v.Get(p.name))
		if raw == "" {
			continue
		}
		t, err := parseTime(raw)
		if err != nil {
			return q, fmt.Errorf("%w: %s %q is not a time; use yyyy-MM-dd HH:mm:ss or RFC 3339 (2006-01-02T15:04:05Z)", ErrBadRequest, p.name, raw)
		}
		*p.dst = t
	}
	for name, vals := range v {
		if searchParams[name] || strings.HasPrefix(name, "_") || len(vals) == 0 || vals[0] == "" {
			continue
		}
		q.Filters[name] = vals[0]
	}
	return q, nil
}

func parseTime(s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	for _, l := range timeLayouts {
		if t, err := time.ParseInLocation(l, s, time.Local); err == nil {
			return t, nil
		}
	}
	return time.Time{}, errors.New("not a time")
}

func (hs *historyHandlers) executions(c *gin.Context) {
	search(hs, c, requestHistory.Executions)
}

func (hs *historyHandlers) statusTraces(c *gin.Context) {
	search(hs, c, requestHistory.StatusTraces)
}

func search[T any](hs *historyHandlers, c *gin.Context, find func(requestHistory, context.Context, view.Query) (view.Page[T], error)) {
	q, err := searchQuery(c.Request.URL.Query())
	if err != nil {
		hs.fail(c, err)
		return
	}
	if hs.h == nil {
		c.JSON(http.StatusOK, view.Page[T]{Rows: []T{}})
		return
	}
	page, err := find(hs.h, c, q)
	if err != nil {
		hs.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, page)
}

func (hs *historyHandlers) taskResults(c *gin.Context) {
	if hs.h == nil {
		c.JSON(http.StatusOK, []view.TaskResult{})
		return
	}
	out, err := hs.h.TaskResults(c, view.Since(c.Query("since")))
	if err != nil {
		hs.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, out)
}

func (hs *historyHandlers) taskResultSummary(c *gin.Context) {
	period := view.Since(c.Param("period"))
	if hs.h == nil {
		iv := view.Day
		switch period {
		case view.LastHour:
			iv = view.Hour
		case view.LastMinute:
			iv = view.Minute
		}
		now := hs.s.clock.Now().UTC()
		c.JSON(http.StatusOK, view.TaskResult{StatisticInterval: iv, StatisticsTime: now, CreationTime: now})
		return
	}
	out, err := hs.h.TaskResultSummary(c, period)
	if err != nil {
		hs.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, out)
}

func (hs *historyHandlers) running(find func(requestHistory, context.Context, view.Since) ([]view.Running, error)) gin.HandlerFunc {
	return func(c *gin.Context) {
		if hs.h == nil {
			c.JSON(http.StatusOK, []view.Running{})
			return
		}
		out, err := find(hs.h, c, view.Since(c.Query("since")))
		if err != nil {
			hs.fail(c, err)
			return
		}
		c.JSON(http.StatusOK, out)
	}
}

func (hs *historyHandlers) registered(c *gin.Context) {
	if hs.h == nil {
		c.JSON(http.StatusOK, []view.Registered{})
		return
	}
	out, err := hs.h.JobRegistered(c)
	if err != nil {
		hs.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, out)
}

// executionType counts the registered jobs by type from the registry, with
// or without a history database (as the original).
func (hs *historyHandlers) executionType(c *gin.Context) {
	all, err := hs.s.regIn(c).Config().Jobs(c)
	if err != nil {
		writeError(c, hs.s.log, err)
		return
	}
	var out view.JobExecutionType
	for _, j := range all {
		switch j.JobExecutionType {
		case jobs.Transient:
			out.TransientJobCount++
		case jobs.Daemon:
			out.DaemonJobCount++
		}
	}
	c.JSON(http.StatusOK, out)
}
