package history

import (
	"context"
	"database/sql"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/ejcloud/elasticjob/history/view"
)

// kind is how a filter value is checked and bound.
type kind int

const (
	text kind = iota
	integer
	boolean
	upper // text compared in upper case (HTTP methods)
)

// column is a whitelisted column of an event table.
type column struct {
	name    string // the SQL column
	json    string // the row's JSON field
	kind    kind
	filter  bool // may be an equality filter
	sortKey bool // may be sorted on
}

// table describes one searchable event table. Only names from here reach
// the SQL text; every value is a bound parameter.
type table struct {
	name     string
	timeCol  string   // what startTime/endTime bound
	cols     []column // in SELECT order
	byParam  map[string]*column
	selected string
}

var (
	executionTable = newTable("JOB_EXECUTION_LOG", "start_time", []column{
		{"id", "id", text, false, true},
		{"hostname", "hostname", text, true, true},
		{"ip", "ip", text, true, true},
		{"task_id", "taskId", text, true, true},
		{"job_name", "jobName", text, true, true},
		{"execution_source", "source", text, true, true},
		{"sharding_item", "shardingItem", integer, true, true},
		{"start_time", "startTime", text, false, true},
		{"complete_time", "completeTime", text, false, true},
		{"is_success", "success", boolean, true, true},
		{"failure_cause", "failureCause", text, false, false},
		{"triggered_by", "triggeredBy", text, true, true},
		{"nominal_at", "nominalAt", text, false, true},
		{"result", "result", upper, true, true},
	})
	statusTraceTable = newTable("JOB_STATUS_TRACE_LOG", "creation_time", []column{
		{"id", "id", text, false, true},
		{"job_name", "jobName", text, true, true},
		{"original_task_id", "originalTaskId", text, true, true},
		{"task_id", "taskId", text, true, true},
		{"slave_id", "slaveId", text, true, true},
		{"source", "source", text, true, true},
		{"execution_type", "executionType", text, true, true},
		{"sharding_item", "shardingItems", text, false, true},
		{"state", "state", text, true, true},
		{"message", "message", text, false, false},
		{"creation_time", "creationTime", text, false, true},
	})
	auditTable = newTable("AUDIT_LOG", "creation_time", []column{
		{"id", "id", text, false, true},
		{"creation_time", "creationTime", text, false, true},
		{"user_name", "user", text, true, true},
		{"role", "role", text, true, true},
		{"address", "address", text, true, true},
		{"method", "method", upper, true, true},
		{"route", "route", text, true, true},
		{"target_kind", "targetKind", text, true, true},
		{"target", "target", text, true, true},
		{"summary", "summary", text, false, false},
		{"status", "status", integer, true, true},
		{"namespace", "namespace", text, false, true},
	})
)

// newTable indexes the columns by every name a caller may use: the column
// (job_name), its camelCase form (jobName, isSuccess, executionSource) and
// the row's JSON field (success, source, shardingItems).
func newTable(name, timeCol string, cols []column) *table {
	t := &table{name: name, timeCol: timeCol, cols: cols, byParam: map[string]*column{}}
	names := make([]string, len(cols))
	for i := range cols {
		c := &t.cols[i]
		names[i] = c.name
		for _, alias := range []string{c.name, camel(c.name), c.json} {
			t.byParam[strings.ToLower(alias)] = c
		}
	}
	t.selected = strings.Join(names, ", ")
	return t
}

// camel turns snake_case into camelCase: task_id → taskId.
func camel(s string) string {
	parts := strings.Split(s, "_")
	for i := 1; i < len(parts); i++ {
		if parts[i] != "" {
			parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
		}
	}
	return strings.Join(parts, "")
}

func badQuery(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{view.ErrBadQuery}, args...)...)
}

