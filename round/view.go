package round

import (
	"time"

	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/estimate"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/offers"
	"github.com/ejcloud/elasticjob/queue"
	"github.com/ejcloud/elasticjob/task"
)

// View is everything one launch round looks at.
type View struct {
	Now time.Time
	// Connected: the scheduler is subscribed to its engine. Unconfirmed
	// are the tasks recorded as running (by task id) whose state the
	// engine has not confirmed since the subscription: until
	// ReconcileUntil their jobs' entries wait for them (a launch of those
	// jobs waits for the answer), while every other entry launches as
	// usual: the answers can only end recorded tasks, never add any, so
	// they decide nothing about a job with nothing recorded as running.
	Connected      bool
	Unconfirmed    map[string]bool
	ReconcileUntil time.Time
	// Unavailable (not zero): the engine could not be reached at the last
	// launch, and no launch is tried before then (the launcher's backoff):
	// every entry that could launch waits until then.
	Unavailable time.Time

	// CatchingUp are jobs whose fires missed while no leader fired are
	// being queued (a new term's catch-up): their ready entries wait, so
	// an execution the last leader staged and those fires collapse into
	// one before either launches.
	CatchingUp map[string]bool

	Ready    []*queue.Ready   // a job's pending executions, oldest first
	Failover []queue.Failover // failed shards to run again, oldest first
	Jobs     Catalog
	Running  map[string]map[int]task.Entry // job → shard → its task
	// Retiring are the old tasks of DAEMON shards moving to another cluster with a
	// declared overlap (job → shard → task; docs/clusters.md). None is its shard's
	// running task (Running holds the replacement, once launched), but each holds its
	// resources until it ends: it counts in its namespace's usage, against its guarantees
	// and limits, and in what its agent has free, so that an overlap never lets a
	// namespace hold more than its limit, even for the seconds a replacement takes.
	Retiring map[string]map[int]Retiring

	Offers []offers.Offer // the resources on offer
	// Executors are the apps' executors running (or launched) per agent,
	// idle ones too: each holds its app's resources there until it exits,
	// charged to the app's namespace (capacity.go).
	Executors map[offers.ExecutorKey]bool
	Agents    []Agent // every agent with its total resources

	// Clusters are the scheduler's clusters, in the configured order (empty: one engine,
	// no placement policy; clusters.go), and NamespaceClusters the clusters each namespace
	// names for its jobs that name none.
	Clusters          []ClusterState
	NamespaceClusters map[string][]string
	// the round's agents, and each one's cluster indexed at its first use (clusterOfAgent):
	// only per-cluster capacities and preemption ask
	agents       emptyCluster
	agentCluster map[string]string

	// Typical is what each running job's recent runs took (job → them),
	// for when the work holding resources is expected to end; a job not in
	// it has its timeout, or nothing, to tell.
	Typical map[string]estimate.Typical

	// Namespaces is each namespace's capacity (capacity.go); a namespace
	// not in it has none: no guarantee, no limit, weight 1.
	Namespaces map[string]Capacity
	// Fires are the next cron fire of each job of the namespaces with a
	// guarantee, global or on some cluster (Capacity.Guaranteed), within
	// Horizon (0: DefaultHorizon), soonest first: what those guarantees
	// must be kept for (lending.go).
	Fires   []Fire
	Horizon time.Duration

	// MaxTasks bounds the tasks one round places (one registry commit; 0:
	// no bound).
	MaxTasks int
	// Reservation is the last round's, so the holder keeps its Since.
	Reservation Reservation
	// Scratch, when not nil, is a map Decide empties and fills as the
	// plan's Waiting instead of making one: the last round's, handed back
	// (a backlog of 100,000 entries made a map that large every round).
	Scratch map[string]queue.Wait
}

// Agent is one agent with its total resources: the empty cluster.
type Agent struct {
	ID    string
	Total offers.Resources
	// Cluster is the agent's cluster ("": the one engine's).
	Cluster string
}

