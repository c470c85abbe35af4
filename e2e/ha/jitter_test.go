//go:build e2e

package ha

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"testing"
	"time"
)

// A job's jittered instants (H in its cron, its jitter window, a calendar
// of its namespace) are one function of the registry: every instance
// previews the same ones, and after the leader is killed the next leader
// previews, and is about to fire, the same ones.
func TestJitteredInstantsSurviveALeaderChange(t *testing.T) {
	t.Parallel()
	c := newCluster(t, sharedEnsemble(t), 2*time.Second)
	first := c.add(instOpts{})
	c.awaitLeader(nil, time.Time{})
	second := c.add(instOpts{})
	c.publish(first)
	first.must(http.MethodPut, "/api/namespaces/default/calendars/biz", map[string]any{"weekdays": []string{"MON", "TUE", "WED", "THU", "FRI"}})
	first.must(http.MethodPost, "/api/job/register", map[string]any{"jobName": "spread", "appName": "chaos", "jobExecutionType": "TRANSIENT",
		"cron": "0 H H * * ?", "crons": []string{"H H/6 * * * ?"}, "jitter": "45m", "calendar": "biz", "shardingTotalCount": 1,
		"jobParameter": c.out + " 0", "cpuCount": 0.05, "memoryMB": 16})
	from := time.Now().UTC().Truncate(time.Hour).Format(time.RFC3339)
	preview := func(in *instance) []string {
		var ans struct {
			JitterSeconds int64    `json:"jitterSeconds"`
			Fires         []string `json:"fires"`
		}
		if err := json.Unmarshal(in.must(http.MethodGet, "/api/jobs/spread/next?count=20&from="+url.QueryEscape(from), nil), &ans); err != nil {
			t.Fatal(err)
		}
		if len(ans.Fires) != 20 {
			t.Fatalf("%s previews %d fires", in.name, len(ans.Fires))
		}
		for _, f := range ans.Fires {
			if d, _ := time.Parse(time.RFC3339, f); d.Weekday() == time.Saturday || d.Weekday() == time.Sunday {
				t.Fatalf("%s previews a weekend fire %s", in.name, f)
			}
		}
		return append(ans.Fires, time.Duration(ans.JitterSeconds*int64(time.Second)).String())
	}
	want := preview(first)
	// A standby serves its own copy of the registry: wait until it has the job.
	eventually(t, waitLong, func() bool {
		code, _, _, err := second.request(http.MethodGet, "/api/jobs/spread/status", nil)
		return err == nil && code == http.StatusOK
	}, "the standby %s to have job spread", second.name)
	if got := preview(second); !slices.Equal(got, want) {
		t.Fatalf("the standby previews %v, the leader %v", got, want)
	}
	l := c.leader()
	if l == nil {
		t.Fatal("no leader")
	}
	other := second
	if l == second {
		other = first
	}
	dead := l.life().Kill9()
	next, _ := c.awaitLeader(l, dead)
	if next != other {
		t.Fatalf("the next leader is %s, want %s", next.name, other.name)
	}
	if got := preview(next); !slices.Equal(got, want) {
		t.Fatalf("after the leader change: %v, before %v", got, want)
	}
	// The new leader's producer holds its next fire at one of those instants.
	var st struct {
		NextFireTime *time.Time `json:"nextFireTime"`
	}
	if err := json.Unmarshal(next.must(http.MethodGet, "/api/jobs/spread/status", nil), &st); err != nil || st.NextFireTime == nil {
		t.Fatalf("status: %v %v", st, err)
	}
	var chk struct {
		Fires []string `json:"fires"`
	}
	at := st.NextFireTime.Add(-time.Second).UTC().Format(time.RFC3339)
	if err := json.Unmarshal(next.must(http.MethodGet, "/api/jobs/spread/next?count=1&from="+url.QueryEscape(at), nil), &chk); err != nil ||
		len(chk.Fires) != 1 || chk.Fires[0] != st.NextFireTime.UTC().Format(time.RFC3339) {
		t.Fatalf("the new leader's next fire %s is not an instant of the job's plan (%v)", st.NextFireTime, chk.Fires)
	}
}
