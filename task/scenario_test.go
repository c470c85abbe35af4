package task

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/internal/datadriven"
)

// TestScenarios reads testdata/*.txt: each case is a status update with
// what the registry holds about its task (its entry, its job, the run's
// other shards, its record and run state) before "----", and what
// Transition decides after it (internal/datadriven; -rewrite writes the
// expected decisions from what Transition returns).
//
// Input lines (times are seconds after t0; states, reasons and sources
// may be written short: lost, invalid_offers, master):
//
//	now S
//	job NAME [missing] [disabled] [daemon] [failover] retries=N backoff=S pause=N
//	entry [task=ID] state=STATE attempts=N runkey=K killedby=WHO param=P scheduled=S
//	update STATE [task=ID] reason=R source=S message="…"
//	overtaken | others-running | retry-pending | run-pending
//	item N
//	report started=S ended=S out.KEY=VALUE…
//	record [failed] [done]
//	recorded ITEM STATE [message="…"]
//	runs consecutive=N [failed] [succeeded] cause="…"
//
// The entry counts only when its task is the update's (else the shard
// runs another task, as the status handler reads it). Task ids default
// to t1.
func TestScenarios(t *testing.T) {
	datadriven.Glob(t, "testdata/*.txt", func(t *testing.T, c datadriven.Case) []string {
		return renderOutcome(Transition(parseInput(t, c)))
	})
}

func at(s string) time.Time {
	if s == "" {
		return t0
	}
	n, err := strconv.ParseFloat(s, 64)
	if err != nil {
		panic(fmt.Sprintf("a time in seconds: %q", s))
	}
	return t0.Add(time.Duration(n * float64(time.Second)))
}

func sec(t time.Time) string { return strconv.FormatFloat(t.Sub(t0).Seconds(), 'f', -1, 64) }

func count(s string) int {
	if s == "" {
		return 0
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		panic(fmt.Sprintf("a count: %q", s))
	}
	return n
}

// long spells a short word the way engines do: lost → TASK_LOST.
func long(prefix, s string) string {
	if s == "" || strings.HasPrefix(s, prefix) {
		return s
	}
	return prefix + strings.ToUpper(s)
}

func parseInput(t *testing.T, c datadriven.Case) Input {
	t.Helper()
	in := Input{Now: t0, Update: Update{TaskID: "t1"}}
	var entry *Entry
	for n, l := range c.Input {
		w, err := datadriven.Fields(l)
		if err != nil {
			t.Fatalf("%s: %v", c.Where(n), err)
		}
		if len(w) == 0 {
			continue
		}
		m := datadriven.KV(w[1:])
		arg := func(i int) string {
			if len(w) <= i {
				t.Fatalf("%s: %q needs more words", c.Where(n), l)
			}
			return w[i]
		}
		switch w[0] {
		case "now":
			in.Now = at(arg(1))
		case "job":
			exists := m["missing"] == ""
			in.Job = Job{Name: arg(1), Exists: exists, Runnable: exists && m["disabled"] == "", Daemon: m["daemon"] != "",
				Failover: m["failover"] != "", MaxRetries: count(m["retries"]), PauseAfterFailures: count(m["pause"]),
				RetryBackoff: at(m["backoff"]).Sub(t0)}
		case "entry":
			e := Entry{TaskID: "t1", State: State(long("TASK_", m["state"])), Attempts: count(m["attempts"]), RunKey: m["runkey"], KilledBy: m["killedby"],
				StagingWhenLost: m["staging-when-lost"] != ""}
			if id := m["task"]; id != "" {
				e.TaskID = id
			}
			if p, ok := m["param"]; ok {
				e.Parameter = &p
			}
			if s := m["scheduled"]; s != "" {
				e.ScheduledAt = at(s)
			}
			entry = &e
		case "update":
			in.Update.State = State(long("TASK_", arg(1)))
			in.Update.Reason, in.Update.Source = Reason(long("REASON_", m["reason"])), Source(long("SOURCE_", m["source"]))
			in.Update.Message = m["message"]
			if id := m["task"]; id != "" {
				in.Update.TaskID = id
			}
		case "overtaken":
			in.Overtaken = true
		case "relaunching":
			in.Relaunching = true
		case "others-running":
			in.OthersRunning = true
		case "retry-pending":
			in.RetryPending = true
		case "run-pending":
			in.RunPending = true
		case "item":
			in.Item = count(arg(1))
		case "report":
			in.Report = Report{StartedAt: at(m["started"]), EndedAt: at(m["ended"])}
			for k, v := range m {
				if key, ok := strings.CutPrefix(k, "out."); ok {
					if in.Report.Outputs == nil {
						in.Report.Outputs = map[string]string{}
					}
					in.Report.Outputs[key] = v
				}
			}
		case "record":
			in.Record.JobName, in.Record.At = in.Job.Name, t0
			in.Record.Failed, in.Record.Done = m["failed"] != "", m["done"] != ""
		case "recorded":
			in.Record.Shards = append(in.Record.Shards, ShardOutcome{Item: count(arg(1)), TaskID: "t0", State: State(long("TASK_", arg(2))),
				Message: m["message"], EndedAt: t0})
		case "runs":
			in.Runs = RunState{Consecutive: count(m["consecutive"]), Failed: m["failed"] != "", Succeeded: m["succeeded"] != "", Cause: m["cause"]}
		default:
			t.Fatalf("%s: unknown line %q", c.Where(n), l)
		}
	}
	if entry != nil && entry.TaskID == in.Update.TaskID {
		in.Entry = entry
	}
	return in
}

