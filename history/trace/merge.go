package trace

// mergeExecutions writes an execution whose start and completion are in
// the same batch as one completion: a task that ends within the writer's
// flush interval of its start (most short tasks) costs one row insert
// instead of an insert and an upsert that updates the row just inserted
// (BenchmarkSQLiteManyJobs, docs/benchmarks.md sixteenth round).
//
// The completion is filled from the start as the completion's
// upsert fills the start's row: the start's host, address and start time
// (when it has them), and its job, task, item and source.
func mergeExecutions(evs []Event) []Event {
	starts := map[string]int{}
	for i, ev := range evs {
		if s, ok := ev.(ExecutionStart); ok {
			if _, dup := starts[s.ID]; !dup {
				starts[s.ID] = i
			}
		}
	}
	if len(starts) == 0 {
		return evs
	}
	merged := map[int]ExecutionComplete{} // by the completion's index
	drop := map[int]bool{}                // the merged starts' indexes
	for i, ev := range evs {
		c, ok := ev.(ExecutionComplete)
		if !ok {
			continue
		}
		j, ok := starts[c.ID]
		if !ok || drop[j] {
			continue
		}
		s := evs[j].(ExecutionStart)
		c.JobName, c.TaskID, c.ShardingItem, c.ExecutionSource = s.JobName, s.TaskID, s.ShardingItem, s.ExecutionSource
		if s.TriggeredBy != "" {
			c.TriggeredBy = s.TriggeredBy
		}
		if !s.NominalAt.IsZero() {
			c.NominalAt = s.NominalAt
		}
		if s.Hostname != "" {
			c.Hostname = s.Hostname
		}
		if s.IP != "" {
			c.IP = s.IP
		}
		if !s.StartTime.IsZero() {
			c.StartTime = s.StartTime
		}
		c.whole = true
		merged[i] = c
		drop[j] = true
	}
	if len(merged) == 0 {
		return evs
	}
	out := make([]Event, 0, len(evs)-len(drop))
	for i, ev := range evs {
		switch c, ok := merged[i]; {
		case ok:
			out = append(out, c)
		case !drop[i]:
			out = append(out, ev)
		}
	}
	return out
}
