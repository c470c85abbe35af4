package ejctl

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/api"
	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/identity"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/namespace"
)

// ejctl calendar set (an .ics file and JSON)/ls/get/rm in a namespace and
// ejctl job next: the fires skip the calendar's days; another team sees
// none of it.
func TestCalendarCommands(t *testing.T) {
	dir := t.TempDir()
	users := filepath.Join(dir, "users.yaml")
	if err := os.WriteFile(users, []byte(nsUsers), 0o600); err != nil {
		t.Fatal(err)
	}
	uf, err := identity.OpenUsersFile(users, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := newTestServer(t, api.Credentials{AdminUser: "root", AdminPassword: "s3cret", Users: uf}, func(o *api.Options) { o.Schedules.Location = time.UTC })
	for _, ns := range []string{"pay", "search"} {
		if _, err := s.reg.Tenancy().PutNamespace(context.Background(), namespace.Record{Name: ns}); err != nil {
			t.Fatal(err)
		}
	}
	login := func(user, pw string) *run {
		r := s.cli(t)
		r.env["EJCTL_CONFIG"] = filepath.Join(dir, user+".json")
		r.stdin = pw + "\n"
		r.must(0, "login", "-u", user, "--password-stdin")
		return r
	}
	alice, bob := login("alice", "secret"), login("bob", "hunter2")
	ics := filepath.Join(dir, "holidays.ics")
	if err := os.WriteFile(ics, []byte("BEGIN:VCALENDAR\nBEGIN:VEVENT\nDTSTART;VALUE=DATE:20260302\nDTEND;VALUE=DATE:20260304\nSUMMARY:Closed\nEND:VEVENT\n"+
		"BEGIN:VEVENT\nDTSTART;VALUE=DATE:20261225\nRRULE:FREQ=YEARLY\nEXDATE;VALUE=DATE:20271225\nSUMMARY:Xmas\nEND:VEVENT\nEND:VCALENDAR\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, _ := alice.must(0, "-n", "pay", "calendar", "set", "holidays", "-f", ics, "--time-zone", "UTC", "--weekdays", "MON,TUE,WED,THU,FRI")
	has(t, "set .ics", out, "calendar holidays stored: 2 excluded periods, weekdays MON,TUE,WED,THU,FRI")
	js := filepath.Join(dir, "weekend.json")
	if err := os.WriteFile(js, []byte(`{"weekdays":["SAT","SUN"]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	alice.must(0, "-n", "pay", "calendar", "set", "weekend", "-f", js)
	out, _ = alice.must(0, "-n", "pay", "calendar", "ls")
	has(t, "ls", out, "holidays", "weekend", "SAT,SUN")
	out, _ = alice.must(0, "-n", "pay", "calendar", "get", "holidays")
	has(t, "get", out, "2026-03-02", "2026-03-03", "Closed", "EXCEPT", "2027-12-25", "Xmas")

	a := app.Default()
	a.AppName, a.AppURL, a.BootstrapScript = "etl", "http://h/etl.tgz", "bin/start.sh"
	if err := s.reg.In("pay").Config().AddApp(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	j := jobs.Default()
	j.JobName, j.AppName, j.Cron, j.Calendar = "nightly", "etl", "0 0 9 * * ?", "holidays"
	if err := s.reg.In("pay").Config().AddJob(context.Background(), j); err != nil {
		t.Fatal(err)
	}
	// 2026-03-01 is a Sunday; the 2nd and 3rd are closed.
	out, _ = alice.must(0, "-n", "pay", "job", "next", "nightly", "--count", "2")
	has(t, "next", out, "calendar holidays", "2026-03-04T09:00:00Z", "2026-03-05T09:00:00Z")
	if strings.Contains(out, "2026-03-02") || strings.Contains(out, "2026-03-03") {
		t.Fatalf("next lists an excluded day:\n%s", out)
	}
	if _, errs, code := alice.do("-n", "pay", "calendar", "rm", "holidays"); code != 1 || !strings.Contains(errs, "nightly") {
		t.Fatalf("rm a calendar in use: %d %s", code, errs)
	}
	if _, errs, code := bob.do("-n", "pay", "calendar", "ls"); code != 1 || !strings.Contains(errs, "no role in namespace 'pay'") {
		t.Fatalf("bob lists pay's calendars: %d %s", code, errs)
	}
	alice.must(0, "-n", "pay", "calendar", "rm", "weekend")
	if _, errs, code := alice.do("-n", "pay", "calendar", "set", "x"); code != 1 || !strings.Contains(errs, "-f FILE") {
		t.Fatalf("set without a file: %d %s", code, errs)
	}
}
