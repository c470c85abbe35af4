package history

import (
	"context"
	"time"

	"github.com/ejcloud/elasticjob/history/view"
	"github.com/ejcloud/elasticjob/namespace"
)

// RecentDurations is how long the job's recent successful runs took (a
// shard's run: its completeTime − startTime), most recent first: at most
// n (at most view.MaxPerPage), started at since or later (zero: any).
// estimate.Of turns them into the job's p90. job is the scheduler's key
// of the job (namespace.Key): its rows are those of its namespace.
func (s *Store) RecentDurations(ctx context.Context, job string, since time.Time, n int) ([]time.Duration, error) {
	ns, name := namespace.Split(job)
	page, err := s.Executions(ctx, view.Query{Page: 1, PerPage: min(max(n, 1), view.MaxPerPage), Sort: "startTime", Order: "desc",
		Start: since, Namespaces: []string{ns}, Filters: map[string]string{"jobName": name, "success": "true"}})
	if err != nil {
		return nil, err
	}
	out := make([]time.Duration, 0, len(page.Rows))
	for _, e := range page.Rows {
		if e.DurationMs != nil {
			out = append(out, time.Duration(*e.DurationMs)*time.Millisecond)
		}
	}
	return out, nil
}
