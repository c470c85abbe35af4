package queue

import (
	"time"

	"github.com/ejcloud/elasticjob/estimate"
	"github.com/ejcloud/elasticjob/jobs"
)

// Reasons an entry waits (Wait.Reason).
const (
	WaitNoOffers      = "no_offers"              // no resources on offer (the engine has none, or is being asked)
	WaitCPU           = "insufficient_cpu"       // no offer has enough CPU for a shard
	WaitMem           = "insufficient_mem"       // no offer has enough memory for a shard
	WaitResources     = "insufficient_resources" // CPU and memory are on different agents
	WaitGang          = "gang_does_not_fit"      // the execution's shards do not fit together now
	WaitBehind        = "behind_older_work"      // the round's bound was reached by older work
	WaitTooLarge      = "never_fits"             // larger than the whole empty cluster
	WaitReserved      = "reserved"               // the oldest execution that does not fit now: it holds what frees up
	WaitReservation   = "behind_reservation"     // an older execution holds what it would need
	WaitJobDisabled   = "job_disabled"
	WaitAppDisabled   = "app_disabled"
	WaitRunning       = "execution_running"  // a job never runs two executions at once
	WaitFailover      = "failover_pending"   // failed shards of the job re-run first
	WaitBackoff       = "backing_off"        // a retry waits for its backoff
	WaitStaged        = "staged"             // a cron fire committed ahead of its instant
	WaitReconciling   = "reconciling"        // a new leader confirms running tasks first
	WaitNotSubscribed = "not_subscribed"     // no subscription to the engine at the moment
	WaitUnavailable   = "engine_unavailable" // the engine could not be reached at the last launch: launches wait (Wait.Until)
	WaitLaunchFailed  = "launch_failed"      // its launch failed (the engine refused it) and was rolled back: the next round tries again
	// WaitClusterUnavailable: none of the clusters the entry may run on takes work now
	// (each is drained, unreachable or not configured; docs/clusters.md).
	WaitClusterUnavailable = "cluster_unavailable"
	// WaitNSLimit: the namespace's running work holds its limit (or its
	// Kubernetes ResourceQuota); WaitGuaranteeNeeded: borrowing would take
	// what another namespace's fires need of its guarantee before this
	// work is expected to end.
	WaitNSLimit         = "namespace_limit"
	WaitGuaranteeNeeded = "guarantee_needed"
)

// Namespace rules that hold work back (Wait.Rule): why waiting names the
// rule, and a late fire says which held it.
const (
	RuleLimit           = "limit"            // its namespace is at its limit
	RuleQuota           = "quota"            // its namespace is at its Kubernetes ResourceQuota
	RuleEngineClosed    = "engine_namespace" // the engine runs none of its work (its Kubernetes namespace is missing)
	RuleGuaranteeNeeded = "guarantee_needed" // it would borrow what another namespace's fires need
	RuleLent            = "capacity_lent"    // within its guarantee, but the capacity is lent to others' work until Wait.Until
	RuleOvercommitted   = "cluster_smaller_than_guarantees"
	RuleFairShare       = "fair_share" // borrowing: namespaces with a smaller weighted share go first
)

// Wait is why one queue entry has not launched: its reason (Wait*), the
// message in words and the figures behind it. The launch round (package
// round) decides and words it; the registry keeps it under its WaitKey.
type Wait struct {
	Reason  string    `json:"reason"`
	Message string    `json:"message"` // in words, with the figures
	Since   time.Time `json:"since"`   // waiting (for any reason) since
	Until   time.Time `json:"until,omitzero"`
	// Needs and Holders, for a wait about resources: what the entry needs
	// in all (its shards), and the running work that holds resources it
	// could use, soonest expected end first (round.Summary words them).
	Needs   *Res     `json:"needs,omitempty"`
	Holders []Holder `json:"holders,omitempty"`
	// NamespaceRule, when not nil, names the namespace rule that holds it
	// back. Behind a pointer: a Wait stays within the 128 bytes a Go map
	// holds inline (at 152 bytes, a backlog of 100,000 waits made as many
	// allocations every round and doubled its cost).
	*NamespaceRule
}

// NamespaceRule is what a namespace's capacity says of a waiting entry.
type NamespaceRule struct {
	// Namespace and Rule name the namespace rule that holds it back, if
	// one does (Rule*).
	Namespace string `json:"namespace,omitempty"`
	Rule      string `json:"rule,omitempty"`
	// Guaranteed: it waits for resources within its namespace's guarantee
	// (it goes before any borrower, and may preempt borrowed capacity).
	Guaranteed bool `json:"withinGuarantee,omitempty"`
}

// InGuarantee reports whether the entry waits within its namespace's
// guarantee.
func (w Wait) InGuarantee() bool { return w.NamespaceRule != nil && w.Guaranteed }

// HeldBy is the namespace rule that holds the entry back ("" when none).
func (w Wait) HeldBy() (ns, rule string) {
	if w.NamespaceRule == nil {
		return "", ""
	}
	return w.Namespace, w.Rule
}

// WaitKey names the entry of a ready job ("ready/{job}") or of a failover
// shard ("failover/{job}/{job}@-@{item}").
func WaitKey(failover bool, job string, item int) string {
	if failover {
		return "failover/" + job + "/" + jobs.MetaKey(job, item)
	}
	return "ready/" + job
}

// Holder is running work that holds resources a waiting entry needs: one
// job's running tasks on the agents the entry could use, and when they
// are expected to end.
type Holder struct {
	Job    string    `json:"jobName"`          // round.OtherWork when round.Redact hid it
	Shards int       `json:"shards"`           // its shards with tasks on those agents
	TaskID string    `json:"taskId,omitempty"` // the oldest of the tasks ("" when round.Redact hid it)
	Holds  Res       `json:"holds"`            // what they hold (their tasks' resources)
	Since  time.Time `json:"runningSince"`
	// Moving counts the shards of Shards moving to another cluster with a
	// declared overlap whose old task runs beside its replacement there:
	// Holds has both tasks (both count against the namespace's limits), and
	// one of the two stops by MoveEndsBy at the latest (the old one once
	// the new one runs, else the new one as the move is given up).
	Moving     int       `json:"moving,omitempty"`
	MoveEndsBy time.Time `json:"moveEndsBy,omitzero"`
	// ExpectedEnd is when they are expected to end (zero: not known),
	// from the P90 of the job's recent runs (TypicalMs), or its timeout
	// (Basis).
	ExpectedEnd time.Time      `json:"expectedEnd,omitzero"`
	Basis       estimate.Basis `json:"basis,omitempty"`
	TypicalMs   int64          `json:"typicalMs,omitempty"`
	TimeoutMs   int64          `json:"timeoutMs,omitempty"`
	// Other: work of a namespace the reader has no role in (round.Redact),
	// named only as round.OtherWork, with its resources and expected end.
	Other bool `json:"otherNamespace,omitempty"`
}

// Res is a quantity of resources as the API shows it.
type Res struct {
	CPUs  float64 `json:"cpus"`
	MemMB int64   `json:"memMB"`
}
