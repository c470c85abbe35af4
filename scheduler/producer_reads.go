package scheduler

import (
	"time"

	"github.com/ejcloud/elasticjob/round"
)

// What the rest of the scheduler asks the producer and tells it of the
// ready queue: the next fires (capacities, decline filters) and which
// jobs have a ready entry.

// NoteReady records what the store's watch says of /state/ready/{job}.
func (p *Producer) NoteReady(job string, present bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.t.NoteQueued(job, present)
	if b := p.blocker.Load(); !present && b != nil && *b == job {
		p.poke() // its held fire may be staged now
	}
}

func (p *Producer) believedAbsent(job string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.t.BelievedAbsent(job)
}

// NextFires lists the next fire of each job keep accepts, at or before
// until, soonest first (a job has one next fire: it never runs two
// executions at once; a fire staged ahead and not yet due is its job's
// next). While every job's schedule is worked out again it waits for the
// new one. Safe from any goroutine.
func (p *Producer) NextFires(until time.Time, keep func(job string) bool) []round.Fire {
	p.mu.Lock()
	if done := p.rebuilt; done != nil {
		// Capacities reserve room for these fires: a rebuild's half-known
		// schedule would reserve too little. Wait for it, as the lock did.
		p.mu.Unlock()
		if p.awaitRebuild != nil {
			p.awaitRebuild()
		}
		<-done
		p.mu.Lock()
	}
	defer p.mu.Unlock()
	jobsOnly := func(source string) bool { // a workflow's fire needs no room of its own: its nodes' jobs do
		_, flow := flowOf(source)
		return !flow && keep(source)
	}
	return p.t.NextFires(p.Clock.Now(), until, jobsOnly)
}

// NextFireAt is the soonest instant of a next fire of any job or
// workflow (whose run queues its first nodes' jobs at once), a fire
// staged ahead whose instant has not come included (ok false: none). It
// may be a job's fire since superseded (an update): never later than the
// real soonest. While every job's schedule is worked out again (a term's
// start, a resync) it is not known: a fire may come at any moment. Safe
// from any goroutine.
func (p *Producer) NextFireAt() (time.Time, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.Clock.Now()
	if p.t.Rebuilding() {
		return now.Add(time.Millisecond), true
	}
	return p.t.NextFireAt(now)
}
