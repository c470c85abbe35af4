package api_test

import (
	"net/http"
	"strings"
	"testing"
)

func TestErrors(t *testing.T) {

	tests := []struct {
		name         string
		method, path string
		body         string
		code         int
		subs         []string
	}{
		// Bodies.
		{"malformed JSON names the position", "POST", "/api/app", `{"appName":"a",}`, 400, []string{"malformed JSON", "at byte 16"}},
		{"truncated JSON", "POST", "/api/job/register", `{"jobName":"x"`, 400, []string{"malformed JSON"}},
		{"unknown app field", "POST", "/api/app", `{"appName":"a","appURL":"http://h/a.tgz","appPath":"x","bootstrapScript":"b.sh"}`, 400, []string{`unknown field "appPath"`}},
		{"unknown job field", "POST", "/api/job/register", `{"jobName":"x","appName":"app","shardingCount":2}`, 400, []string{`unknown field "shardingCount"`}},
		{"unknown field on update", "PUT", "/api/job/update", `{"jobName":"exists","crom":"0 * * * * ?"}`, 400, []string{`unknown field "crom"`}},
		{"unknown field on app update", "PUT", "/api/app", `{"appName":"app","appCache":false}`, 400, []string{`unknown field "appCache"`}},
		{"wrong type names the field", "POST", "/api/job/register", `{"jobName":"x","appName":"app","shardingTotalCount":true}`, 400, []string{`"shardingTotalCount"`, "bool"}},
		{"an integer, not a int", "POST", "/api/job/register", `{"jobName":"x","appName":"app","shardingTotalCount":1.5}`, 400, []string{`field "shardingTotalCount" must be an integer, got number 1.5`}},
		{"a number, not a float64", "PUT", "/api/app", `{"appName":"app","memoryMB":{}}`, 400, []string{`field "memoryMB" must be a number, got object`}},
		{"a string that is no number", "POST", "/api/job/register", `{"jobName":"x","appName":"app","shardingTotalCount":"3x"}`, 400, []string{`"shardingTotalCount" must be a number, got "3x"`}},
		// Strings ParseFloat takes that are no JSON numbers answered 500 with
		// Go internals; huge numbers were refused with an overflowed figure.
		{"NaN as a string", "POST", "/api/job/register", `{"jobName":"x","appName":"app","cpuCount":"NaN"}`, 400, []string{`field "cpuCount" must be a number, got "NaN"`}},
		{"Infinity as a string", "POST", "/api/job/register", `{"jobName":"x","appName":"app","memoryMB":"Infinity"}`, 400, []string{`field "memoryMB" must be a number, got "Infinity"`}},
		{"-Inf on update", "PUT", "/api/job/update", `{"jobName":"exists","shardingTotalCount":"-Inf"}`, 400, []string{`field "shardingTotalCount" must be a number, got "-Inf"`}},
		{"hex float as a string", "POST", "/api/job/register", `{"jobName":"x","appName":"app","timeoutSeconds":"0x1p4"}`, 400, []string{`field "timeoutSeconds" must be a number`}},
		{"NaN on app", "POST", "/api/app", `{"appName":"a","appURL":"http://h/a.tgz","bootstrapScript":"b.sh","cpuCount":"NaN"}`, 400, []string{`field "cpuCount" must be a number, got "NaN"`}},
		{"job memory overflow", "POST", "/api/job/register", `{"jobName":"x","appName":"app","memoryMB":1e20}`, 400, []string{`memoryMB must be at most`}},
		{"job cpu overflow", "POST", "/api/job/register", `{"jobName":"x","appName":"app","cpuCount":1e20}`, 400, []string{`cpuCount must be at most`}},
		{"app memory overflow", "POST", "/api/app", `{"appName":"a","appURL":"http://h/a.tgz","bootstrapScript":"b.sh","memoryMB":1e20}`, 400, []string{`memoryMB must be at most`}},
		{"wrong type on app", "POST", "/api/app", `{"appName":"a","appURL":"http://h/a.tgz","bootstrapScript":"b.sh","appCacheEnable":"yes"}`, 400, []string{`"appCacheEnable"`}},
		{"wrong type on update", "PUT", "/api/job/update", `{"jobName":"exists","failover":1}`, 400, []string{`"failover"`}},
		{"two values", "POST", "/api/app", `{"appName":"a"} {}`, 400, []string{"malformed JSON", `unexpected "{}" after the value at byte 15`}},
		{"trailing brace", "POST", "/api/app", `{"appName":"a","appURL":"http://h/a.tgz","bootstrapScript":"b.sh"}}`, 400, []string{"malformed JSON", `unexpected "}"`}},
		{"trailing junk on update", "PUT", "/api/job/update", `{"jobName":"exists"} x`, 400, []string{"malformed JSON", `unexpected "x"`}},
		{"array body", "POST", "/api/job/register", `[{"jobName":"x"}]`, 400, []string{"the body must be a JSON object, got array"}},
		{"string body", "POST", "/api/app", `"my_app"`, 400, []string{"the body must be a JSON object, got string"}},
		{"array body on app update", "PUT", "/api/app", `[]`, 400, []string{"the body must be a JSON object, got array"}},
		{"array body on job update", "PUT", "/api/job/update", `[]`, 400, []string{"the body must be a JSON object, got array"}},
		{"empty body app", "POST", "/api/app", ``, 400, []string{"empty"}},
		{"blank body job", "POST", "/api/job/register", "  \n", 400, []string{"empty"}},
		{"empty body update", "PUT", "/api/job/update", ``, 400, []string{"empty"}},
		{"empty body app update", "PUT", "/api/app", ``, 400, []string{"empty"}},
		{"malformed app update names the position", "PUT", "/api/app", `{"appName":"app",]`, 400, []string{"malformed JSON", "at byte"}},
		{"empty trigger body", "POST", "/api/job/trigger", ``, 400, []string{"jobName"}},
		{"empty deregister body", "DELETE", "/api/job/deregister", ``, 400, []string{"jobName"}},
		{"trigger object without jobName", "POST", "/api/job/trigger", `{"name":"exists"}`, 400, []string{`unknown field "name"`}},
		{"trigger object with empty jobName", "POST", "/api/job/trigger", `{"jobName":""}`, 400, []string{`"jobName"`}},
		{"trigger bad idempotency key", "POST", "/api/job/trigger", `{"jobName":"exists","idempotencyKey":"a b"}`, 400, []string{"idempotencyKey"}},
		{"trigger malformed JSON string", "POST", "/api/job/trigger", `"exists`, 400, []string{"malformed JSON"}},
		// Validation.
		{"bad cron names the field", "POST", "/api/job/register", `{"jobName":"x","appName":"app","cron":"0/5 * * *"}`, 400, []string{"cron", "6 or 7 fields"}},
		{"bad cron value", "POST", "/api/job/register", `{"jobName":"x","appName":"app","cron":"61 * * * * ?"}`, 400, []string{"cron", "seconds"}},
		{"bad cron on update", "PUT", "/api/job/update", `{"jobName":"exists","cron":"* * * 1 * 2"}`, 400, []string{"cron", "day-of-month"}},
		{"daemon needs cron", "POST", "/api/job/register", `{"jobName":"x","appName":"app","jobExecutionType":"DAEMON"}`, 400, []string{"cron is required"}},
		{"bad execution type", "POST", "/api/job/register", `{"jobName":"x","appName":"app","jobExecutionType":"ONCE"}`, 400, []string{"jobExecutionType"}},
		{"sharding total", "POST", "/api/job/register", `{"jobName":"x","appName":"app","shardingTotalCount":0}`, 400, []string{"shardingTotalCount"}},
		{"sharding items", "POST", "/api/job/register", `{"jobName":"x","appName":"app","shardingTotalCount":2,"shardingItemParameters":"0=a,2=c"}`, 400, []string{"shardingItemParameters"}},
		{"job cpu", "POST", "/api/job/register", `{"jobName":"x","appName":"app","cpuCount":0.0001}`, 400, []string{"cpuCount"}},
		{"job memory", "POST", "/api/job/register", `{"jobName":"x","appName":"app","memoryMB":0.5}`, 400, []string{"memoryMB"}},
		{"job name charset", "POST", "/api/job/register", `{"jobName":"a/b","appName":"app"}`, 400, []string{"jobName"}},
		{"job name separator", "POST", "/api/job/register", `{"jobName":"a@-@b","appName":"app"}`, 400, []string{"jobName"}},
		{"job name too long", "POST", "/api/job/register", `{"jobName":"` + strings.Repeat("j", 101) + `","appName":"app"}`, 400, []string{"jobName", "100"}},
		{"job name missing", "POST", "/api/job/register", `{"appName":"app"}`, 400, []string{"jobName is required"}},
		{"time zone", "POST", "/api/job/register", `{"jobName":"x","appName":"app","timeZone":"Mars/Olympus"}`, 400, []string{"timeZone"}},
		{"reserved app name", "POST", "/api/app", `{"appName":"list","appURL":"http://h/a.tgz","bootstrapScript":"b.sh"}`, 400, []string{"appName", "reserved"}},
		{"app name charset", "POST", "/api/app", `{"appName":"my app","appURL":"http://h/a.tgz","bootstrapScript":"b.sh"}`, 400, []string{"appName"}},
		{"job needs a package", "POST", "/api/job/register", `{"jobName":"x","appName":"bare"}`, 400, []string{"app 'bare' has no appURL yet", "PUT /api/app/bare/package"}},
		{"job update needs a package", "PUT", "/api/job/update", `{"jobName":"exists","appName":"bare"}`, 400, []string{"app 'bare' has no appURL yet"}},
		{"only HTTP jobs go without app", "POST", "/api/job/register", `{"jobName":"x","jobType":"SCRIPT","props":{"script.command.line":"true"}}`, 400, []string{"appName is required", "HTTP"}},
		{"appURL kept while jobs run it", "PUT", "/api/app", `{"appName":"app","appURL":""}`, 400, []string{"appURL cannot be cleared", "exists"}},
		{"reserved HTTP executor app", "POST", "/api/app", `{"appName":"elasticjob-http","bootstrapScript":"b.sh"}`, 400, []string{"reserved"}},
		{"app URL scheme", "POST", "/api/app", `{"appName":"a","appURL":"ftp://h/a.tgz","bootstrapScript":"b.sh"}`, 400, []string{"appURL"}},
		{"bootstrap required", "POST", "/api/app", `{"appName":"a","appURL":"http://h/a.tgz"}`, 400, []string{"bootstrapScript is required"}},
		{"bootstrap escapes", "POST", "/api/app", `{"appName":"a","appURL":"http://h/a.tgz","bootstrapScript":"../x.sh"}`, 400, []string{"bootstrapScript"}},
		{"app memory", "POST", "/api/app", `{"appName":"a","appURL":"http://h/a.tgz","bootstrapScript":"b.sh","memoryMB":0}`, 400, []string{"memoryMB"}},
		{"sampling count", "POST", "/api/app", `{"appName":"a","appURL":"http://h/a.tgz","bootstrapScript":"b.sh","eventTraceSamplingCount":-1}`, 400, []string{"eventTraceSamplingCount"}},
		// Unknown names and conflicts.
		{"unknown app on register", "POST", "/api/job/register", `{"jobName":"x","appName":"nope"}`, 404, []string{"Cannot find app 'nope', please publish first."}},
		{"duplicate job", "POST", "/api/job/register", `{"jobName":"exists","appName":"app"}`, 409, []string{"Job 'exists' already existed."}},
		{"duplicate app", "POST", "/api/app", `{"appName":"app","appURL":"http://h/a.tgz","bootstrapScript":"b.sh"}`, 409, []string{"App 'app' already existed."}},
		{"unknown job get", "GET", "/api/job/jobs/nope", "", 404, []string{"Cannot find job 'nope', please register first."}},
		{"unknown job trigger", "POST", "/api/job/trigger", "nope", 404, []string{"Cannot find job 'nope'"}},
		{"unknown job deregister body", "DELETE", "/api/job/deregister", "nope", 404, []string{"Cannot find job 'nope'"}},
		{"unknown job deregister path", "DELETE", "/api/job/nope/deregister", "", 404, []string{"Cannot find job 'nope'"}},
		{"unknown job update", "PUT", "/api/job/update", `{"jobName":"nope"}`, 404, []string{"Cannot find job 'nope'"}},
		{"unknown app get", "GET", "/api/app/nope", "", 404, []string{"Cannot find app 'nope'"}},
		{"unknown app update", "PUT", "/api/app", `{"appName":"nope"}`, 404, []string{"Cannot find app 'nope'"}},
		{"unknown app delete", "DELETE", "/api/app/nope", "", 404, []string{"Cannot find app 'nope'"}},
		{"trigger daemon", "POST", "/api/job/trigger", "daemon", 400, []string{"Job 'daemon' is a DAEMON job", "TRANSIENT"}},
		{"trigger disabled job", "POST", "/api/job/trigger", "disabled", 409, []string{"job 'disabled' is disabled"}},
		// Names that are not names never reach the store (no 500s).
		{"trigger dot-dot", "POST", "/api/job/trigger", "..", 400, []string{"jobName"}},
		{"trigger slash", "POST", "/api/job/trigger", "a/../b", 400, []string{"jobName", "may only contain"}},
		{"trigger JSON slash", "POST", "/api/job/trigger", `"a/b"`, 400, []string{"jobName"}},
		{"trigger object slash", "POST", "/api/job/trigger", `{"jobName":"a//b"}`, 400, []string{"jobName"}},
		{"trigger space", "POST", "/api/job/trigger", "exists now", 400, []string{"jobName"}},
		{"deregister NUL", "DELETE", "/api/job/deregister", "x\x00y", 400, []string{"jobName"}},
		{"get app dot-dot", "GET", "/api/app/..", "", 400, []string{"appName"}},
		{"get app escaped dot-dot", "GET", "/api/app/%2e%2e", "", 400, []string{"appName"}},
		{"get app NUL", "GET", "/api/app/a%00b", "", 400, []string{"appName"}},
		{"disable app dot", "POST", "/api/app/./disable", "", 400, []string{"appName"}},
		{"delete app dot-dot", "DELETE", "/api/app/..", "", 400, []string{"appName"}},
		{"get job dot-dot", "GET", "/api/job/jobs/..", "", 400, []string{"jobName"}},
		{"deregister path dot", "DELETE", "/api/job/./deregister", "", 400, []string{"jobName"}},
		{"job disable dot-dot", "GET", "/api/job/%2e%2e/disable", "", 400, []string{"jobName"}},
		{"register app dot-dot", "POST", "/api/app", `{"appName":"..","appURL":"http://h/a.tgz","bootstrapScript":"b.sh"}`, 400, []string{`appName ".." is not a valid name`}},
		{"register job dot", "POST", "/api/job/register", `{"jobName":".","appName":"app"}`, 400, []string{`jobName "." is not a valid name`}},
		// Routing.
		{"unknown endpoint", "GET", "/api/nothing", "", 404, []string{"no such endpoint: GET /api/nothing"}},
		{"unknown job endpoint", "GET", "/api/job/tasks/queued", "", 404, []string{"no such endpoint"}},
		{"unknown root endpoint", "GET", "/nothing", "", 404, []string{"no such endpoint"}},
		{"wrong method on register", "GET", "/api/job/register", "", 405, []string{"method GET is not allowed on /api/job/register"}},
		{"wrong method on trigger", "PUT", "/api/job/trigger", "exists", 405, []string{"method PUT"}},
		{"wrong method on app", "PATCH", "/api/app", "{}", 405, []string{"method PATCH"}},
		{"wrong method on reconcile", "GET", "/api/operate/reconcile/explicit", "", 405, []string{"method GET"}},
	}
	for _, reserved := range []string{"jobs", "tasks", "events", "statistics", "logs", "register", "update", "deregister", "trigger"} {
		tests = append(tests, struct {
			name         string
			method, path string
			body         string
			code         int
			subs         []string
		}{"reserved " + reserved, "POST", "/api/job/register", `{"jobName":"` + reserved + `","appName":"app"}`, 400, []string{"jobName", "reserved"}})
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.must(http.StatusOK, http.MethodPost, "/api/app", appBody("app"))
			e.must(http.StatusOK, http.MethodPost, "/api/app", `{"appName":"bare","bootstrapScript":"b.sh"}`)
			e.must(http.StatusOK, http.MethodPost, "/api/job/register", `{"jobName":"exists","appName":"app"}`)
			e.must(http.StatusOK, http.MethodPost, "/api/job/register", `{"jobName":"daemon","appName":"app","jobExecutionType":"DAEMON","cron":"0/5 * * * * ?"}`)
			e.must(http.StatusOK, http.MethodPost, "/api/job/register", `{"jobName":"disabled","appName":"app"}`)
			e.must(http.StatusNoContent, http.MethodPost, "/api/job/disabled/disable", "")
			e.wantError(e.request(tc.method, tc.path, tc.body), tc.code, tc.subs...)
			if got := e.ops.Wakes(); got != 0 {
				t.Errorf("a rejected request woke the scheduler %d times", got)
			}
		})
	}

}

