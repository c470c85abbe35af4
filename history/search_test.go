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

// seedSearch writes 12 executions of two jobs, one a minute from base, and
// status traces for the first three.
func seedSearch(t *testing.T, e *testDB) time.Time {
	base := time.Date(2024, 2, 1, 8, 0, 0, 0, time.UTC)
	cause := "exit status 3: boom"
	for i := range 12 {
		job := "job_a"
		if i%3 == 2 {
			job = "job_b"
		}
		x := execution{id: fmt.Sprintf("id-%02d", i), job: job, task: fmt.Sprintf("%s@-@%d@-@READY@-@slave@-@%02d", job, i%2, i),
			host: fmt.Sprintf("host%d", i%2), ip: fmt.Sprintf("10.0.0.%d", i%2), source: "NORMAL_TRIGGER", item: i % 2,
			success: i%4 != 3, start: base.Add(time.Duration(i) * time.Minute)}
		if i == 5 {
			x.source = "FAILOVER"
		}
		if !x.success {
			x.cause = &cause
		}
		if i < 10 {
			done := x.start.Add(1500 * time.Millisecond)
			x.complete = &done
			res := map[bool]string{true: "SUCCEEDED", false: "FAILED"}[x.success]
			if i == 7 {
				res = "KILLED" // a job kill: a failure the original could not tell apart
			}
			x.result = &res
		}
		e.addExecution(t, x)
	}
	for i := range 3 {
		for j, st := range []string{"TASK_STAGING", "TASK_RUNNING", "TASK_FINISHED"} {
			e.addTrace(t, fmt.Sprintf("tr-%d-%d", i, j), "job_a", fmt.Sprintf("orig-%d", i), fmt.Sprintf("task-%d", i), "slave-1",
				"CLOUD_SCHEDULER", "READY", "0", st, "", base.Add(time.Duration(i*3+j)*time.Second))
		}
	}
	return base
}

func ids(p view.Page[view.Execution]) string {
	var out []string
	for _, r := range p.Rows {
		out = append(out, strings.TrimPrefix(r.ID, "id-"))
	}
	return strings.Join(out, ",")
}

