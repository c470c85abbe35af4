package api_test

import (
	"net/http"
	"net/url"
	"reflect"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/api"
)

func cronPath(q map[string]string) string {
	v := url.Values{}
	for k, x := range q {
		v.Set(k, x)
	}
	return "/api/cron/next?" + v.Encode()
}

func TestCronNextUsesTheSchedulersParser(t *testing.T) {
	e := newEnv(t) // the clock stands at t0 = 2024-03-01T12:00:00Z
	for _, tc := range []struct {
		q    map[string]string
		want api.CronNext
	}{
		{map[string]string{"cron": "0/5 * * * * * ?", "timeZone": "UTC", "count": "3"},
			api.CronNext{Cron: "0/5 * * * * * ?", TimeZone: "UTC", Fires: []string{"2024-03-01T12:00:05Z", "2024-03-01T12:00:10Z", "2024-03-01T12:00:15Z"}}},
		{map[string]string{"cron": "0 0 9 * * ?", "timeZone": "Asia/Shanghai", "count": "2"},
			api.CronNext{Cron: "0 0 9 * * ?", TimeZone: "Asia/Shanghai", Fires: []string{"2024-03-02T09:00:00+08:00", "2024-03-03T09:00:00+08:00"}}},
		{map[string]string{"cron": "0 15 10 ? * 6L", "timeZone": "UTC", "from": "2026-01-01T00:00:00Z"},
			api.CronNext{Cron: "0 15 10 ? * 6L", TimeZone: "UTC", Fires: []string{"2026-01-30T10:15:00Z", "2026-02-27T10:15:00Z",
				"2026-03-27T10:15:00Z", "2026-04-24T10:15:00Z", "2026-05-29T10:15:00Z"}}},
		{map[string]string{"cron": "0 0 0 30 2 ?", "timeZone": "UTC"}, api.CronNext{Cron: "0 0 0 30 2 ?", TimeZone: "UTC", Fires: []string{}}},
	} {
		r := e.must(http.StatusOK, http.MethodGet, cronPath(tc.q), "")
		if got := decode[api.CronNext](t, r); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%v:\n got %+v\nwant %+v", tc.q, got, tc.want)
		}
	}
}

func TestCronNextDefaultsToTheSchedulersZone(t *testing.T) {
	shanghai, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, func(o *api.Options, _ *api.Credentials) { o.Schedules.Location = shanghai })
	got := decode[api.CronNext](t, e.must(http.StatusOK, http.MethodGet, cronPath(map[string]string{"cron": "0 0 9 * * ?", "count": "1"}), ""))
	if got.TimeZone != "Asia/Shanghai" || len(got.Fires) != 1 || got.Fires[0] != "2024-03-02T09:00:00+08:00" {
		t.Fatalf("got %+v", got)
	}
}

func TestCronNextErrorsNameTheField(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		q    map[string]string
		subs []string
	}{
		{map[string]string{}, []string{"cron is required"}},
		{map[string]string{"cron": "0 0 25 * * ?"}, []string{`cron "0 0 25 * * ?": hours: value 25 out of range 0-23`}},
		{map[string]string{"cron": "* * *"}, []string{"cron", "6 or 7 fields"}},
		{map[string]string{"cron": "0 0 0 1 * MON"}, []string{"specify ? in day-of-month or day-of-week"}},
		{map[string]string{"cron": "0 * * * * ?", "timeZone": "Mars/Olympus"}, []string{`timeZone "Mars/Olympus"`}},
		{map[string]string{"cron": "0 * * * * ?", "count": "0"}, []string{"count must be a whole number from 1 to 100"}},
		{map[string]string{"cron": "0 * * * * ?", "count": "101"}, []string{"count"}},
		{map[string]string{"cron": "0 * * * * ?", "count": "five"}, []string{"count"}},
		{map[string]string{"cron": "0 * * * * ?", "from": "yesterday"}, []string{"from must be an RFC 3339 time"}},
	} {
		e.wantError(e.request(http.MethodGet, cronPath(tc.q), ""), http.StatusBadRequest, tc.subs...)
	}
}

func TestCronNextIsReadableByGuests(t *testing.T) {
	e := newEnv(t, withCreds(api.Credentials{AdminUser: "admin", AdminPassword: "pw-admin-1", GuestUser: "guest", GuestPassword: "pw-guest-1"}))
	e.user, e.pass = "guest", "pw-guest-1"
	e.must(http.StatusOK, http.MethodGet, cronPath(map[string]string{"cron": "0 * * * * ?"}), "")
}

// A cron that never fires is refused at registration and update, as Quartz
// refuses to schedule it.
func TestRegistrationRefusesACronThatNeverFires(t *testing.T) {
	e := newEnv(t)
	e.must(http.StatusOK, http.MethodPost, "/api/app", appBody("app"))
	e.wantError(e.request(http.MethodPost, "/api/job/register", `{"jobName":"feb30","appName":"app","cron":"0 0 0 30 2 ?"}`),
		http.StatusBadRequest, `cron "0 0 0 30 2 ?" never fires`)
	e.wantError(e.request(http.MethodPost, "/api/job/register", `{"jobName":"past","appName":"app","cron":"0 0 0 1 1 ? 2020","timeZone":"UTC"}`),
		http.StatusBadRequest, `never fires after 2024-03-01 12:00:00 UTC`)
	e.must(http.StatusOK, http.MethodPost, "/api/job/register", `{"jobName":"ok","appName":"app","cron":"0 0 0 29 2 ?"}`)
	e.wantError(e.request(http.MethodPut, "/api/job/update", `{"jobName":"ok","cron":"0 0 0 31 4 ?"}`),
		http.StatusBadRequest, "never fires")
	// The practice guide's register refuses it too, before it creates the app.
	e.wantError(e.request(http.MethodPost, "/api/jobs/register",
		`{"jobName":"guide","cron":"0 0 0 1 1 ? 2020","timeZone":"UTC","jarPath":"http://repo/x.jar","bootstrapScript":"bin/start.sh"}`),
		http.StatusBadRequest, `never fires after 2024-03-01 12:00:00 UTC`)
	e.wantError(e.request(http.MethodGet, "/api/app/guide", ""), http.StatusNotFound, "Cannot find app 'guide'")
}
