package api_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/api"
	"github.com/ejcloud/elasticjob/history"
	"github.com/ejcloud/elasticjob/history/view"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/migrations"
	"github.com/jmoiron/sqlx"
	_ "modernc.org/sqlite"
)

// fakeHistory answers with fixed rows and records the decoded requests.
type fakeHistory struct {
	queries []view.Query
	since   []view.Since
	err     error
}

func ptr[T any](v T) *T { return &v }

func (f *fakeHistory) Executions(_ context.Context, q view.Query) (view.Page[view.Execution], error) {
	f.queries = append(f.queries, q)
	if f.err != nil {
		return view.Page[view.Execution]{}, f.err
	}
	return view.Page[view.Execution]{Total: 31, Rows: []view.Execution{
		{ID: "8c3a…-1", Hostname: "agent-1", IP: "10.0.0.7", TaskID: "my_job@-@0@-@READY@-@agent-1@-@1f2e", JobName: "my_job",
			Source: "NORMAL_TRIGGER", ShardingItem: 0, StartTime: ptr(t0), CompleteTime: ptr(t0.Add(2 * time.Second)), Success: true},
		{ID: "8c3a…-2", Hostname: "agent-1", IP: "10.0.0.7", TaskID: "my_job@-@1@-@READY@-@agent-1@-@1f2f", JobName: "my_job",
			Source: "FAILOVER", ShardingItem: 1, StartTime: ptr(t0), FailureCause: ptr("exit status 3: disk full")},
	}}, nil
}

func (f *fakeHistory) StatusTraces(_ context.Context, q view.Query) (view.Page[view.StatusTrace], error) {
	f.queries = append(f.queries, q)
	return view.Page[view.StatusTrace]{Total: 1, Rows: []view.StatusTrace{
		{ID: "tr-1", JobName: "my_job", OriginalTaskID: "my_job@-@0@-@READY@-@agent-1@-@1f2e", TaskID: "my_job@-@0@-@READY@-@agent-1@-@1f2e",
			SlaveID: "agent-1", Source: "CLOUD_SCHEDULER", ExecutionType: "READY", ShardingItems: "0", State: "TASK_STAGING", Message: ptr(""), CreationTime: ptr(t0)},
	}}, f.err
}

func (f *fakeHistory) TaskResults(_ context.Context, _ string, since view.Since) ([]view.TaskResult, error) {
	f.since = append(f.since, since)
	return []view.TaskResult{
		{ID: 0, StatisticInterval: view.Minute, StatisticsTime: t0.Add(-2 * time.Minute), CreationTime: t0.Add(-2 * time.Minute)},
		{ID: 7, SuccessCount: 12, FailedCount: 1, StatisticInterval: view.Minute, StatisticsTime: t0.Add(-time.Minute), CreationTime: t0},
	}, f.err
}

func (f *fakeHistory) TaskResultSummary(_ context.Context, _ string, p view.Since) (view.TaskResult, error) {
	f.since = append(f.since, p)
	if p == "bogus" {
		return view.TaskResult{}, fmt.Errorf("%w: period must be online, lastWeek, lastHour or lastMinute, got %q", view.ErrBadQuery, p)
	}
	return view.TaskResult{SuccessCount: 40, FailedCount: 2, StatisticInterval: view.Day, StatisticsTime: t0, CreationTime: t0}, nil
}

func (f *fakeHistory) running(since view.Since, n int) ([]view.Running, error) {
	f.since = append(f.since, since)
	return []view.Running{{ID: 3, RunningCount: n, StatisticsTime: t0, CreationTime: t0.Add(time.Second)}}, f.err
}

func (f *fakeHistory) TaskRunning(_ context.Context, _ string, since view.Since) ([]view.Running, error) {
	return f.running(since, 6)
}

func (f *fakeHistory) JobRunning(_ context.Context, _ string, since view.Since) ([]view.Running, error) {
	return f.running(since, 2)
}

func (f *fakeHistory) JobRegistered(context.Context, string) ([]view.Registered, error) {
	return []view.Registered{{ID: 1, RegisteredCount: 3, StatisticsTime: t0.Truncate(24 * time.Hour), CreationTime: t0}}, f.err
}

var _ api.History = (*fakeHistory)(nil)
var _ api.History = (*history.Store)(nil)

func withHistory(h api.History) envOpt {
	return func(o *api.Options, _ *api.Credentials) { o.Live.History = h }
}

