package round

import (
	"fmt"
	"testing"
)

// clustersView is benchView's round with its agents and offers spread over n clusters (the
// agents round-robin) and its jobs' clusters named: a third name one cluster, a third two in
// order of preference, the rest none (any). n = 1 is benchView's round as it is (one engine,
// no placement policy).
func clustersView(jobsN, maxTasks, n int) View {
	v := benchView(jobsN, maxTasks)
	if n <= 1 {
		return v
	}
	name := spreadAgents(&v, n)
	cat := v.Jobs.(*catalog)
	j := 0
	for key, cfg := range cat.jobs {
		switch j % 3 {
		case 0:
			cfg.Clusters = []string{name(j)}
		case 1:
			cfg.Clusters = []string{name(j), name(j + 1)}
		}
		cat.jobs[key] = cfg
		j++
	}
	return v
}

// spreadAgents names n clusters c0…c{n-1} in v and spreads its agents over them
// round-robin, each offer on its agent's cluster; it returns the name of cluster i%n.
func spreadAgents(v *View, n int) func(i int) string {
	name := func(i int) string { return fmt.Sprintf("c%d", i%n) }
	for i := range n {
		v.Clusters = append(v.Clusters, ClusterState{Name: name(i)})
	}
	of := map[string]string{}
	for i := range v.Agents {
		v.Agents[i].Cluster = name(i)
		of[v.Agents[i].ID] = name(i)
	}
	for i := range v.Offers {
		v.Offers[i].Cluster = of[v.Offers[i].AgentID]
	}
	return name
}

// BenchmarkDecideClusters10k: a round of a 10,000-job backlog on the large cluster's 800
// agents, as one cluster, or spread over 2 or 4 clusters with the jobs' placement policies
// (docs/clusters.md): what a second cluster costs a round.
func BenchmarkDecideClusters10k(b *testing.B) {
	for _, n := range []int{1, 2, 4} {
		b.Run(fmt.Sprintf("clusters=%d", n), func(b *testing.B) { benchDecide(b, clustersView(10_000, 512, n)) })
	}
}
