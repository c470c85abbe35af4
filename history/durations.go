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
	q := view.Query{Page: 1, PerPage: min(max(n, 1), view.MaxPerPage), Sort: "startTime", Order: "desc",
		Start: since, Namespaces: []string{ns}, Filters: map[string]string{"jobName": name, "success": "true"}}
	out := make([]time.Duration, 0, q.PerPage)
	// No count of all the rows (a search's total): counting a job's rows since
	// its registration used the namespace's time index, a walk over every
	// row of the namespace in that time; the rows alone come from the job's
	// own index (job_name, is_success, start_time). The new leader's launch
	// loop reads this for every running job.
	_, err := s.search(ctx, executionTable, q, false, func(r rowScanner) error {
		e, err := scanExecution(r)
		if err == nil && e.DurationMs != nil {
			out = append(out, time.Duration(*e.DurationMs)*time.Millisecond)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
