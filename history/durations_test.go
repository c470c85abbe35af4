package history

import (
	"context"
	"testing"
	"time"
)

// A job's recent durations are those of its own namespace: team pay's
// nightly is not team search's, nor the default namespace's.
func TestRecentDurationsAreTheNamespaces(t *testing.T) {
	eachDB(t, func(t *testing.T, e *testDB) {
		base := time.Date(2024, 2, 1, 8, 0, 0, 0, time.UTC)
		add := func(id, ns string, took time.Duration) {
			done := base.Add(took)
			e.exec(t, "INSERT INTO JOB_EXECUTION_LOG (id, namespace, job_name, task_id, hostname, ip, sharding_item, execution_source, is_success, start_time, complete_time) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
				id, ns, "nightly", "nightly@-@0@-@READY@-@s@-@"+id, "h", "127.0.0.1", 0, "NORMAL_TRIGGER", 1, e.d.bindTime(base), e.d.bindTime(done))
		}
		add("a", "pay", 8*time.Second)
		add("b", "search", 2*time.Second)
		add("c", "default", 5*time.Second)
		for key, want := range map[string]time.Duration{"pay~nightly": 8 * time.Second, "search~nightly": 2 * time.Second, "nightly": 5 * time.Second} {
			got, err := e.store.RecentDurations(context.Background(), key, time.Time{}, 10)
			if err != nil || len(got) != 1 || got[0] != want {
				t.Errorf("RecentDurations(%q) = %v, %v; want [%v]", key, got, err, want)
			}
		}
	})
}
