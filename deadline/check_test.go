package deadline

import (
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/observe"
)

var t0 = time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)

func cfgs(cs ...jobs.Config) Jobs {
	m := map[string]jobs.Config{}
	for _, c := range cs {
		m[c.JobName] = c
	}
	return func(k string) (jobs.Config, bool) { c, ok := m[k]; return c, ok }
}

func TestCheckStartDeadline(t *testing.T) {
	c := jobs.Config{JobName: "report", StartDeadlineSeconds: 60}
	w := []Waiting{{Job: "report", Since: t0}}
	for _, tc := range []struct {
		at   time.Duration
		want int
	}{{59 * time.Second, 0}, {60 * time.Second, 1}, {time.Hour, 1}} {
		due, live := Check(t0.Add(tc.at), time.UTC, cfgs(c), w, nil)
		if len(due) != tc.want || len(live) != 1 {
			t.Fatalf("at +%s: %d due, %d live; want %d, 1", tc.at, len(due), len(live), tc.want)
		}
		if tc.want == 1 && (due[0].Kind != observe.DeadlineStart || !due[0].Due.Equal(t0.Add(time.Minute)) || due[0].Namespace != "default") {
			t.Fatalf("alert %+v", due[0])
		}
	}
}

func TestCheckRunDeadlines(t *testing.T) {
	shanghai, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		t.Fatal(err)
	}
	// Started 23:30 Shanghai; runDeadlineAt 06:00 is the next morning.
	started := time.Date(2026, 3, 2, 23, 30, 0, 0, shanghai)
	c := jobs.Config{JobName: "team-a~etl", RunDeadlineSeconds: 3600, RunDeadlineAt: "06:00", TimeZone: "Asia/Shanghai"}
	r := []Running{{Job: "team-a~etl", TaskID: "t1", Started: started}}
	due, _ := Check(started.Add(59*time.Minute), time.UTC, cfgs(c), nil, r)
	if len(due) != 0 {
		t.Fatalf("due early: %+v", due)
	}
	due, _ = Check(started.Add(time.Hour), time.UTC, cfgs(c), nil, r)
	if len(due) != 1 || due[0].Kind != observe.DeadlineRun || due[0].Namespace != "team-a" || due[0].Job != "etl" {
		t.Fatalf("run deadline: %+v", due)
	}
	at := time.Date(2026, 3, 3, 6, 0, 0, 0, shanghai)
	due, _ = Check(at, time.UTC, cfgs(c), nil, r)
	if len(due) != 2 || due[1].Kind != observe.DeadlineRunAt || !due[1].Due.Equal(at) {
		t.Fatalf("runAt deadline: %+v", due)
	}
}

func TestCheckKeysAreStable(t *testing.T) {
	c := jobs.Config{JobName: "j", StartDeadlineSeconds: 1, RunDeadlineSeconds: 1}
	a, _ := Check(t0.Add(time.Hour), time.UTC, cfgs(c), []Waiting{{"j", t0}}, []Running{{"j", "x", t0}})
	b, _ := Check(t0.Add(2*time.Hour), time.UTC, cfgs(c), []Waiting{{"j", t0}}, []Running{{"j", "x", t0}})
	if len(a) != 2 || len(b) != 2 || a[0].PathKey() != b[0].PathKey() || a[1].PathKey() != b[1].PathKey() || a[0].PathKey() == a[1].PathKey() {
		t.Fatalf("keys differ between checks or collide: %v %v", a, b)
	}
	// A later fire of the same job is another alert.
	n, _ := Check(t0.Add(time.Hour), time.UTC, cfgs(c), []Waiting{{"j", t0.Add(time.Minute)}}, nil)
	if n[0].PathKey() == a[0].PathKey() && n[0].Kind == a[0].Kind {
		t.Fatal("a later fire has the same key")
	}
}

func TestCheckIgnoresJobsWithoutDeadlines(t *testing.T) {
	due, live := Check(t0.Add(time.Hour), time.UTC, cfgs(jobs.Config{JobName: "j"}), []Waiting{{"j", t0}}, []Running{{"j", "x", t0}})
	if len(due)+len(live) != 0 {
		t.Fatalf("%v %v", due, live)
	}
}