func TestSearchExecutions(t *testing.T) {
	eachDB(t, func(t *testing.T, e *testDB) {
		ctx := context.Background()
		base := seedSearch(t, e)
		cases := []struct {
			name  string
			q     view.Query
			total int
			ids   string
		}{
			{"default: newest first, 10 a page", view.Query{}, 12, "11,10,09,08,07,06,05,04,03,02"},
			{"page 2", view.Query{Page: 2}, 12, "01,00"},
			{"page past the end", view.Query{Page: 5, PerPage: 5}, 12, ""},
			{"per_page", view.Query{PerPage: 3, Page: 2, Sort: "startTime", Order: "asc"}, 12, "03,04,05"},
			{"sort snake_case desc", view.Query{PerPage: 3, Sort: "start_time", Order: "DESC"}, 12, "11,10,09"},
			{"sort by id", view.Query{PerPage: 2, Sort: "id"}, 12, "00,01"},
			{"sort by JSON name", view.Query{PerPage: 3, Sort: "success", Order: "asc"}, 12, ""},
			{"jobName", view.Query{Filters: map[string]string{"jobName": "job_b"}, Sort: "startTime", Order: "asc"}, 4, "02,05,08,11"},
			{"isSuccess false", view.Query{Filters: map[string]string{"isSuccess": "false"}, Sort: "id"}, 3, "03,07,11"},
			{"result FAILED", view.Query{Filters: map[string]string{"result": "FAILED"}, Sort: "id"}, 1, "03"},
			{"result killed", view.Query{Filters: map[string]string{"result": "killed"}, Sort: "id"}, 1, "07"},
			{"is_success 1 and job", view.Query{Filters: map[string]string{"is_success": "1", "job_name": "job_b"}, Sort: "id"}, 3, "02,05,08"},
			{"shardingItem", view.Query{Filters: map[string]string{"shardingItem": "1"}, PerPage: 2, Sort: "id"}, 6, "01,03"},
			{"executionSource", view.Query{Filters: map[string]string{"executionSource": "FAILOVER"}}, 1, "05"},
			{"source alias", view.Query{Filters: map[string]string{"source": "FAILOVER"}}, 1, "05"},
			{"hostname and ip", view.Query{Filters: map[string]string{"hostname": "host0", "ip": "10.0.0.0"}, PerPage: 1}, 6, "10"},
			{"taskId", view.Query{Filters: map[string]string{"taskId": "job_a@-@1@-@READY@-@slave@-@07"}}, 1, "07"},
			{"time range inclusive", view.Query{Start: base.Add(2 * time.Minute), End: base.Add(4 * time.Minute), Sort: "startTime", Order: "asc"}, 3, "02,03,04"},
			{"start only", view.Query{Start: base.Add(10 * time.Minute)}, 2, "11,10"},
			{"end only", view.Query{End: base.Add(time.Minute)}, 2, "01,00"},
			{"the benchmark's shape", view.Query{Filters: map[string]string{"jobName": "job_a", "isSuccess": "true"}, Start: base, End: base.Add(6 * time.Minute), Sort: "start_time", Order: "desc"}, 4, "06,04,01,00"},
			{"quotes are values", view.Query{Filters: map[string]string{"jobName": "job_a' OR '1'='1"}}, 0, ""},
			{"comment is a value", view.Query{Filters: map[string]string{"jobName": "job_a\"; --"}}, 0, ""},
		}
		for _, c := range cases {
			got, err := e.store.Executions(ctx, c.q)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			if got.Total != c.total || (c.ids != "" || c.total == 0 || c.q.Page == 5) && ids(got) != c.ids {
				t.Errorf("%s: total %d rows %s, want %d rows %s", c.name, got.Total, ids(got), c.total, c.ids)
			}
		}
		// The row's fields.
		got, err := e.store.Executions(ctx, view.Query{Filters: map[string]string{"taskId": "job_a@-@1@-@READY@-@slave@-@07"}})
		if err != nil {
			t.Fatal(err)
		}
		r := got.Rows[0]
		if r.JobName != "job_a" || r.Hostname != "host1" || r.IP != "10.0.0.1" || r.ShardingItem != 1 || r.Source != "NORMAL_TRIGGER" ||
			r.Success || r.FailureCause == nil || *r.FailureCause != "exit status 3: boom" || r.Result == nil || *r.Result != "KILLED" ||
			r.StartTime == nil || !r.StartTime.Equal(base.Add(7*time.Minute)) ||
			r.CompleteTime == nil || !r.CompleteTime.Equal(base.Add(7*time.Minute+1500*time.Millisecond)) {
			t.Errorf("row %+v", r)
		}
		got, _ = e.store.Executions(ctx, view.Query{Filters: map[string]string{"jobName": "job_b"}})
		if r := got.Rows[0]; r.ID != "id-11" || r.CompleteTime != nil || r.FailureCause == nil || r.Result != nil {
			t.Errorf("running row %+v: want no completeTime", r)
		}
	})
}

func TestSearchStatusTraces(t *testing.T) {
	eachDB(t, func(t *testing.T, e *testDB) {
		ctx := context.Background()
		base := seedSearch(t, e)
		got, err := e.store.StatusTraces(ctx, view.Query{Filters: map[string]string{"taskId": "task-1"}, Sort: "creationTime", Order: "asc"})
		if err != nil {
			t.Fatal(err)
		}
		if got.Total != 3 || got.Rows[0].State != "TASK_STAGING" || got.Rows[2].State != "TASK_FINISHED" {
			t.Fatalf("task-1 traces %+v", got)
		}
		r := got.Rows[1]
		if r.ID != "tr-1-1" || r.JobName != "job_a" || r.OriginalTaskID != "orig-1" || r.SlaveID != "slave-1" || r.Source != "CLOUD_SCHEDULER" ||
			r.ExecutionType != "READY" || r.ShardingItems != "0" || r.Message == nil || r.CreationTime == nil || !r.CreationTime.Equal(base.Add(4*time.Second)) {
			t.Errorf("row %+v", r)
		}
		for _, c := range []struct {
			q     view.Query
			total int
		}{
			{view.Query{Filters: map[string]string{"state": "TASK_FINISHED"}}, 3},
			{view.Query{Filters: map[string]string{"slaveId": "slave-1", "source": "CLOUD_SCHEDULER", "executionType": "READY", "jobName": "job_a"}}, 9},
			{view.Query{Filters: map[string]string{"originalTaskId": "orig-2"}}, 3},
			{view.Query{Start: base.Add(3 * time.Second), End: base.Add(5 * time.Second)}, 3},
			{view.Query{Sort: "shardingItems", Order: "desc", PerPage: 4}, 9},
		} {
			got, err := e.store.StatusTraces(ctx, c.q)
			if err != nil || got.Total != c.total {
				t.Errorf("%+v: total %d err %v, want %d", c.q, got.Total, err, c.total)
			}
		}
	})
}

