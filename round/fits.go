package round

import "github.com/ejcloud/elasticjob/offers"

// Fit says whether an execution could ever fit a cluster: the rule a
// round applies (never_fits), for registration to warn with the same
// words.
type Fit struct {
	// Never: the execution could not fit the whole empty cluster.
	Never bool
	// Shard: not even one shard (with the app's executor beside it) fits
	// any agent, whatever the shard count.
	Shard bool
	// Message says so with the figures, the executor's share counted.
	Message string
}

// FitsEmpty tells whether an execution of n shards of size task, with the
// app's executor (exec) on every agent it uses, could fit the agents
// (none known: it could).
func FitsEmpty(agents []Agent, n int, task, exec offers.Resources) Fit {
	cl := clusterOf(agents, nil)
	if len(cl) == 0 || n <= 0 {
		return Fit{}
	}
	sh := shape{n: n, task: task, exec: exec}
	if _, fits := spread(cl, n, task, exec); fits >= n {
		return Fit{}
	}
	_, one := spread(cl, 1, task, exec)
	return Fit{Never: true, Shard: one == 0, Message: cl.neverMessage(sh)}
}
