package engine

// ExecutorSharing is implemented by an engine that declares how its executors relate to
// tasks. On Mesos the tasks of one app on one agent share one executor (ExecutorSpec.ID):
// the scheduler charges the executor's resources once, with its app's first task there,
// and keeps them charged while the executor lives (until a Failure says it is gone). On
// Kubernetes every task's pod runs an executor of its own, sized into the pod: the
// scheduler charges an app's executor once per agent and launch round and keeps nothing
// after it (round.View.Executors stays without it).
type ExecutorSharing interface {
	// SharesExecutors reports whether the tasks of one executor id on one agent run in one
	// shared executor that outlives each of them.
	SharesExecutors() bool
}

// SharesExecutors reports whether the engine d shares executors between tasks: its own
// declaration when it makes one (ExecutorSharing), true otherwise (the Mesos model).
func SharesExecutors(d any) bool {
	if s, ok := d.(ExecutorSharing); ok {
		return s.SharesExecutors()
	}
	return true
}

// ConcurrentAccepts is implemented by an engine whose Accept may be called for several agents
// at once (the Mesos client: each ACCEPT is an HTTP call of its own). The launch round then
// sends one round's ACCEPTs up to Accepts() at a time instead of one agent after another.
type ConcurrentAccepts interface {
	// Accepts is how many ACCEPTs may be in flight together (≤ 1: one at a time).
	Accepts() int
}

// Accepts is how many ACCEPTs the engine d takes at once: its own declaration when it makes
// one (ConcurrentAccepts), else 1.
func Accepts(d any) int {
	if c, ok := d.(ConcurrentAccepts); ok {
		return max(c.Accepts(), 1)
	}
	return 1
}
