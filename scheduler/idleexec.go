package scheduler

import (
	"context"
	"slices"
	"strings"

	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/namespace"
	"github.com/ejcloud/elasticjob/offers"
	"github.com/ejcloud/elasticjob/task"
)

// IdleExecutor is an app's executor up on an agent with no task of its
// app running there: it holds its app's resources until it exits
// (executor_idle_timeout) and counts against its app's namespace in the
// launch round, as the API's namespace usage shows it.
type IdleExecutor struct {
	App     string  `json:"app"` // the app's name in its namespace
	AgentID string  `json:"agentId"`
	CPUs    float64 `json:"cpuCount"`
	MemMB   float64 `json:"memoryMB"`
}

// IdleExecutors lists namespace ns's idle executors, as the leader's
// state knows them now (only where the engine keeps executors between
// tasks: the embedded engine and Mesos), by app and agent.
func (s *Scheduler) IdleExecutors(ctx context.Context, ns string) ([]IdleExecutor, error) {
	var out []IdleExecutor
	err := s.call(ctx, func(ctx context.Context) error {
		running, err := s.st.runningAll(ctx, s.deps.Registry)
		if err != nil {
			return err
		}
		retiring, err := s.st.retiringAll(ctx, s.deps.Registry)
		if err != nil {
			return err
		}
		if len(retiring) > 0 { // an overlapping move's old task keeps its executor busy
			merged := make(map[string]map[int]task.Entry, len(running)+len(retiring))
			for job, items := range running {
				merged[job] = items
			}
			for job, items := range retiring {
				m := map[int]task.Entry{}
				for item, e := range merged[job] {
					m[item] = e
				}
				for item, r := range items {
					m[-1-item] = r.Entry // beside the shard's current task
				}
				merged[job] = m
			}
			running = merged
		}
		out = idleExecutors(s.st.executors, running, s.catalog, ns)
		return nil
	})
	return out, err
}

// idleExecutors is the executors up (execs) of ns's apps that run none
// of running's tasks on their agent.
func idleExecutors(execs map[offers.ExecutorKey]bool, running map[string]map[int]task.Entry, cat *Catalog, ns string) []IdleExecutor {
	busy := map[offers.ExecutorKey]bool{}
	for job, shards := range running {
		if namespace.Of(job) != ns {
			continue
		}
		_, a, _ := cat.Lookup(job)
		for _, e := range shards {
			busy[offers.ExecutorKey{App: a.AppName, AgentID: e.AgentID}] = true
		}
	}
	var out []IdleExecutor
	for k, up := range execs {
		if !up || busy[k] || namespace.Of(k.App) != ns {
			continue
		}
		a, ok := cat.App(k.App)
		if jobs.IsHTTPApp(k.App) { // the namespace's HTTP executor: no app of it is stored
			a, ok = app.HTTPOnly(), true
		}
		if !ok {
			continue
		}
		out = append(out, IdleExecutor{App: namespace.Name(k.App), AgentID: k.AgentID, CPUs: a.CPUCount, MemMB: a.MemoryMB})
	}
	slices.SortFunc(out, func(x, y IdleExecutor) int {
		return strings.Compare(x.App+"\x00"+x.AgentID, y.App+"\x00"+y.AgentID)
	})
	return out
}