// words lists the names whose flags are on, in order.
func words(pairs ...any) string {
	var out []string
	for i := 0; i < len(pairs); i += 2 {
		if pairs[i].(bool) {
			out = append(out, pairs[i+1].(string))
		}
	}
	return strings.Join(out, " ")
}

func line(head string, rest ...string) string {
	for _, r := range rest {
		if r != "" {
			head += " " + r
		}
	}
	return head
}

func renderOutcome(o Outcome) []string {
	var out []string
	if o.Stale {
		out = append(out, line("stale", words(o.Kill, "kill", o.Reconcile, "reconcile", o.Forget, "forget")))
	}
	if o.Overtaken {
		out = append(out, "overtaken")
	}
	if o.Message != "" {
		out = append(out, "message "+strconv.Quote(o.Message))
	}
	if o.Unreachable {
		out = append(out, "unreachable timer starts")
	}
	if e := o.Mark; e != nil {
		out = append(out, line(fmt.Sprintf("mark %s updated=%s", e.State, sec(e.UpdatedAt)), words(e.StagingWhenLost, "staging-when-lost")))
	}
	if e := o.End; e != nil {
		out = append(out, renderEnd(e)...)
	}
	if len(out) == 0 {
		out = append(out, "nothing changes")
	}
	return out
}

func renderEnd(e *End) []string {
	out := []string{line("end "+string(e.Result), words(e.RunEnds, "run-ends", e.RecordDone, "record-done", e.Notify, "notify", e.RequeueDaemon, "requeue-daemon"))}
	if r := e.Retry; r != nil {
		kind := "failover"
		if r.Retry {
			kind = "retry within the run"
		}
		when := "at once"
		if !r.NotBefore.IsZero() {
			when = "not before " + sec(r.NotBefore)
		}
		s := fmt.Sprintf("again: %s, attempt %d, %s, since=%s", kind, r.Attempts, when, sec(r.Since))
		if r.Parameter != nil {
			s += " param=" + strconv.Quote(*r.Parameter)
		}
		if !r.ScheduledAt.IsZero() {
			s += " scheduled=" + sec(r.ScheduledAt)
		}
		if r.RunKey != "" {
			s += " runkey=" + r.RunKey
		}
		out = append(out, s)
	}
	if rec := e.Record; rec != nil {
		s := line("record job="+rec.JobName, words(rec.Done, "done", rec.Success, "success", rec.Failed, "failed"))
		if !rec.EndedAt.IsZero() {
			s += " ended=" + sec(rec.EndedAt)
		}
		out = append(out, s)
		for _, sh := range rec.Shards {
			s := fmt.Sprintf("  shard %d %s %s ended=%s", sh.Item, sh.TaskID, sh.State, sec(sh.EndedAt))
			if sh.Message != "" {
				s += " message=" + strconv.Quote(sh.Message)
			}
			if !sh.StartedAt.IsZero() {
				s += " started=" + sec(sh.StartedAt)
			}
			keys := make([]string, 0, len(sh.Outputs))
			for k := range sh.Outputs {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				s += " out." + k + "=" + strconv.Quote(sh.Outputs[k])
			}
			out = append(out, s)
		}
	}
	if r := e.Runs; r != nil {
		s := line(fmt.Sprintf("runs consecutive=%d", r.Consecutive), words(r.Failed, "failed", r.Succeeded, "succeeded"))
		if r.Cause != "" {
			s += " cause=" + strconv.Quote(r.Cause)
		}
		if !r.LastFailedAt.IsZero() {
			s += " last-failed=" + sec(r.LastFailedAt) + " last-cause=" + strconv.Quote(r.LastCause)
		}
		out = append(out, s)
	}
	if p := e.Pause; p != nil {
		out = append(out, fmt.Sprintf("pause by=%s failed-runs=%d at=%s cause=%q", p.By, p.FailedRuns, sec(p.At), p.Cause),
			"  reason "+strconv.Quote(p.Reason))
	}
	return out
}
