package scheduler

import (
	"context"
	"time"

	"github.com/ejcloud/elasticjob/jobs/timing"
)

// inputsRefresh is how stale the plans' inputs (calendars, the
// namespaces' jitter windows) may grow while fires are due: a change
// applies to the instants computed after it is read.
const inputsRefresh = CapacityRefresh

// inputsReadTimeout bounds one read of the inputs.
const inputsReadTimeout = 10 * time.Second

// SetInputs hands in what plans read besides the jobs' schedules (the
// term's reader is Run's; a test may set its own). Safe from any
// goroutine.
func (p *Producer) SetInputs(in timing.Inputs) { p.inputs.Store(&in) }

// readInputs reads the plans' inputs before the term plans an instant,
// retrying a registry that refuses (commitRetryMin doubling to
// commitRetryMax) until it answers or ctx ends (false): planning without
// them would fire a job on its calendar's excluded days.
func (p *Producer) readInputs(ctx context.Context) bool {
	for wait := commitRetryMin; ; wait = min(2*wait, commitRetryMax) {
		if _, err := p.refreshInputs(ctx); err == nil {
			return true
		}
		t := p.Clock.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return false
		case <-t.C():
		}
	}
}

// followInputs reads the inputs again when kicked (staleInputs,
// unplanned) until ctx ends; a failed read keeps the last ones in force.
// Jobs left unplanned for a calendar the inputs did not hold are planned
// again, from where they were, once a read brings new calendars: a
// calendar made just before the job naming it.
func (p *Producer) followInputs(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-p.reread:
		}
		changed, err := p.refreshInputs(ctx)
		if err != nil || !changed {
			continue
		}
		p.mu.Lock()
		waiting := p.unplanned
		p.unplanned = nil
		for job, after := range waiting {
			if p.t.Gen(job) == after.gen { // not scheduled again meanwhile
				p.scheduleLocked(job, after.at)
			}
		}
		p.mu.Unlock()
		if len(waiting) > 0 {
			p.poke()
		}
	}
}

// unplannedAt is where a job left unplanned was to be scheduled from.
type unplannedAt struct {
	at  time.Time
	gen uint64
}

// noteUnplanned remembers a job whose calendar the inputs do not hold
// and asks for a read (under p.mu).
func (p *Producer) noteUnplanned(job string, after time.Time, gen uint64) {
	if p.unplanned == nil {
		p.unplanned = map[string]unplannedAt{}
	}
	p.unplanned[job] = unplannedAt{at: after, gen: gen}
	p.kickInputs()
}

// staleInputs asks for a read when the inputs are older than
// inputsRefresh at now.
func (p *Producer) staleInputs(now time.Time) {
	if in := p.inputs.Load(); in == nil || now.Sub(p.inputsAt(in)) >= inputsRefresh || now.Before(p.inputsAt(in)) {
		p.kickInputs()
	}
}

func (p *Producer) inputsAt(*timing.Inputs) time.Time {
	return time.Unix(0, p.readAt.Load())
}

func (p *Producer) kickInputs() {
	select {
	case p.reread <- struct{}{}:
	default:
	}
}

// refreshInputs reads the inputs once and hands them in if they changed.
func (p *Producer) refreshInputs(ctx context.Context) (changed bool, err error) {
	if p.Registry == nil {
		if p.inputs.Load() == nil {
			p.SetInputs(timing.Inputs{Zone: p.Location, Wide: p.Jitter})
		}
		return false, nil
	}
	rctx, cancel := context.WithTimeout(ctx, inputsReadTimeout)
	defer cancel()
	in, err := p.Registry.Schedule().TimingInputs(rctx, p.Jitter, p.Location)
	if err != nil {
		p.Log.Warn("producer: read the calendars and jitter windows", "err", err)
		return false, err
	}
	p.readAt.Store(p.Clock.Now().UnixNano())
	if old := p.inputs.Load(); old == nil || !old.Equal(in) {
		p.SetInputs(in)
		return true, nil
	}
	return false, nil
}
