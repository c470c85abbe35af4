package round

import (
	"fmt"
	"strconv"

	"github.com/ejcloud/elasticjob/offers"
	"github.com/ejcloud/elasticjob/queue"
)

// explain words why c does not fit the resources on offer now (it fits
// the empty cluster: neverFits said so). The matcher's reason names the
// resource that is short; the message gives the figures, the executor's
// share counted.
func (d *decider) explain(c *cand, reason offers.Reason, detail string) queue.Wait {
	sh := c.shape()
	free, best := d.offered()
	held := fmt.Sprintf("%s held now: %s free (at most %s in one)", plural(len(d.offs), "offer"), fmtRes(free), fmtRes(best))
	if d.estimated {
		held = fmt.Sprintf("no offer held at the moment; by the running tasks' count %s free (at most %s on one agent)", fmtRes(free), fmtRes(best))
	}
	if sh.n > 1 && sh.kind == offers.Ready {
		return queue.Wait{Reason: queue.WaitGang, Message: fmt.Sprintf("the execution's %d shards launch together and need %s; %s",
			sh.n, need(d.cluster, sh, false), held)}
	}
	shard := fmt.Sprintf("a shard needs %s, plus %s for the app's executor on an agent where it does not run yet",
		fmtRes(sh.task), fmtRes(sh.exec))
	if sh.exec.IsZero() {
		shard = "a shard needs " + fmtRes(sh.task)
	}
	switch reason {
	case offers.ReasonInsufficientCPU:
		return queue.Wait{Reason: queue.WaitCPU, Message: fmt.Sprintf("not enough CPU: %s; %s", shard, held)}
	case offers.ReasonInsufficientMem:
		return queue.Wait{Reason: queue.WaitMem, Message: fmt.Sprintf("not enough memory: %s; %s", shard, held)}
	case offers.ReasonNoOffers:
		return queue.Wait{Reason: queue.WaitNoOffers, Message: "no resources on offer: waiting for the cluster engine to offer resources"}
	case offers.ReasonInvalid:
		return queue.Wait{Reason: queue.WaitResources, Message: "the job's resources are invalid: " + detail}
	}
	return queue.Wait{Reason: queue.WaitResources, Message: fmt.Sprintf("no single offer has both: %s; %s", shard, held)}
}

// offered is what the offers have free in all, and the most in one.
func (d *decider) offered() (free, best offers.Resources) {
	for _, o := range d.offs {
		free = free.Add(o.Free)
		best = maxRes(best, o.Free)
	}
	return free, best
}

func fmtCPU(c offers.Milli) string { return strconv.FormatFloat(c.Cores(), 'f', -1, 64) }
