package api_test

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/api"
	"github.com/ejcloud/elasticjob/jobs/cron"
)

const holidaysICS = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\n" +
	"BEGIN:VEVENT\r\nDTSTART;VALUE=DATE:20240304\r\nDTEND;VALUE=DATE:20240306\r\nSUMMARY:Closed\r\nEND:VEVENT\r\n" +
	"BEGIN:VEVENT\r\nDTSTART;VALUE=DATE:20241225\r\nRRULE:FREQ=YEARLY\r\nSUMMARY:Christmas\r\nEND:VEVENT\r\n" +
	"END:VCALENDAR\r\n"

func (tn *tenancy) callICS(target, body, user, pass string) *httptest.ResponseRecorder {
	req := httptest.NewRequest("PUT", target, strings.NewReader(body))
	req.Header.Set("Content-Type", "text/calendar; charset=utf-8")
	req.SetBasicAuth(user, pass)
	w := httptest.NewRecorder()
	tn.h.ServeHTTP(w, req)
	return w
}

// A team's calendars are its own: pay's editor writes them (JSON or .ics),
// its viewer reads them, search's users see neither.
func TestCalendarsPerNamespace(t *testing.T) {
	tn := twoTeamsAPI(t)
	w := tn.call("PUT", "/api/namespaces/pay/calendars/biz", `{"timeZone":"UTC","weekdays":["fri","MON","TUE","WED","THU"],"exclude":[{"from":"2024-03-04"}]}`, "alice", "secret")
	if w.Code != 201 || !strings.Contains(w.Body.String(), `"weekdays":["MON","TUE","WED","THU","FRI"]`) {
		t.Fatalf("create: %d %s", w.Code, w.Body)
	}
	if w := tn.call("PUT", "/api/namespaces/pay/calendars/biz", `{"weekdays":["MON"]}`, "alice", "secret"); w.Code != 200 {
		t.Fatalf("replace: %d %s", w.Code, w.Body)
	}
	w = tn.callICS("/api/namespaces/pay/calendars/holidays?timeZone=UTC&weekdays=MON,TUE,WED,THU,FRI", holidaysICS, "alice", "secret")
	if w.Code != 201 || !strings.Contains(w.Body.String(), `"summary":"Christmas","from":"2024-12-25","repeat":"YEARLY"`) {
		t.Fatalf("import .ics: %d %s", w.Code, w.Body)
	}
	// A feed answering garbage or an error page is refused, and the
	// stored calendar keeps its holidays.
	for _, body := range []string{"garbage", "<html>502 Bad Gateway</html>", "BEGIN:VCALENDAR\r\nEND:VCALENDAR\r\n"} {
		if w := tn.callICS("/api/namespaces/pay/calendars/holidays?timeZone=UTC", body, "alice", "secret"); w.Code != 400 {
			t.Fatalf("import %q: %d %s, want 400", body, w.Code, w.Body)
		}
	}
	if w := tn.call("GET", "/api/namespaces/pay/calendars/holidays", "", "alice", "secret"); !strings.Contains(w.Body.String(), "Christmas") {
		t.Fatalf("after refused imports: %d %s", w.Code, w.Body)
	}
	for _, tc := range []struct {
		method, target, body, user, pass string
		code                             int
	}{
		{"GET", "/api/namespaces/pay/calendars", "", "carol", "pw3", 200},
		{"GET", "/api/namespaces/pay/calendars/holidays", "", "carol", "pw3", 200},
		{"PUT", "/api/namespaces/pay/calendars/x", `{}`, "carol", "pw3", 403},
		{"GET", "/api/namespaces/pay/calendars", "", "bob", "hunter2", 403},
		{"GET", "/api/namespaces/pay/calendars/holidays", "", "bob", "hunter2", 403},
		{"DELETE", "/api/namespaces/pay/calendars/holidays", "", "bob", "hunter2", 403},
		{"GET", "/api/namespaces/search/calendars/holidays", "", "bob", "hunter2", 404},
		{"PUT", "/api/namespaces/pay/calendars/Bad", `{}`, "alice", "secret", 400},
		{"PUT", "/api/namespaces/pay/calendars/x", `{"name":"y"}`, "alice", "secret", 400},
		{"PUT", "/api/namespaces/pay/calendars/x", `{"weekdays":["MONDAY"]}`, "alice", "secret", 400},
		{"PUT", "/api/namespaces/pay/calendars/x", `{"exclude":[{"from":"25.12.2024"}]}`, "alice", "secret", 400},
	} {
		if w := tn.call(tc.method, tc.target, tc.body, tc.user, tc.pass); w.Code != tc.code {
			t.Errorf("%s %s as %s: %d %s, want %d", tc.method, tc.target, tc.user, w.Code, w.Body, tc.code)
		}
	}
	if w := tn.callICS("/api/namespaces/pay/calendars/bad", "BEGIN:VCALENDAR\nBEGIN:VEVENT\nDTSTART;VALUE=DATE:20241225\nRRULE:FREQ=DAILY\nEND:VEVENT\nEND:VCALENDAR\n", "alice", "secret"); w.Code != 400 || !strings.Contains(w.Body.String(), "FREQ=DAILY") {
		t.Errorf("a DAILY rule: %d %s", w.Code, w.Body)
	}
	var list []map[string]any
	w = tn.call("GET", "/api/namespaces/pay/calendars", "", "alice", "secret")
	if err := json.Unmarshal(w.Body.Bytes(), &list); err != nil || len(list) != 2 {
		t.Fatalf("list: %s", w.Body)
	}
}

