package round

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/ejcloud/elasticjob/offers"
	"github.com/ejcloud/elasticjob/queue"
)

// explain words why c does not fit the resources on offer now (it fits
// the empty cluster: neverFits said so). The matcher's reason names the
// resource that is short; the message gives the figures, the executor's
// share counted.
func (d *decider) explain(c *cand, reason offers.Reason, detail string) queue.Wait {
	sh := c.shape()
	held := d.heldWords(c)
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

// heldWords words what is free for c: on every agent, or, with clusters in the view, on
// each cluster it may use, in its order of preference.
func (d *decider) heldWords(c *cand) string {
	if c.sh.clusters == noPolicy {
		return d.freeWords("")
	}
	p := d.policyOf(c)
	var parts []string
	for _, cl := range p.use {
		parts = append(parts, "on cluster "+cl+", "+d.freeWords(cl))
	}
	if len(p.out) > 0 {
		parts = append(parts, "not on "+strings.Join(p.out, ", "))
	}
	s := strings.Join(parts, "; ")
	if !p.spread && len(p.use) > 1 {
		s = "its shards run on one cluster, the first with room: " + s
	}
	return s
}

// freeWords words what the offers of a cluster ("": every one) have free.
func (d *decider) freeWords(cluster string) string {
	free, best, n := d.offered(cluster)
	if d.estimated {
		return fmt.Sprintf("no offer held at the moment; by the running tasks' count %s free (at most %s on one agent)", fmtRes(free), fmtRes(best))
	}
	return fmt.Sprintf("%s held now: %s free (at most %s in one)", plural(n, "offer"), fmtRes(free), fmtRes(best))
}

// offered is what the offers of a cluster ("": every one) have free in all, the most in
// one, and how many there are.
func (d *decider) offered(cluster string) (free, best offers.Resources, n int) {
	for _, o := range d.offs {
		if cluster != "" && o.Cluster != cluster {
			continue
		}
		free = free.Add(o.Free)
		best = maxRes(best, o.Free)
		n++
	}
	return free, best, n
}

func fmtCPU(c offers.Milli) string { return strconv.FormatFloat(c.Cores(), 'f', -1, 64) }