func TestHistoryGolden(t *testing.T) {
	f := &fakeHistory{}
	e := newEnv(t, withHistory(f))
	for _, c := range []struct{ golden, path string }{
		{"history_executions", "/api/job/events/executions?per_page=2&page=1&sort=startTime&order=desc&jobName=my_job"},
		{"history_status_traces", "/api/job/events/statusTraces?taskId=t1"},
		{"history_task_results", "/api/job/statistics/tasks/results?since=last24hours"},
		{"history_task_results_online", "/api/job/statistics/tasks/results/online"},
		{"history_tasks_running", "/api/job/statistics/tasks/running?since=lastWeek"},
		{"history_jobs_running", "/api/job/statistics/jobs/running?since=lastWeek"},
		{"history_jobs_register", "/api/job/statistics/jobs/register"},
	} {
		golden(t, c.golden, e.must(http.StatusOK, http.MethodGet, c.path, "").Body)
	}
	if want := []view.Since{view.Last24Hours, view.Online, view.LastWeek, view.LastWeek}; !reflect.DeepEqual(f.since, want) {
		t.Errorf("since %v, want %v", f.since, want)
	}
}

func TestHistoryDecodesSearch(t *testing.T) {
	f := &fakeHistory{}
	e := newEnv(t, withHistory(f))
	v := url.Values{"per_page": {"25"}, "page": {"3"}, "sort": {"start_time"}, "order": {"asc"},
		"startTime": {"2024-03-01 10:00:00"}, "endTime": {"2024-03-01T12:30:00+01:00"},
		"jobName": {"it's \"quoted\""}, "isSuccess": {"false"}, "ip": {""}, "_": {"1709290000000"}}
	e.must(http.StatusOK, http.MethodGet, "/api/job/events/executions?"+v.Encode(), "")
	want := view.Query{Page: 3, PerPage: 25, Sort: "start_time", Order: "asc",
		Start: time.Date(2024, 3, 1, 10, 0, 0, 0, time.Local), End: time.Date(2024, 3, 1, 11, 30, 0, 0, time.UTC),
		Filters: map[string]string{"jobName": `it's "quoted"`, "isSuccess": "false"}, Namespaces: []string{"default"}}
	got := f.queries[0]
	if !got.Start.Equal(want.Start) || !got.End.Equal(want.End) {
		t.Errorf("times %v %v, want %v %v", got.Start, got.End, want.Start, want.End)
	}
	got.Start, got.End, want.Start, want.End = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("query %+v, want %+v", got, want)
	}
	e.must(http.StatusOK, http.MethodGet, "/api/job/events/statusTraces?startTime=2024-03-01", "")
	if q := f.queries[1]; !q.Start.Equal(time.Date(2024, 3, 1, 0, 0, 0, 0, time.Local)) || q.Page != 0 || len(q.Filters) != 0 {
		t.Errorf("traces query %+v", q)
	}
}

func TestHistoryBadRequests(t *testing.T) {
	e := newEnv(t, withHistory(&fakeHistory{}))
	for _, c := range []struct{ path, msg string }{
		{"/api/job/events/executions?startTime=2024-13-01+00:00:00", `startTime "2024-13-01 00:00:00" is not a time; use yyyy-MM-dd HH:mm:ss or RFC 3339`},
		{"/api/job/events/statusTraces?endTime=yesterday", `endTime "yesterday" is not a time`},
		{"/api/job/events/executions?page=two", `page must be a positive integer, got "two"`},
		{"/api/job/events/executions?per_page=0", `per_page must be a positive integer, got "0"`},
		{"/api/job/statistics/tasks/results/bogus", `period must be online, lastWeek, lastHour or lastMinute, got "bogus"`},
	} {
		e.wantError(e.request(http.MethodGet, c.path, ""), http.StatusBadRequest, c.msg)
	}
	// A store fault is a 500, not a 400.
	f := &fakeHistory{err: errors.New("database is locked")}
	e = newEnv(t, withHistory(f))
	e.wantError(e.request(http.MethodGet, "/api/job/events/executions", ""), http.StatusInternalServerError, "database is locked")
}