// A job names a calendar of its namespace; its next fires (the API's and
// the status's) honour H, its jitter and the calendar, computed by the
// same function the leader fires with.
func TestJobNextHonoursJitterAndCalendar(t *testing.T) {
	tn := twoTeamsAPI(t, func(o *api.Options) { o.Schedules.Location = time.UTC })
	if w := tn.callICS("/api/namespaces/pay/calendars/holidays?timeZone=UTC&weekdays=MON,TUE,WED,THU,FRI", holidaysICS, "alice", "secret"); w.Code != 201 {
		t.Fatalf("import: %d %s", w.Code, w.Body)
	}
	if w := tn.call("PUT", "/api/job/update?namespace=pay", `{"jobName":"nightly","cron":"0 0 9 * * ?","calendar":"missing"}`, "alice", "secret"); w.Code != 400 || !strings.Contains(w.Body.String(), "calendar") {
		t.Fatalf("a missing calendar: %d %s", w.Code, w.Body)
	}
	w := tn.call("PUT", "/api/job/update?namespace=pay", `{"jobName":"nightly","cron":"0 0 9 * * ?","crons":["0 H 17 * * ?"],"jitter":"10m","calendar":"holidays"}`, "alice", "secret")
	if w.Code != 200 {
		t.Fatalf("update: %d %s", w.Code, w.Body)
	}
	w = tn.call("GET", "/api/jobs/nightly/next?namespace=pay&count=4", "", "carol", "pw3")
	var ans api.JobNext
	if err := json.Unmarshal(w.Body.Bytes(), &ans); err != nil || w.Code != 200 {
		t.Fatalf("next: %d %s", w.Code, w.Body)
	}
	// The leader's key is pay~nightly: H and the offset hash it.
	off := cron.Offset("pay~nightly", 10*time.Minute)
	h, _ := cron.ParseFor("0 H 17 * * ?", "pay~nightly")
	evening := h.Next(time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC), time.UTC).Add(off)
	// t0 is Friday 2024-03-01 12:00; the 2nd-3rd are a weekend, the 4th-5th closed.
	want := []time.Time{evening, time.Date(2024, 3, 6, 9, 0, 0, 0, time.UTC).Add(off), evening.AddDate(0, 0, 5), time.Date(2024, 3, 7, 9, 0, 0, 0, time.UTC).Add(off)}
	if ans.JitterSeconds != int64(off/time.Second) || len(ans.Fires) != 4 || ans.Calendar != "holidays" {
		t.Fatalf("next: %+v", ans)
	}
	for i, f := range ans.Fires {
		got, _ := time.Parse(time.RFC3339, f)
		if !got.Equal(want[i]) {
			t.Errorf("fire %d: %s, want %s", i, got, want[i])
		}
	}
	// The calendar cannot go while the job names it.
	if w := tn.call("DELETE", "/api/namespaces/pay/calendars/holidays", "", "alice", "secret"); w.Code != 409 || !strings.Contains(w.Body.String(), "nightly") {
		t.Fatalf("delete a calendar in use: %d %s", w.Code, w.Body)
	}
	// A workflow names a calendar too.
	flow := `{"name":"flow","cron":"0 0 9 * * ?","calendar":"%s","nodes":[{"id":"a","job":"nightly"}]}`
	if w := tn.call("PUT", "/api/workflow?namespace=pay", strings.Replace(flow, "%s", "missing", 1), "alice", "secret"); w.Code != 400 || !strings.Contains(w.Body.String(), "calendar") {
		t.Fatalf("a workflow naming a missing calendar: %d %s", w.Code, w.Body)
	}
	if w := tn.call("PUT", "/api/workflow?namespace=pay", strings.Replace(flow, "%s", "holidays", 1), "alice", "secret"); w.Code != 200 {
		t.Fatalf("a workflow naming a calendar: %d %s", w.Code, w.Body)
	}
	w = tn.call("GET", "/api/workflow/flow?namespace=pay", "", "alice", "secret")
	if !strings.Contains(w.Body.String(), `"nextFireTime":"2024-03-06T09:00:00Z"`) {
		t.Fatalf("the workflow's next fire skips the calendar's days: %s", w.Body)
	}
	if w := tn.call("PUT", "/api/job/update?namespace=pay", `{"jobName":"nightly","cron":"0 0 9 * * ?","calendar":""}`, "alice", "secret"); w.Code != 200 {
		t.Fatalf("update: %d %s", w.Code, w.Body)
	}
	if w := tn.call("DELETE", "/api/namespaces/pay/calendars/holidays", "", "alice", "secret"); w.Code != 409 || !strings.Contains(w.Body.String(), "workflow flow") {
		t.Fatalf("delete a calendar a workflow names: %d %s", w.Code, w.Body)
	}
	if w := tn.call("GET", "/api/jobs/nightly/next?namespace=pay&count=0", "", "alice", "secret"); w.Code != 400 {
		t.Errorf("count=0: %d", w.Code)
	}
	if w := tn.call("GET", "/api/jobs/nightly/next?namespace=pay", "", "bob", "hunter2"); w.Code != 403 {
		t.Errorf("another team's job: %d", w.Code)
	}
}