func TestSearchRejects(t *testing.T) {
	eachDB(t, func(t *testing.T, e *testDB) {
		ctx := context.Background()
		seedSearch(t, e)
		for _, c := range []struct {
			q    view.Query
			want string
		}{
			{view.Query{Sort: "job_name;DROP TABLE JOB_EXECUTION_LOG"}, `cannot sort by "job_name;DROP TABLE JOB_EXECUTION_LOG"`},
			{view.Query{Sort: "failure_cause"}, "cannot sort by"},
			{view.Query{Sort: "1"}, "cannot sort by"},
			{view.Query{Sort: "start_time", Order: "desc; DROP TABLE JOB_EXECUTION_LOG"}, "order must be asc or desc"},
			{view.Query{Filters: map[string]string{"job_name = job_name OR 1": "1"}}, "unknown parameter"},
			{view.Query{Filters: map[string]string{"slaveId": "x"}}, `unknown filter "slaveId"; filter on executionSource, hostname, ip, isSuccess, jobName, result, shardingItem, taskId`},
			{view.Query{Filters: map[string]string{"failureCause": "x"}}, "unknown filter"},
			{view.Query{Filters: map[string]string{"isSuccess": "yes"}}, "isSuccess must be true, false, 1 or 0"},
			{view.Query{Filters: map[string]string{"shardingItem": "1 OR 1=1"}}, "shardingItem must be an integer"},
			{view.Query{PerPage: 1001}, "per_page must be between 1 and 1000"},
			{view.Query{PerPage: -1}, "per_page must be between"},
			{view.Query{Page: -3}, "page must be between"},
			{view.Query{Start: time.Unix(100, 0), End: time.Unix(50, 0)}, "startTime is after endTime"},
		} {
			_, err := e.store.Executions(ctx, c.q)
			if !errors.Is(err, view.ErrBadQuery) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%+v: err %v, want ErrBadQuery with %q", c.q, err, c.want)
			}
		}
		if _, err := e.store.StatusTraces(ctx, view.Query{Filters: map[string]string{"isSuccess": "1"}}); !errors.Is(err, view.ErrBadQuery) {
			t.Errorf("isSuccess on traces: %v", err)
		}
		// Nothing was dropped.
		got, err := e.store.Executions(ctx, view.Query{})
		if err != nil || got.Total != 12 {
			t.Fatalf("after injection attempts: total %d err %v", got.Total, err)
		}
	})
}

// TestSearchPagesOverTies: rows that tie on the sort column are each on
// exactly one page. A launch round starts many tasks in the same
// millisecond; ordered by start time alone, LIMIT/OFFSET pages over the
// tie are free to overlap on MySQL (SQLite's index order happens to hold).
func TestSearchPagesOverTies(t *testing.T) {
	eachDB(t, func(t *testing.T, e *testDB) {
		ctx := context.Background()
		base := time.Date(2024, 2, 1, 8, 0, 0, 0, time.UTC)
		const n = 240
		for i := range n {
			start := base.Add(time.Duration(i%5) * time.Millisecond) // most rows tie with many others
			if i%7 == 0 {
				start = base.Add(time.Second)
			}
			id := fmt.Sprintf("%08x", (i*2654435761)%(1<<32)) // ids in no order of insertion
			e.addExecution(t, execution{id: id, job: "tie", task: "tie@-@0@-@READY@-@s@-@" + id, source: "NORMAL_TRIGGER", success: true, start: start})
		}
		for _, q := range []view.Query{
			{Sort: "startTime", Order: "asc"}, {Sort: "startTime", Order: "desc"}, {Sort: "jobName"}, {},
		} {
			seen := map[string]int{}
			for page := 1; ; page++ {
				q.Page, q.PerPage = page, 7
				got, err := e.store.Executions(ctx, q)
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range got.Rows {
					seen[r.ID]++
				}
				if len(got.Rows) < 7 {
					break
				}
			}
			twice := 0
			for _, c := range seen {
				if c > 1 {
					twice++
				}
			}
			if len(seen) != n || twice > 0 {
				t.Errorf("sort %q %s: %d of %d rows seen, %d more than once", q.Sort, q.Order, len(seen), n, twice)
			}
		}
	})
}
