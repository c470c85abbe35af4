package offers

import "strconv"

// Offer is one Mesos resource offer reduced to what matching needs.
type Offer struct {
	ID, AgentID, Hostname string
	Free                  Resources
	// Cluster is the cluster of the offer's agent ("": the one cluster of a single
	// engine); Matcher.PlaceIn places only on the clusters it is given.
	Cluster string
}

// Kind says which queue a request came from.
type Kind int

const (
	// Ready work is a new execution of a job; its shards form a gang.
	Ready Kind = iota
	// Failover work re-runs single shards that failed; they place one by one.
	Failover
)

// String returns the task-id spelling of k: "READY" or "FAILOVER".
func (k Kind) String() string {
	switch k {
	case Ready:
		return "READY"
	case Failover:
		return "FAILOVER"
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Request asks to place one shard of one job.
type Request struct {
	Job      string    // job name
	Shard    int       // sharding item
	Kind     Kind      // Ready (gang) or Failover (individual)
	App      string    // app name: its executor is charged once per agent
	Task     Resources // per-shard cpu/mem
	Executor Resources // the app executor's cpu/mem
	Seq      int64     // arrival order: smaller waited longer (oldest first)
}

// ExecutorKey names the executor of one app on one agent.
type ExecutorKey struct{ App, AgentID string }

// Input is everything Match looks at. Match never modifies it.
type Input struct {
	Offers   []Offer
	Requests []Request
	// Running holds the executors already running (or already being
	// launched) per agent; only true values count.
	Running map[ExecutorKey]bool
}

// Launch places one request on one offer. ChargesExecutor is true on the
// single launch per (app, agent) whose offer also pays for starting the app's
// executor there.
type Launch struct {
	Request         Request
	OfferID         string
	AgentID         string
	ChargesExecutor bool
}

// Reason says why a request was not placed. It is data, not an error.
type Reason string

const (
	// ReasonNoOffers: the input had no offers at all.
	ReasonNoOffers Reason = "no_offers"
	// ReasonInsufficientCPU: no offer has enough free CPU for the shard
	// (plus the executor, on agents that would need one).
	ReasonInsufficientCPU Reason = "insufficient_cpu"
	// ReasonInsufficientMem: no offer has enough free memory.
	ReasonInsufficientMem Reason = "insufficient_mem"
	// ReasonInsufficientResources: some offer has enough CPU and some
	// offer has enough memory, but no single offer has both.
	ReasonInsufficientResources Reason = "insufficient_resources"
	// ReasonGangIncomplete: a READY execution did not fit as a whole, so
	// none of its shards were placed. Detail names the short resource.
	ReasonGangIncomplete Reason = "gang_incomplete"
	// ReasonDuplicate: an earlier request in Input.Requests has the same
	// (Job, Shard, Kind).
	ReasonDuplicate Reason = "duplicate"
	// ReasonInvalid: the request is malformed (empty job, negative shard
	// or resources, unknown kind).
	ReasonInvalid Reason = "invalid_request"
)

// Unplaced reports one request that Match did not place.
type Unplaced struct {
	Job    string
	Shard  int
	Kind   Kind
	Reason Reason
	Detail string
}

// Plan is the outcome of Match.
type Plan struct {
	// Launches maps an offer id to the launches on it, in placement order.
	// Only offers with at least one launch appear. Never nil.
	Launches map[string][]Launch
	// Decline lists, sorted, the ids of the offers with no launch.
	Decline []string
	// Unplaced lists the requests not placed: duplicates and invalid
	// requests first (input order), then the rest in the order they were
	// considered.
	Unplaced []Unplaced
}
