package round

import (
	"time"

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
	WaitRunning       = "execution_running" // a job never runs two executions at once
	WaitFailover      = "failover_pending"  // failed shards of the job re-run first
	WaitBackoff       = "backing_off"       // a retry waits for its backoff
	WaitStaged        = "staged"            // a cron fire committed ahead of its instant
	WaitReconciling   = "reconciling"       // a new leader confirms running tasks first
	WaitNotSubscribed = "not_subscribed"    // no subscription to the engine at the moment
)

// Wait is why one queue entry has not launched.
type Wait struct {
	Reason  string    `json:"reason"`
	Message string    `json:"message"` // in words, with the figures
	Since   time.Time `json:"since"`   // waiting (for any reason) since
	Until   time.Time `json:"until,omitzero"`
	// Needs and Holders, for a wait about resources: what the entry needs
	// in all (its shards), and the running work that holds resources it
	// could use, soonest expected end first (Summary words them).
	Needs   *Res     `json:"needs,omitempty"`
	Holders []Holder `json:"holders,omitempty"`
}

// WaitKey names the entry of a ready job ("ready/{job}") or of a failover
// shard ("failover/{job}/{job}@-@{item}").
func WaitKey(failover bool, job string, item int) string {
	if failover {
		return "failover/" + job + "/" + jobs.MetaKey(job, item)
	}
	return "ready/" + job
}