// names lists the accepted camelCase names of the columns ok selects.
func (t *table) names(ok func(column) bool) string {
	var out []string
	for _, c := range t.cols {
		if ok(c) {
			out = append(out, camel(c.name))
		}
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

var paramName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]*$`)

// where builds the WHERE clause and its arguments from the filters and the
// time range.
func (s *Store) where(t *table, q view.Query) (string, []any, error) {
	var conds []string
	var args []any
	keys := make([]string, 0, len(q.Filters))
	for k := range q.Filters {
		keys = append(keys, k)
	}
	sort.Strings(keys) // a stable statement text for the statement caches
	for _, k := range keys {
		v := q.Filters[k]
		c, ok := t.byParam[strings.ToLower(k)]
		if !ok || !c.filter {
			if !paramName.MatchString(k) {
				return "", nil, badQuery("unknown parameter %q", k)
			}
			return "", nil, badQuery("unknown filter %q; filter on %s", k, t.names(func(c column) bool { return c.filter }))
		}
		arg, err := filterValue(k, c, v)
		if err != nil {
			return "", nil, err
		}
		conds = append(conds, c.name+" = ?")
		args = append(args, arg)
	}
	if q.Namespaces != nil { // the namespaces the caller may read (none: no row)
		conds = append(conds, "namespace IN ("+strings.TrimSuffix(strings.Repeat("?, ", max(len(q.Namespaces), 1)), ", ")+")")
		if len(q.Namespaces) == 0 {
			args = append(args, "")
		}
		for _, ns := range q.Namespaces {
			args = append(args, ns)
		}
	}
	if !q.Start.IsZero() {
		conds = append(conds, t.timeCol+" >= ?")
		args = append(args, s.d.bindTime(q.Start))
	}
	if !q.End.IsZero() {
		conds = append(conds, t.timeCol+" <= ?")
		args = append(args, s.d.bindTime(q.End))
	}
	if len(conds) == 0 {
		return "", nil, nil
	}
	return " WHERE " + strings.Join(conds, " AND "), args, nil
}

func filterValue(param string, c *column, v string) (any, error) {
	switch c.kind {
	case integer:
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil {
			return nil, badQuery("%s must be an integer, got %q", param, v)
		}
		return n, nil
	case boolean:
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "1", "true":
			return 1, nil
		case "0", "false":
			return 0, nil
		}
		return nil, badQuery("%s must be true, false, 1 or 0, got %q", param, v)
	case upper:
		return strings.ToUpper(strings.TrimSpace(v)), nil
	}
	return v, nil
}

// orderBy builds ORDER BY from the whitelisted sort column. With no sort the
// newest rows come first.
func orderBy(t *table, q view.Query) (string, error) {
	dir := "ASC"
	switch strings.ToLower(q.Order) {
	case "", "asc":
	case "desc":
		dir = "DESC"
	default:
		return "", badQuery("order must be asc or desc, got %q", q.Order)
	}
	// Every order ends on the unique id: rows that tie on the sort column
	// (a launch round starts many tasks in one millisecond) then keep one
	// order from page to page, which MySQL does not promise otherwise.
	if q.Sort == "" {
		return " ORDER BY " + t.timeCol + " DESC, id DESC", nil
	}
	c, ok := t.byParam[strings.ToLower(q.Sort)]
	if !ok || !c.sortKey {
		return "", badQuery("cannot sort by %q; sort by %s", q.Sort, t.names(func(c column) bool { return c.sortKey }))
	}
	if c.name == "id" {
		return " ORDER BY id " + dir, nil
	}
	return " ORDER BY " + c.name + " " + dir + ", id " + dir, nil
}

func paging(q view.Query) (limit, offset int, err error) {
	page, per := q.Page, q.PerPage
	if page == 0 {
		page = 1
	}
	if per == 0 {
		per = view.DefaultPerPage
	}
	if page < 1 || page > 1<<30 {
		return 0, 0, badQuery("page must be between 1 and %d, got %d", 1<<30, q.Page)
	}
	if per < 1 || per > view.MaxPerPage {
		return 0, 0, badQuery("per_page must be between 1 and %d, got %d", view.MaxPerPage, q.PerPage)
	}
	return per, (page - 1) * per, nil
}

// search runs the count (unless !count: the total is then 0) and the page
// query; scan reads one row.
func (s *Store) search(ctx context.Context, t *table, q view.Query, count bool, scan func(rowScanner) error) (int, error) {
	if !q.Start.IsZero() && !q.End.IsZero() && q.Start.After(q.End) {
		return 0, badQuery("startTime is after endTime")
	}
	where, args, err := s.where(t, q)
	if err != nil {
		return 0, err
	}
	order, err := orderBy(t, q)
	if err != nil {
		return 0, err
	}
	limit, offset, err := paging(q)
	if err != nil {
		return 0, err
	}
	if !count {
		return 0, s.page(ctx, t, where+order, append(args, limit, offset), scan)
	}
	var total int
	if err := s.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+t.name+where, args...).Scan(&total); err != nil {
		return 0, fmt.Errorf("history: count %s: %w", t.name, err)
	}
	if total <= offset {
		return total, nil
	}
	return total, s.page(ctx, t, where+order, append(args, limit, offset), scan)
}

// page runs the page query of a search (tail: its WHERE and ORDER BY).
func (s *Store) page(ctx context.Context, t *table, tail string, args []any, scan func(rowScanner) error) error {
	rows, err := s.db.QueryContext(ctx, "SELECT "+t.selected+" FROM "+t.name+tail+" LIMIT ? OFFSET ?", args...)
	if err != nil {
		return fmt.Errorf("history: search %s: %w", t.name, err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := scan(rows); err != nil {
			return fmt.Errorf("history: read %s: %w", t.name, err)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("history: read %s: %w", t.name, err)
	}
	return nil
}

type rowScanner interface{ Scan(dest ...any) error }

// searchPage runs a search whose rows scan reads into a page.
func searchPage[T any](ctx context.Context, s *Store, t *table, q view.Query, scan func(rowScanner) (T, error)) (view.Page[T], error) {
	out := view.Page[T]{Rows: []T{}}
	total, err := s.search(ctx, t, q, true, func(r rowScanner) error {
		row, err := scan(r)
		if err == nil {
			out.Rows = append(out.Rows, row)
		}
		return err
	})
	out.Total = total
	return out, err
}

// Executions searches JOB_EXECUTION_LOG.
func (s *Store) Executions(ctx context.Context, q view.Query) (view.Page[view.Execution], error) {
	return searchPage(ctx, s, executionTable, q, scanExecution)
}

// scanExecution reads one JOB_EXECUTION_LOG row of executionTable.selected.
func scanExecution(r rowScanner) (view.Execution, error) {
	var e view.Execution
	var start, complete, nominal dbTime
	var by, result sql.NullString
	err := r.Scan(&e.ID, &e.Hostname, &e.IP, &e.TaskID, &e.JobName, &e.Source, &e.ShardingItem,
		&start, &complete, &e.Success, &e.FailureCause, &by, &nominal, &result)
	e.StartTime, e.CompleteTime, e.TriggeredBy, e.NominalAt = start.ptr(), complete.ptr(), by.String, nominal.ptr()
	if result.Valid {
		e.Result = &result.String
	}
	if e.StartTime != nil && e.CompleteTime != nil {
		ms := max(e.CompleteTime.Sub(*e.StartTime).Milliseconds(), 0)
		e.DurationMs = &ms
	}
	return e, err
}

// StatusTraces searches JOB_STATUS_TRACE_LOG.
func (s *Store) StatusTraces(ctx context.Context, q view.Query) (view.Page[view.StatusTrace], error) {
	return searchPage(ctx, s, statusTraceTable, q, func(r rowScanner) (view.StatusTrace, error) {
		var e view.StatusTrace
		var created dbTime
		err := r.Scan(&e.ID, &e.JobName, &e.OriginalTaskID, &e.TaskID, &e.SlaveID, &e.Source, &e.ExecutionType,
			&e.ShardingItems, &e.State, &e.Message, &created)
		e.CreationTime = created.ptr()
		return e, err
	})
}

// Audits searches AUDIT_LOG (newest first unless sorted otherwise).
func (s *Store) Audits(ctx context.Context, q view.Query) (view.Page[view.Audit], error) {
	return searchPage(ctx, s, auditTable, q, func(r rowScanner) (view.Audit, error) {
		var e view.Audit
		var created dbTime
		err := r.Scan(&e.ID, &created, &e.User, &e.Role, &e.Address, &e.Method, &e.Route, &e.TargetKind,
			&e.Target, &e.Summary, &e.Status, &e.Namespace)
		e.CreationTime = created.ptr()
		return e, err
	})
}
