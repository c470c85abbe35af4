package api_test

import (
	"net/http"
	"testing"
)

// TestDuplicateKeysAreRefusedOnEveryJSONRoute: encoding/json keeps a
// key's last value, so a body naming one twice registered what its sender
// may not have meant; every JSON route refuses it, at any depth.
func TestDuplicateKeysAreRefusedOnEveryJSONRoute(t *testing.T) {
	e := newEnv(t)
	e.must(http.StatusOK, http.MethodPost, "/api/app", appBody("app"))
	e.must(http.StatusOK, http.MethodPost, "/api/job/register", jobBody("j", "app"))
	for _, tc := range []struct{ method, path, body, key string }{
		{http.MethodPost, "/api/app", `{"appName":"a2","appURL":"file:///opt/a.tar.gz","bootstrapScript":"bin/start.sh","cpuCount":1,"cpuCount":2}`, "cpuCount"},
		{http.MethodPut, "/api/app", `{"appName":"app","memoryMB":64,"memoryMB":128}`, "memoryMB"},
		{http.MethodPost, "/api/job/register", `{"jobName":"j2","appName":"app","cron":"0 0 * * * ?","cron":"* * * * * ?","shardingTotalCount":1,"cpuCount":0.1,"memoryMB":32,"jobExecutionType":"TRANSIENT"}`, "cron"},
		{http.MethodPut, "/api/job/update", `{"jobName":"j","props":{"a":"1","b":"2","a":"3"}}`, "a"},
		{http.MethodPut, "/api/namespaces/team", `{"weight":1,"limit":{"cpu":1,"cpu":2}}`, "cpu"},
		{http.MethodPost, "/api/job/trigger", `{"jobName":"j","jobName":"other"}`, "jobName"},
		{http.MethodPost, "/api/workflow", `[{"name":"w"},{"name":"x","name":"y"}]`, "name"},
	} {
		r := e.request(tc.method, tc.path, tc.body)
		e.wantError(r, http.StatusBadRequest, `key "`+tc.key+`" appears twice`)
	}
	// The same keys in different objects, or in an array's objects, are no duplicates.
	e.must(http.StatusOK, http.MethodPut, "/api/job/update", `{"jobName":"j","props":{"jobName":"x","a":"1"},"description":"d"}`)
}

// TestNumbersAsStringsOneRule: the original's console sends its forms'
// numbers as strings, to the app routes as to the job routes; both take a
// string holding a JSON number (or true/false) in any top-level number or
// boolean field, and refuse anything else in it.
func TestNumbersAsStringsOneRule(t *testing.T) {
	e := newEnv(t)
	// As the original console's app form posts it (getApp in app.js).
	got := decode[map[string]any](t, e.must(http.StatusOK, http.MethodPost, "/api/app",
		`{"appName":"app","cpuCount":"1.5","memoryMB":"128","bootstrapScript":"bin/start.sh","appCacheEnable":true,"appURL":"file:///opt/app.tar.gz","eventTraceSamplingCount":"0"}`))
	if got["cpuCount"] != 1.5 || got["memoryMB"] != 128.0 || got["eventTraceSamplingCount"] != 0.0 {
		t.Fatalf("app as stored: %v", got)
	}
	got = decode[map[string]any](t, e.must(http.StatusOK, http.MethodPut, "/api/app", `{"appName":"app","cpuCount":"2","appCacheEnable":"false"}`))
	if got["cpuCount"] != 2.0 || got["appCacheEnable"] != false {
		t.Fatalf("app updated: %v", got)
	}
	e.wantError(e.request(http.MethodPut, "/api/app", `{"appName":"app","cpuCount":"two"}`), http.StatusBadRequest, `field "cpuCount" must be a number, got "two"`)
	e.wantError(e.request(http.MethodPut, "/api/app", `{"appName":"app","memoryMB":"NaN"}`), http.StatusBadRequest, `field "memoryMB" must be a number`)
	// Every number and boolean field of a job, not only the 2.x ones.
	got = decode[map[string]any](t, e.must(http.StatusOK, http.MethodPost, "/api/job/register",
		`{"jobName":"j","appName":"app","cron":"0 0 * * * ?","shardingTotalCount":"2","cpuCount":"0.5","memoryMB":"64","jobExecutionType":"TRANSIENT",`+
			`"startDeadlineSeconds":"30","failover":"true","misfire":"false"}`))
	if got["shardingTotalCount"] != 2.0 || got["startDeadlineSeconds"] != 30.0 || got["failover"] != true || got["misfire"] != false {
		t.Fatalf("job as stored: %v", got)
	}
	e.wantError(e.request(http.MethodPut, "/api/job/update", `{"jobName":"j","runDeadlineSeconds":"soon"}`), http.StatusBadRequest, `field "runDeadlineSeconds" must be a number, got "soon"`)
}

// TestAMalformedQueryIsRefused: Go drops a query pair it cannot parse (a
// ';' is no separator), so ?sort=;DROP TABLE searched unsorted while an
// unknown filter is a 400; both are 400s.
func TestAMalformedQueryIsRefused(t *testing.T) {
	e := newEnv(t)
	e.wantError(e.request(http.MethodGet, "/api/job/events/executions?sort=;DROP%20TABLE", ""), http.StatusBadRequest, "malformed query string", "%3B")
	e.wantError(e.request(http.MethodGet, "/api/job/jobs?a=1;b=2", ""), http.StatusBadRequest, "malformed query string")
	e.must(http.StatusOK, http.MethodGet, "/api/job/events/executions?sort=startTime&order=desc", "")
}
