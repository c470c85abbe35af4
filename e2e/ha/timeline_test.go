//go:build e2e

package ha

import (
	"bufio"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/ejcloud/elasticjob/e2e/harness"
)

// term is one leadership of one scheduler life, from its own log: from
// "leading term=N" to "no longer leading term=N".
type term struct {
	inst  string
	life  int
	seq   string
	start time.Time
	end   time.Time // when it ended (see terms); zero while it lasts
	how   string    // what ended it: the log's cause, "killed", or "paused"
}

func (tm term) String() string {
	end := "open"
	if !tm.end.IsZero() {
		end = tm.end.Format("15:04:05.000")
	}
	return fmt.Sprintf("%s/%d term %s %s..%s (%s)", tm.inst, tm.life, tm.seq, tm.start.Format("15:04:05.000"), end, tm.how)
}

var (
	leadingLine = regexp.MustCompile(`^time=(\S+) level=\S+ msg=leading term=(\d+)`)
	endedLine   = regexp.MustCompile(`^time=(\S+) level=\S+ msg="no longer leading" term=(\d+)(?: cause="?([^"]*))?`)
	// lapsedCause is a term ended by its lease (election.ErrLeaseLapse).
	lapsedCause = regexp.MustCompile(`last confirmed (\S+) ago \(lease (\S+)\)`)
)

// lapsedAt is when the authority of a term that ended by its lease lapsed:
// its leader refuses every act once the lease has run from its last
// confirmation (election.Term.Valid), and logs the end only when it next
// looks, later under load. The cause says how long ago the last
// confirmation was at that look; the log line comes after it, so at −
// since + lease is no earlier than the lapse. at otherwise.
func lapsedAt(at time.Time, cause string) time.Time {
	m := lapsedCause.FindStringSubmatch(cause)
	if m == nil {
		return at
	}
	since, err1 := time.ParseDuration(m[1])
	lease, err2 := time.ParseDuration(m[2])
	if err1 != nil || err2 != nil || since < lease {
		return at
	}
	return at.Add(lease - since)
}

// pause is a span in which a life was stopped with SIGSTOP.
type pause struct{ from, to time.Time }

// terms reads every life's log. A term still open when its process died
// ends when the process was seen dead; a term that spans a SIGSTOP ends
// when its lease lapsed (the pause plus c.lease: a third of the session
// timeout on ZooKeeper, half the election's lease TTL on etcd)
// if it logged no earlier end: from then on the process may not act (what
// it did after resuming is checked separately, from what reached
// ZooKeeper and Mesos).
func (c *cluster) terms(pauses map[*harness.Proc][]pause) []term {
	var all []term
	lease := c.lease
	for _, in := range c.instances() {
		for i, p := range in.lives {
			ts := parseTerms(p.Log())
			for k := range ts {
				tm := &ts[k]
				tm.inst, tm.life = in.name, i
				for _, ps := range pauses[p] {
					if tm.start.Before(ps.from) && (tm.end.IsZero() || tm.end.After(ps.from.Add(lease))) {
						tm.end, tm.how = ps.from.Add(lease), "paused: lease lapsed "+lease.String()+" into the pause"
					}
				}
				if tm.end.IsZero() && !p.Running() {
					tm.end, tm.how = p.DiedAt(), "killed"
				}
			}
			all = append(all, ts...)
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].start.Before(all[j].start) })
	return all
}

func parseTerms(log string) []term {
	var out []term
	sc := bufio.NewScanner(strings.NewReader(log))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if m := leadingLine.FindStringSubmatch(line); m != nil {
			if at, err := time.Parse(time.RFC3339Nano, m[1]); err == nil {
				out = append(out, term{seq: m[2], start: at})
			}
			continue
		}
		if m := endedLine.FindStringSubmatch(line); m != nil {
			at, err := time.Parse(time.RFC3339Nano, m[1])
			if err != nil {
				continue
			}
			for k := len(out) - 1; k >= 0; k-- {
				if out[k].seq == m[2] && out[k].end.IsZero() {
					out[k].end, out[k].how = lapsedAt(at, m[3]), m[3]
					break
				}
			}
		}
	}
	return out
}

// acting ends each term killed with SIGKILL when the signal was sent (the
// process could do nothing after it; terms() ends it when it was seen
// dead, later): the span in which it could commit a fire.
func (c *cluster) acting(ts []term) []term {
	out := append([]term(nil), ts...)
	for i, tm := range out {
		if tm.how != "killed" {
			continue
		}
		for _, in := range c.instances() {
			if in.name == tm.inst && tm.life < len(in.lives) {
				if k := in.lives[tm.life].KilledAt(); !k.IsZero() && k.Before(tm.end) {
					out[i].end = k
				}
			}
		}
	}
	return out
}

// overlaps returns every pair of terms that overlap in time: more than one
// leader at some instant.
func overlaps(ts []term) []string {
	var bad []string
	for i := 1; i < len(ts); i++ {
		for j := 0; j < i; j++ {
			if ts[j].end.IsZero() || ts[j].end.After(ts[i].start) {
				bad = append(bad, fmt.Sprintf("%v overlaps %v", ts[j], ts[i]))
			}
		}
	}
	return bad
}

// checkOneLeader fails the test if two terms ever overlapped, and returns
// the terms.
func (c *cluster) checkOneLeader(pauses map[*harness.Proc][]pause) []term {
	c.t.Helper()
	ts := c.terms(pauses)
	for _, b := range overlaps(ts) {
		c.t.Errorf("two leaders at once: %s", b)
	}
	if c.t.Failed() {
		c.t.Logf("terms:\n%s", joinLines(ts))
	}
	return ts
}

func joinLines[T any](xs []T) string {
	var b strings.Builder
	for _, x := range xs {
		fmt.Fprintf(&b, "  %v\n", x)
	}
	return b.String()
}

// leader returns the instance whose running life holds an open term (the
// latest one if, wrongly, several do), or nil.
func (c *cluster) leader() *instance {
	var best *instance
	var since time.Time
	for _, in := range c.instances() {
		p := in.life()
		if !p.Running() {
			continue
		}
		ts := parseTerms(p.Log())
		if n := len(ts); n > 0 && ts[n-1].end.IsZero() && ts[n-1].start.After(since) {
			best, since = in, ts[n-1].start
		}
	}
	return best
}

// leaderSince returns the current leader and when its term began.
func (c *cluster) leaderSince() (*instance, time.Time) {
	in := c.leader()
	if in == nil {
		return nil, time.Time{}
	}
	ts := parseTerms(in.life().Log())
	return in, ts[len(ts)-1].start
}

// awaitLeader waits for a leader other than `not` (nil: any) whose term
// began after `after`.
func (c *cluster) awaitLeader(not *instance, after time.Time) (*instance, time.Time) {
	c.t.Helper()
	var in *instance
	var since time.Time
	eventually(c.t, waitLong, func() bool {
		in, since = c.leaderSince()
		return in != nil && in != not && since.After(after)
	}, "a new leader (terms so far:\n%s)", lazy(func() any { return joinLines(c.terms(nil)) }))
	return in, since
}

// lazy formats its value only when the message is printed.
type lazy func() any

func (l lazy) String() string { return fmt.Sprint(l()) }