// TestErrorsLeaveNoTrace: a rejected write changes nothing.
func TestErrorsLeaveNoTrace(t *testing.T) {
	e := newEnv(t)
	e.must(http.StatusOK, http.MethodPost, "/api/app", appBody("app"))
	e.must(http.StatusOK, http.MethodPost, "/api/job/register", jobBody("j", "app"))
	before := string(e.must(http.StatusOK, http.MethodGet, "/api/job/jobs/j", "").Body)
	e.must(http.StatusBadRequest, http.MethodPut, "/api/job/update", `{"jobName":"j","shardingTotalCount":9,"cron":"bad"}`)
	e.must(http.StatusBadRequest, http.MethodPut, "/api/job/update", `{"jobName":"j","shardingTotalCount":9,"nope":1}`)
	if after := string(e.must(http.StatusOK, http.MethodGet, "/api/job/jobs/j", "").Body); after != before {
		t.Errorf("job changed by rejected updates:\n%s\n%s", before, after)
	}
	e.must(http.StatusBadRequest, http.MethodPost, "/api/job/register", `{"jobName":"k","appName":"app","cron":"bad"}`)
	e.must(http.StatusNotFound, http.MethodGet, "/api/job/jobs/k", "")
}

func TestBodyLimit(t *testing.T) {
	e := newEnv(t, withMaxBody(1024))
	big := `{"appName":"a","appURL":"http://h/a.tgz","bootstrapScript":"b.sh","pad":"` + strings.Repeat("x", 1024) + `"}`
	for _, tc := range []struct{ method, path string }{
		{"POST", "/api/app"}, {"PUT", "/api/app"}, {"POST", "/api/job/register"}, {"PUT", "/api/job/update"},
		{"POST", "/api/job/trigger"}, {"DELETE", "/api/job/deregister"}, {"POST", "/api/login"},
	} {
		e.wantError(e.request(tc.method, tc.path, big), http.StatusRequestEntityTooLarge, "exceeds 1024 bytes")
	}
	// Exactly at the limit is accepted as far as size goes.
	atLimit := `{"appName":"a","appURL":"http://h/a.tgz","bootstrapScript":"b.sh"}`
	atLimit += strings.Repeat(" ", 1024-len(atLimit))
	e.must(http.StatusOK, http.MethodPost, "/api/app", atLimit)
}
