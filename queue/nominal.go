package queue

import (
	"slices"
	"time"
)

// NominalRun is N plain executions in a row serving the cron instants At,
// At+Every, At+2·Every, … (Ready.Nominal); At zero: N serving none
// recorded. A backlog a stall or a catch-up left on a regular cron is one
// run, whatever its length, so an entry stays small.
type NominalRun struct {
	At    time.Time     `json:"at,omitzero"`
	Every time.Duration `json:"every,omitempty"`
	N     int           `json:"n"`
}

// maxNominalRuns bounds an entry's runs: beyond it the oldest are
// forgotten (their executions serve none recorded), so an irregular
// cron's long backlog never grows an entry (and the commit writing it)
// past a few hundred bytes.
const maxNominalRuns = 8

// at is the instant of the run's i-th execution.
func (r NominalRun) at(i int) time.Time {
	if r.At.IsZero() {
		return time.Time{}
	}
	return r.At.Add(time.Duration(i) * r.Every)
}

// nominalLen is how many executions rs records.
func nominalLen(rs []NominalRun) int {
	n := 0
	for _, r := range rs {
		n += r.N
	}
	return n
}

// nominalAt is the instant of execution i of rs.
func nominalAt(rs []NominalRun, i int) time.Time {
	for _, r := range rs {
		if i < r.N {
			return r.at(i)
		}
		i -= r.N
	}
	return time.Time{}
}

// addNominal appends the instant of one more plain execution (a copy:
// entries are shared): nothing while none is recorded and at is zero.
func addNominal(rs []NominalRun, at time.Time) []NominalRun {
	if at.IsZero() && len(rs) == 0 {
		return rs
	}
	if !at.IsZero() {
		at = at.UTC()
	}
	out := slices.Clone(rs)
	if n := len(out); n > 0 {
		l := &out[n-1]
		switch {
		case at.IsZero() && l.At.IsZero():
			l.N++
			return out
		case at.IsZero() || l.At.IsZero():
		case l.N == 1 && at.After(l.At):
			l.Every, l.N = at.Sub(l.At), 2
			return out
		case l.N > 1 && at.Equal(l.at(l.N)):
			l.N++
			return out
		}
	}
	out = append(out, NominalRun{At: at, N: 1})
	if len(out) > maxNominalRuns {
		out = out[1:]
	}
	return out
}

// dropNominal is rs without its first k executions (a copy).
func dropNominal(rs []NominalRun, k int) []NominalRun {
	out := slices.Clone(rs)
	for k > 0 && len(out) > 0 {
		if out[0].N <= k {
			k -= out[0].N
			out = out[1:]
			continue
		}
		out[0].At = out[0].at(k)
		out[0].N -= k
		k = 0
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// prependNominal puts the instant of one more execution first (a copy).
func prependNominal(rs []NominalRun, at time.Time) []NominalRun {
	if !at.IsZero() {
		at = at.UTC()
	}
	if len(rs) > 0 {
		f := rs[0]
		switch {
		case at.IsZero() && f.At.IsZero():
			return append([]NominalRun{{N: f.N + 1}}, rs[1:]...)
		case at.IsZero() || f.At.IsZero():
		case f.N == 1 && at.Before(f.At):
			return append([]NominalRun{{At: at, Every: f.At.Sub(at), N: 2}}, rs[1:]...)
		case f.N > 1 && f.At.Sub(at) == f.Every:
			return append([]NominalRun{{At: at, Every: f.Every, N: f.N + 1}}, rs[1:]...)
		}
	}
	out := append([]NominalRun{{At: at, N: 1}}, rs...)
	if len(out) > maxNominalRuns { // the oldest beyond the bound are forgotten
		out = dropNominal(out, out[0].N)
	}
	return out
}

// NominalInstants lists the instants rd records, one per execution of
// the newest plain ones, oldest first (a zero time: none recorded).
func (rd Ready) NominalInstants() []time.Time {
	var out []time.Time
	for _, r := range rd.Nominal {
		for i := range r.N {
			out = append(out, r.at(i))
		}
	}
	return out
}

// plain is how many of rd's executions have no override.
func (rd Ready) plain() int { return max(rd.Count-len(rd.Runs), 0) }

// FirstNominal is the cron instant the execution that launches next
// serves (zero: none recorded; an execution with an override serves none).
func (rd Ready) FirstNominal() time.Time {
	i := nominalLen(rd.Nominal) - rd.plain()
	if len(rd.Runs) > 0 || rd.plain() == 0 || i < 0 {
		return time.Time{}
	}
	return nominalAt(rd.Nominal, i)
}

// takeNominal is rd's instants once its next execution launched.
func (rd Ready) takeNominal() []NominalRun {
	if i := nominalLen(rd.Nominal) - rd.plain(); len(rd.Runs) == 0 && rd.plain() > 0 && i >= 0 { // a plain one with its instant
		return dropNominal(rd.Nominal, i+1)
	}
	return rd.Nominal
}

// WithFirstPlain is rd with one more plain execution first among the plain
// ones, serving instant at (zero: none; Requeue): the instants recorded
// stay the newest executions'.
func (rd Ready) WithFirstPlain(at time.Time) Ready {
	n := rd.plain()
	rd.Count++
	if k := nominalLen(rd.Nominal); k > n {
		rd.Nominal = dropNominal(rd.Nominal, k-n)
	}
	k := nominalLen(rd.Nominal)
	if at.IsZero() && (k < n || k == 0) {
		return rd // it is among the executions before those recorded
	}
	ns := rd.Nominal
	if pad := n - k; pad > 0 { // the executions between serve none recorded
		ns = append([]NominalRun{{N: pad}}, ns...)
	}
	rd.Nominal = prependNominal(ns, at)
	return rd
}