// Catalog is the configuration a round reads.
type Catalog interface {
	// Lookup returns a job's configuration, its app's, and whether it may
	// run now.
	Lookup(job string) (jobs.Config, app.Config, jobs.Runnability)
	// App returns an app's configuration (ok false: not known), for the
	// executors a round charges to the app's namespace.
	App(name string) (app.Config, bool)
}

// Plan is what one round decided.
type Plan struct {
	// Launches are the tasks to launch, grouped per queue entry in the
	// round's order (a gang's shards together).
	Launches []Launch
	// Decline are the offers no launch uses, sorted; nil when the round
	// stopped at MaxTasks after launching something (the next round uses
	// them), and only the other clusters' when it launched with clusters
	// that took their ClusterState.MaxTasks (the next round uses theirs).
	// Busy: work still waits for resources (a short decline filter).
	Decline []string
	Busy    bool
	// Idle: nothing waits that resources could serve; the engine need not
	// offer any (Mesos: decline what is held and suppress).
	Idle bool
	// More: the round stopped at MaxTasks, or clusters took their
	// ClusterState.MaxTasks; the next should follow at once.
	More bool
	// Withheld: no offer was held, and an entry fits what is free by the
	// running tasks' count (it waits no_offers): the engine holds free
	// resources back, e.g. behind a decline filter (the launcher revives
	// when one of its filters may still stand).
	Withheld bool
	// Chunked: the one entry launched is larger than MaxTasks; its commit
	// is split (task.Entry.Gang).
	Chunked bool
	// Waiting says why each entry that does not launch waits (key:
	// WaitKey).
	Waiting map[string]queue.Wait
	// Drop lists entries of jobs that are gone (to confirm in the store
	// before removing: the catalog may lag it), and Remove entries of
	// shards a job no longer has (a resharded job).
	Drop   []Stale
	Remove []Stale
	// WakeAt is the earliest instant a waiting entry may launch (a staged
	// fire, a retry's backoff, the end of the reconciliation wait); zero:
	// none.
	WakeAt time.Time
	// Reservation is the one held this round (zero Key: none).
	Reservation Reservation
	// Depth counts the ready executions that could launch this round.
	Depth int
	// Preempt are running executions to stop: borrowed capacity a
	// namespace within its guarantee needs back (preempt.go).
	Preempt []Preemption
}

// Launch is one task to launch: a placement and the entry it serves.
type Launch struct {
	offers.Launch
	Job      jobs.Config
	App      app.Config
	Ready    *queue.Ready    // the ready entry (a new execution), or
	Failover *queue.Failover // the failover entry (a shard run again)
	// Borrowing: its namespace holds more than its guarantee with it
	// (it runs on idle capacity, not on its guarantee).
	Borrowing bool
}

// Stale names a queue entry to remove.
type Stale struct {
	Job  string
	Item int  // a failover entry's shard
	Fail bool // a failover entry (else the job's ready entry)
}

// Reservation is the execution that holds what frees up.
type Reservation struct {
	Key   string    // its entry (WaitKey)
	Since time.Time // the first round it held it
	Need  offers.Resources
	Held  offers.Resources // held for it this round
}

// Retiring is a DAEMON shard's old task during its move's overlap, and the overlap's
// end (the record's startBy): with its replacement launched, one of the two tasks stops
// by Until (the old one once the new one runs, else the new one as the move is given up).
type Retiring struct {
	task.Entry
	Until time.Time
}

// eachHeld calls f with each job's tasks that hold resources: its running entries, then
// its retiring ones (Retiring; retiring true).
func (v *View) eachHeld(f func(job string, tasks map[int]task.Entry, retiring bool)) {
	for job, shards := range v.Running {
		f(job, shards, false)
	}
	for job, shards := range v.Retiring {
		f(job, retiringTasks(shards), true)
	}
}

// retiringTasks is a job's retiring tasks as tasks (a move's few: made as asked).
func retiringTasks(shards map[int]Retiring) map[int]task.Entry {
	out := make(map[int]task.Entry, len(shards))
	for item, r := range shards {
		out[item] = r.Entry
	}
	return out
}
