package history

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/history/view"
)

// seedAudit writes 10 audit rows a minute apart from base: users root and
// ops, methods POST/DELETE, targets job_0..job_2, statuses 200, 204, 403.
func seedAudit(t *testing.T, e *testDB) time.Time {
	base := time.Date(2024, 2, 1, 8, 0, 0, 0, time.UTC)
	for i := range 10 {
		user, method, status := "root", "POST", 204
		if i%2 == 1 {
			user = "ops"
		}
		if i%5 == 4 {
			method = "DELETE"
		}
		if i == 3 || i == 7 {
			status = 403
		}
		e.exec(t, "INSERT INTO AUDIT_LOG (id, creation_time, user_name, role, address, method, route, target_kind, target, summary, status) "+
			"VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", fmt.Sprintf("a-%02d", i), e.d.bindTime(base.Add(time.Duration(i)*time.Minute)),
			user, "admin", "127.0.0.1", method, "/api/job/trigger", "job", fmt.Sprintf("job_%d", i%3), "triggered", status)
	}
	return base
}

func auditIDs(p view.Page[view.Audit]) string {
	var out []string
	for _, r := range p.Rows {
		out = append(out, strings.TrimPrefix(r.ID, "a-"))
	}
	return strings.Join(out, ",")
}

func TestSearchAudits(t *testing.T) {
	eachDB(t, func(t *testing.T, e *testDB) {
		ctx := context.Background()
		base := seedAudit(t, e)
		for _, c := range []struct {
			name  string
			q     view.Query
			total int
			ids   string
		}{
			{"newest first", view.Query{PerPage: 3}, 10, "09,08,07"},
			{"page 4 of 3", view.Query{PerPage: 3, Page: 4}, 10, "00"},
			{"user", view.Query{Filters: map[string]string{"user": "ops"}, PerPage: 2}, 5, "09,07"},
			{"user_name column", view.Query{Filters: map[string]string{"user_name": "root"}, Sort: "creationTime", Order: "asc", PerPage: 2}, 5, "00,02"},
			{"method, any case", view.Query{Filters: map[string]string{"method": "delete"}}, 2, "09,04"},
			{"target", view.Query{Filters: map[string]string{"target": "job_1"}}, 3, "07,04,01"},
			{"status", view.Query{Filters: map[string]string{"status": "403"}}, 2, "07,03"},
			{"status and user", view.Query{Filters: map[string]string{"status": "403", "user": "ops"}}, 2, "07,03"},
			{"time range", view.Query{Start: base.Add(2 * time.Minute), End: base.Add(4 * time.Minute)}, 3, "04,03,02"},
			{"sort by status", view.Query{Sort: "status", Order: "desc", PerPage: 2}, 10, ""},
		} {
			got, err := e.store.Audits(ctx, c.q)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			if got.Total != c.total || (c.ids != "" && auditIDs(got) != c.ids) {
				t.Errorf("%s: total %d ids %s, want %d %s", c.name, got.Total, auditIDs(got), c.total, c.ids)
			}
		}
		got, err := e.store.Audits(ctx, view.Query{Filters: map[string]string{"target": "job_2"}, PerPage: 1})
		if err != nil || len(got.Rows) != 1 {
			t.Fatalf("one row: %+v %v", got, err)
		}
		r := got.Rows[0]
		if r.ID != "a-08" || r.User != "root" || r.Role != "admin" || r.Address != "127.0.0.1" || r.Method != "POST" ||
			r.Route != "/api/job/trigger" || r.TargetKind != "job" || r.Target != "job_2" || r.Summary != "triggered" ||
			r.Status != 204 || r.CreationTime == nil || !r.CreationTime.Equal(base.Add(8*time.Minute)) {
			t.Errorf("row %+v", r)
		}
		for _, c := range []struct {
			q    view.Query
			want string
		}{
			{view.Query{Filters: map[string]string{"status": "4xx"}}, "status must be an integer"},
			{view.Query{Filters: map[string]string{"summary": "x"}}, "unknown filter"},
			{view.Query{Sort: "summary"}, "cannot sort by"},
		} {
			if _, err := e.store.Audits(ctx, c.q); !errors.Is(err, view.ErrBadQuery) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%+v: %v, want %q", c.q, err, c.want)
			}
		}
	})
}