func TestHistoryOff(t *testing.T) {
	e := newEnv(t)
	for _, c := range []struct{ path, want string }{
		{"/api/job/events/executions?jobName=x&page=2", `{"total":0,"rows":[]}`},
		{"/api/job/events/statusTraces", `{"total":0,"rows":[]}`},
		{"/api/job/statistics/tasks/results?since=last24hours", `[]`},
		{"/api/job/statistics/tasks/results", `[]`},
		{"/api/job/statistics/tasks/running?since=lastWeek", `[]`},
		{"/api/job/statistics/jobs/running?since=lastWeek", `[]`},
		{"/api/job/statistics/jobs/register", `[]`},
		{"/api/job/statistics/tasks/results/lastHour", `{"id":0,"successCount":0,"failedCount":0,"statisticInterval":"HOUR","statisticsTime":"2024-03-01T12:00:00Z","creationTime":"2024-03-01T12:00:00Z"}`},
		{"/api/job/statistics/tasks/results/online", `{"id":0,"successCount":0,"failedCount":0,"statisticInterval":"DAY","statisticsTime":"2024-03-01T12:00:00Z","creationTime":"2024-03-01T12:00:00Z"}`},
		{"/api/job/statistics/jobs/executionType", `{"transientJobCount":0,"daemonJobCount":0}`},
	} {
		if got := e.must(http.StatusOK, http.MethodGet, c.path, "").String(); got != c.want {
			t.Errorf("%s = %s, want %s", c.path, got, c.want)
		}
	}
	e.wantError(e.request(http.MethodGet, "/api/job/events/executions?endTime=2024-02-30", ""), http.StatusBadRequest, "endTime")
}

func TestHistoryExecutionType(t *testing.T) {
	e := newEnv(t)
	e.must(http.StatusOK, http.MethodPost, "/api/app", appBody("app"))
	for _, j := range []struct {
		name string
		typ  jobs.ExecutionType
	}{{"t1", jobs.Transient}, {"t2", jobs.Transient}, {"d1", jobs.Daemon}} {
		e.must(http.StatusOK, http.MethodPost, "/api/job/register",
			`{"jobName":"`+j.name+`","appName":"app","jobExecutionType":"`+string(j.typ)+`","cron":"0 * * * * ?","shardingTotalCount":1,"cpuCount":0.1,"memoryMB":32}`)
	}
	if got := e.must(http.StatusOK, http.MethodGet, "/api/job/statistics/jobs/executionType", "").String(); got != `{"transientJobCount":2,"daemonJobCount":1}` {
		t.Errorf("executionType = %s", got)
	}
}

// Through the real store on SQLite: injection attempts and unknown columns
// are 400s naming the problem, and quoted values are only values.
func TestHistoryRealStoreRejects(t *testing.T) {
	path := filepath.Join(t.TempDir(), "trace.db")
	migratedDB(t, path)
	db, err := sqlx.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := migrations.Apply(context.Background(), db.DB, migrations.SQLite); err != nil {
		t.Fatal(err)
	}
	db.MustExec(`INSERT INTO JOB_EXECUTION_LOG (id, job_name, task_id, hostname, ip, sharding_item, execution_source, is_success, start_time)
		VALUES ('1', 'my_job', 't', 'h', '10.0.0.1', 0, 'NORMAL_TRIGGER', 1, '2024-03-01 11:00:00.000')`)
	st, err := history.New(db, history.SQLite, history.Options{Location: time.UTC})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, withHistory(st))
	for _, c := range []struct{ query, msg string }{
		{"sort=" + url.QueryEscape("job_name;DROP TABLE JOB_EXECUTION_LOG"), `cannot sort by "job_name;DROP TABLE JOB_EXECUTION_LOG"; sort by completeTime, executionSource, hostname, id, ip, isSuccess, jobName, nominalAt, result, shardingItem, startTime, taskId, triggeredBy`},
		{"sort=jobName&order=" + url.QueryEscape("asc,(SELECT 1)"), "order must be asc or desc"},
		{"slaveId=a1", `unknown filter "slaveId"`},
		{url.QueryEscape("1=1 OR job_name") + "=x", `unknown parameter "1=1 OR job_name"`},
		{"isSuccess=maybe", "isSuccess must be true, false, 1 or 0"},
		{"per_page=5000", "per_page must be between 1 and 1000"},
		{"startTime=2024-03-02+00:00:00&endTime=2024-03-01+00:00:00", "startTime is after endTime"},
	} {
		e.wantError(e.request(http.MethodGet, "/api/job/events/executions?"+c.query, ""), http.StatusBadRequest, c.msg)
	}
	for q, want := range map[string]string{
		"jobName=" + url.QueryEscape("my_job' OR '1'='1"):                            `{"total":0,"rows":[]}`,
		"jobName=my_job&isSuccess=true&startTime=2024-03-01T10:59:59Z&sort=job_name": `"total":1`,
	} {
		if got := e.must(http.StatusOK, http.MethodGet, "/api/job/events/executions?"+q, "").String(); !strings.Contains(got, want) {
			t.Errorf("%s = %s, want %s", q, got, want)
		}
	}
}
