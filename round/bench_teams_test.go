package round

import (
	"fmt"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/task"
)

// benchTeamsView is benchView's backlog of 100,000 ready executions
// spread over 100 namespaces (job-NNNNNN becomes team-KK~job-NNNNNN), with
// 4,000 tasks of 2,000 jobs running. withCapacity (bench_capacity_test.go)
// gives the namespaces their guarantees, limits, weights and fires; the
// code before had none (docs/benchmarks.md: this file is run on it with a
// withCapacity that does nothing).
func benchTeamsView(maxTasks int) View {
	v := benchView(100_000, maxTasks)
	cat := v.Jobs.(*catalog)
	renamed := newCatalog()
	renamed.apps = cat.apps
	key := func(job string) string {
		var n int
		fmt.Sscanf(job, "job-%d", &n)
		return fmt.Sprintf("team-%02d~%s", n%100, job)
	}
	for name, j := range cat.jobs {
		j.JobName = key(name)
		renamed.jobs[j.JobName] = j
	}
	v.Jobs = renamed
	for _, rd := range v.Ready {
		rd.Job = key(rd.Job)
	}
	for i := range v.Failover {
		v.Failover[i].Job = key(v.Failover[i].Job)
	}
	addRunning(v, renamed)
	withCapacity(&v)
	return v
}

// BenchmarkDecideTeams100k: one launch round over 100 namespaces and
// 100,000 waiting executions, bound 512 (docs/benchmarks.md, issue 39).
func BenchmarkDecideTeams100k(b *testing.B) { benchDecide(b, benchTeamsView(512)) }

// addRunning puts 4,000 tasks of 2,000 jobs (2 CPUs each) on the agents,
// in the 100 namespaces.
func addRunning(v View, cat *catalog) {
	for j := range 2000 {
		name := fmt.Sprintf("team-%02d~run-%04d", j%100, j)
		cat.jobs[name] = benchRunJob(name)
		v.Running[name] = map[int]task.Entry{}
		for item := range 2 {
			v.Running[name][item] = task.Entry{TaskID: fmt.Sprintf("%s-%d", name, item), AgentID: fmt.Sprintf("agent-%03d", (2*j+item)%800),
				LaunchedAt: t0.Add(time.Duration(j) * time.Second)}
		}
	}
}

func benchRunJob(name string) jobs.Config {
	return jobs.Config{JobName: name, AppName: "app-00", ShardingTotalCount: 2, CPUCount: 2, MemoryMB: 512, JobExecutionType: jobs.Transient}
}
