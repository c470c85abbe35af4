package soak

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// fateNames name the fates in Fate's order.
var fateNames = []string{"own-run", "collapse", "catch-up", "replay", "stall", "cleared", "relaunch", "lost-before-start", "backlog"}

func (f Fate) String() string {
	var out []string
	for i, n := range fateNames {
		if f&(1<<i) != 0 {
			out = append(out, n)
		}
	}
	return strings.Join(out, ",")
}

// PrintExpectations writes the expectations the checker judges job's
// history against (ejsoak -recheck DIR -expect JOB): one line per expected
// fire with the fates granted and their bounds, then the edge fires and
// the backlog allowed at the end.
func PrintExpectations(w io.Writer, in Input, job string) error {
	i := slices.IndexFunc(in.Jobs, func(j Job) bool { return j.Name == job })
	if i < 0 {
		return fmt.Errorf("soak: no job %q in the workload", job)
	}
	j := in.Jobs[i]
	if j.Daemon {
		return fmt.Errorf("soak: job %s is a DAEMON job: it has no fires to expect", job)
	}
	if in.Slack == 0 {
		in.Slack = time.Second
	}
	runs, _ := pair(in.Runs)
	je := expectJob(j, expectEnv{slack: in.Slack, end: in.End, faults: faultLog(in, runs), pending: in.Pending[job], pendingAt: in.PendingAt})
	if je.err != nil {
		return je.err
	}
	clock := func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return t.UTC().Format("15:04:05.000")
	}
	fmt.Fprintf(w, "job %s (misfire=%v): %d fires expected\n", job, j.Misfire, len(je.fires))
	for _, e := range je.fires {
		fmt.Fprintf(w, "  %s fates %s; queued from %s by %s; relaunch by %s; cut %s; rules %s\n", clock(e.at), e.fates, clock(e.stagedFrom),
			clock(e.queuedBy), clock(e.relaunchBy), clock(e.cut), strings.Join(e.rules, ","))
	}
	for _, f := range je.edge {
		fmt.Fprintf(w, "  %s edge fire: may run once\n", clock(f.at))
	}
	if je.backlog > 0 {
		fmt.Fprintf(w, "  backlog at the end: up to %d of the last fires\n", je.backlog)
	}
	return nil
}
