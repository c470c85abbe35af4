package scheduler

import (
	"context"
	"time"

	"github.com/ejcloud/elasticjob/observe"
	"github.com/ejcloud/elasticjob/registry"
)

// A launch round larger than one commit may hold (MaxCommitTasks: on
// ZooKeeper a multi must stay under its request size limit; on the
// embedded store an urgent commit, the producer's fires, waits behind at
// most one commit of a chain, not behind the round) is recorded as a chain
// of commits (registry.CommitChain: sent back to back, each applied only
// if every one before it was), not bounded to one commit's worth of
// launches: a round on ZooKeeper launched at most 512 tasks when the
// embedded store's launched 8,192, and the round's fixed cost (reading a
// 100,000-job ready queue, deciding) was paid per 512.
//
// Parts are cut at executions: all of a job's launches in the round, with
// its dequeue and its failover entries taken, are in one part, so a part
// that applies launches whole executions. An execution larger than a part
// spans several, its entries marked with the launch's gang as in commit,
// the dequeue and the gang mark in its last part. What a failed part and
// the parts after it held is not launched (the next round reads again); a
// gang whose last part failed is removed again (unlaunch).

// commitChain commits b in parts of at most n launches and returns what
// was committed, whole executions only (nil and the error when nothing
// was).
func (l *launcher) commitChain(ctx context.Context, b *built, now time.Time, n int) (*built, error) {
	var jobs []string
	byJob := map[string][]placed{}
	for _, pl := range b.order {
		if _, ok := byJob[pl.job]; !ok {
			jobs = append(jobs, pl.job)
		}
		byJob[pl.job] = append(byJob[pl.job], pl)
	}
	var parts []*registry.Change
	var ends [][]string         // the jobs whose launches end in each part
	spans := map[string][]int{} // a job spanning parts → the parts it spans
	cur, size := l.reg.Change(), 0
	var done []string
	cut := func() {
		parts, ends = append(parts, cur), append(ends, done)
		cur, size, done = l.reg.Change(), 0, nil
	}
	for _, job := range jobs {
		ps := byJob[job]
		if size > 0 && size+len(ps) > n {
			cut()
		}
		gang := ""
		if len(ps) > n {
			gang = ps[0].taskID
		}
		for len(ps) > n {
			b.record(cur, ps[:n], gang)
			spans[job] = append(spans[job], len(parts))
			ps = ps[n:]
			cut()
		}
		b.record(cur, ps, gang)
		b.dequeueOf(cur, byJob[job], now)
		if gang != "" {
			cur.MarkGang(job, gang)
			spans[job] = append(spans[job], len(parts))
		}
		size += len(ps)
		done = append(done, job)
	}
	if size > 0 {
		cut()
	}
	applied, err := l.reg.CommitChanges(ctx, parts)
	launched := map[string]bool{}
	for _, part := range ends[:applied] {
		for _, job := range part {
			launched[job] = true
		}
	}
	for job, at := range spans { // a gang cut short: its recorded entries go again
		if !launched[job] && at[0] < applied {
			l.unlaunch(ctx, byJob[job])
		}
	}
	if len(launched) == 0 {
		return nil, err
	}
	if err != nil { // launch what was committed; the rest waits for the next round
		l.log.Debug("launcher: a part of the launch chain failed", "committed_parts", applied, "parts", len(parts), "err", err)
		l.wake()
	}
	return b.only(func(pl placed) bool { return launched[pl.job] }), nil
}

// dequeueOf is dequeue for one job's launches.
func (b *built) dequeueOf(ch *registry.Change, ps []placed, now time.Time) {
	readyDone := false
	for _, p := range ps {
		e := b.byAgent[p.agent].entries[p.i]
		switch {
		case e.fail != nil:
			ch.TakeFailover(*e.fail)
		case !readyDone:
			readyDone = true
			ch.Dequeue(*e.ready, now)
		}
	}
}

// only is b with the launches keep accepts, in the same order.
func (b *built) only(keep func(placed) bool) *built {
	out := &built{byAgent: map[string]*agentLaunch{}}
	events := map[string]observe.TaskEvent{}
	for _, ev := range b.events {
		events[ev.TaskID] = ev
	}
	for _, pl := range b.order {
		if !keep(pl) {
			continue
		}
		from := b.byAgent[pl.agent]
		al := out.byAgent[pl.agent]
		if al == nil {
			al = &agentLaunch{offerIDs: from.offerIDs}
			out.byAgent[pl.agent] = al
			out.agents = append(out.agents, pl.agent)
		}
		al.launches = append(al.launches, from.launches[pl.i])
		al.entries = append(al.entries, from.entries[pl.i])
		np := pl
		np.i = len(al.entries) - 1
		out.order = append(out.order, np)
		out.events = append(out.events, events[pl.taskID])
	}
	return out
}