// A namespace's jitter window is what its jobs without one inherit; a
// job's own (0s here) wins.
func TestNamespaceJitterIsInherited(t *testing.T) {
	tn := twoTeamsAPI(t, func(o *api.Options) { o.Schedules.Location = time.UTC; o.Schedules.CronJitter = 5 * time.Minute })
	next := func() api.JobNext {
		t.Helper()
		var ans api.JobNext
		w := tn.call("GET", "/api/jobs/nightly/next?namespace=pay&count=1", "", "alice", "secret")
		if err := json.Unmarshal(w.Body.Bytes(), &ans); err != nil || w.Code != 200 {
			t.Fatalf("next: %d %s", w.Code, w.Body)
		}
		return ans
	}
	if got, want := next().JitterSeconds, int64(cron.Offset("pay~nightly", 5*time.Minute)/time.Second); got != want {
		t.Fatalf("the scheduler's window: offset %d s, want %d", got, want)
	}
	if w := tn.call("PUT", "/api/namespaces/pay", `{"jitter":"1h"}`, "root", "s3cret"); w.Code != 200 || !strings.Contains(w.Body.String(), `"jitter":"1h"`) {
		t.Fatalf("set pay's jitter: %d %s", w.Code, w.Body)
	}
	if got, want := next().JitterSeconds, int64(cron.Offset("pay~nightly", time.Hour)/time.Second); got != want {
		t.Fatalf("the namespace's window: offset %d s, want %d", got, want)
	}
	if w := tn.call("PUT", "/api/job/update?namespace=pay", `{"jobName":"nightly","cron":"0 0 * * * ?","jitter":"0s"}`, "alice", "secret"); w.Code != 200 {
		t.Fatalf("update: %d %s", w.Code, w.Body)
	}
	if got := next().JitterSeconds; got != 0 {
		t.Fatalf("a job opting out: offset %d s", got)
	}
	if w := tn.call("PUT", "/api/namespaces/pay", `{"jitter":"2 days"}`, "root", "s3cret"); w.Code != 400 {
		t.Fatalf("a bad namespace jitter: %d %s", w.Code, w.Body)
	}
}
