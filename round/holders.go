package round

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ejcloud/elasticjob/estimate"
	"github.com/ejcloud/elasticjob/offers"
	"github.com/ejcloud/elasticjob/queue"
	"github.com/ejcloud/elasticjob/task"
)

func resOf(r offers.Resources) queue.Res { return queue.Res{CPUs: r.CPU.Cores(), MemMB: r.MemMB} }

// resWords: "2 CPUs and 256 MB".
func resWords(r queue.Res) string {
	return fmtRes(offers.Resources{CPU: offers.CPUs(r.CPUs), MemMB: r.MemMB})
}

// maxHolders bounds the holders a wait names.
const maxHolders = 5

// holders names the running work on the agents c could use (those large
// enough for one of its shards), soonest expected end first.
func (o *occupancy) holders(c *cand) []queue.Holder {
	sh := c.shape()
	need := sh.task.Add(sh.exec) // the agents it could fit on are those whose total holds a task and its executor
	if hs, ok := o.holdersOf[need]; ok {
		return hs
	}
	if o.holdersOf == nil {
		o.holdersOf = map[offers.Resources][]queue.Holder{}
	}
	hs := slices.Clip(o.holdersFor(need))
	o.holdersOf[need] = hs
	return hs
}

// holdersFor names the running work on the agents whose total holds need,
// soonest expected end first (at most maxHolders).
func (o *occupancy) holdersFor(need offers.Resources) []queue.Holder {
	by := map[string]*holding{}
	for _, a := range o.cluster {
		if !need.Fits(a.Total) {
			continue
		}
		for _, rt := range o.tasksByAgent()[a.ID] {
			o.addHolder(by, rt)
		}
	}
	return o.sortHolders(by)
}

// holdersWhere names the running work of the jobs keep selects, on any
// agent (a namespace's own work, for a wait at its limit).
func (o *occupancy) holdersWhere(keep func(job string) bool) []queue.Holder {
	by := map[string]*holding{}
	o.v.eachHeld(func(job string, shards map[int]task.Entry, retiring bool) {
		if !keep(job) {
			return
		}
		cfg, _, _ := o.v.Jobs.Lookup(job)
		res := offers.Resources{CPU: offers.CPUs(cfg.CPUCount), MemMB: offers.MemMB(cfg.MemoryMB)}
		for item, e := range shards {
			o.addHolder(by, runTask{job: job, item: item, entry: e, res: res, retiring: retiring})
		}
	})
	return o.sortHolders(by)
}

// holding gathers one job's tasks into its holder. A shard in a move's overlap may have
// both its running task and its retiring one (View.Retiring) among them: both hold, and
// count against the namespace, but it is one shard (moving notes which it has).
type holding struct {
	queue.Holder
	tasks  int
	moving map[int]uint8 // shard in an overlap → heldRunning | heldRetiring (nil: none)
}

const (
	heldRunning uint8 = 1 << iota
	heldRetiring
)

func (o *occupancy) addHolder(by map[string]*holding, rt runTask) {
	h := by[rt.job]
	if h == nil {
		h = &holding{Holder: queue.Holder{Job: rt.job, Since: rt.entry.LaunchedAt, TaskID: rt.entry.TaskID}}
		by[rt.job] = h
	}
	h.tasks++
	if _, moving := o.v.Retiring[rt.job][rt.item]; moving {
		if h.moving == nil {
			h.moving = map[int]uint8{}
		}
		if rt.retiring {
			h.moving[rt.item] |= heldRetiring
		} else {
			h.moving[rt.item] |= heldRunning
		}
	}
	h.Holds = queue.Res{CPUs: h.Holds.CPUs + rt.res.CPU.Cores(), MemMB: h.Holds.MemMB + rt.res.MemMB}
	if rt.entry.LaunchedAt.Before(h.Since) || (rt.entry.LaunchedAt.Equal(h.Since) && rt.entry.TaskID < h.TaskID) {
		h.Since, h.TaskID = rt.entry.LaunchedAt, rt.entry.TaskID
	}
}

// sortHolders gives the holders their shards (a moving one once, noted Moving, its
// overlap's end MoveEndsBy) and expected ends, soonest first, at most maxHolders.
func (o *occupancy) sortHolders(by map[string]*holding) []queue.Holder {
	out := make([]queue.Holder, 0, len(by))
	for _, hg := range by {
		h := &hg.Holder
		for item, held := range hg.moving {
			if held == heldRunning|heldRetiring {
				h.Moving++
				if until := o.v.Retiring[h.Job][item].Until; until.After(h.MoveEndsBy) {
					h.MoveEndsBy = until
				}
			}
		}
		h.Shards = hg.tasks - h.Moving
		cfg, _, _ := o.v.Jobs.Lookup(h.Job)
		typical := o.v.Typical[h.Job]
		timeout := time.Duration(cfg.TimeoutSeconds) * time.Second
		h.ExpectedEnd, h.Basis = estimate.End(h.Since, typical, timeout)
		if typical.Known {
			h.TypicalMs = typical.P90.Milliseconds()
		}
		h.TimeoutMs = timeout.Milliseconds()
		h.Holds.CPUs = offers.CPUs(h.Holds.CPUs).Cores() // no float noise from the sum
		out = append(out, *h)
	}
	slices.SortFunc(out, func(a, b queue.Holder) int {
		if a.ExpectedEnd.IsZero() != b.ExpectedEnd.IsZero() {
			return cmp.Compare(boolInt(a.ExpectedEnd.IsZero()), boolInt(b.ExpectedEnd.IsZero()))
		}
		return cmp.Or(a.ExpectedEnd.Compare(b.ExpectedEnd), cmp.Compare(b.Holds.CPUs, a.Holds.CPUs), cmp.Compare(a.Job, b.Job))
	})
	return out[:min(len(out), maxHolders)]
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// withHolders adds what c needs and who holds it to a wait about
// resources (its message names the holders, with their expected ends).
func (o *occupancy) withHolders(c *cand, w queue.Wait) queue.Wait {
	sh := c.shape()
	need := offers.Resources{CPU: sh.task.CPU * offers.Milli(sh.n), MemMB: sh.task.MemMB * int64(sh.n)}
	w.Needs = &queue.Res{}
	*w.Needs = resOf(need)
	w.Holders = o.holders(c)
	if len(w.Holders) == 0 {
		return w
	}
	parts := make([]string, len(w.Holders))
	for i, h := range w.Holders {
		parts[i] = holderWords(h)
	}
	w.Message += "; held by " + strings.Join(parts, ", ")
	return w
}

// words: "job x (1 shard, 2 CPUs and 256 MB) until it ends, expected by
// 2026-11-25T00:00:08Z (the p90 of its recent runs: 8s)"; a moving shard:
// "job d (1 shard, moving: old and new task, one of them until
// 2026-11-25T00:01:00Z at the latest; 2 CPUs and 256 MB) until it ends …".
func holderWords(h queue.Holder) string {
	s := fmt.Sprintf("%s (%s, %s) until it ends", holderName(h), plural(h.Shards, "shard"), resWords(h.Holds))
	if h.Moving > 0 {
		s = fmt.Sprintf("%s (%s, %s; %s) until it ends", holderName(h), plural(h.Shards, "shard"), movingWords(h), resWords(h.Holds))
	}
	switch h.Basis {
	case estimate.BasisP90:
		s += fmt.Sprintf(", expected by %s (the p90 of its recent runs: %s)", fmtUntil(h.ExpectedEnd), time.Duration(h.TypicalMs)*time.Millisecond)
	case estimate.BasisTimeout:
		s += fmt.Sprintf(", at the latest by %s (its timeout: %s)", fmtUntil(h.ExpectedEnd), time.Duration(h.TimeoutMs)*time.Millisecond)
	default:
		s += " (no run of it known to tell when)"
	}
	return s
}

// Summary says in a line what the entry waits for and when the holders
// are expected to free it, as of now: "waits for 1.9 CPUs and 512 MB;
// job pay_settle_3 holds 2 CPUs and 256 MB until it ends (running 5s of
// its usual 8s)". Empty when the wait names no resources.
func Summary(w queue.Wait, now time.Time) string {
	if w.Needs == nil {
		return ""
	}
	s := "waits for " + resWords(*w.Needs)
	for _, h := range w.Holders {
		moving := ""
		if h.Moving > 0 {
			moving = " (" + movingWords(h) + ")"
		}
		s += fmt.Sprintf("; %s holds %s%s until it ends (%s)", holderName(h), resWords(h.Holds), moving, holderProgress(h, now))
	}
	return s
}

// movingWords words a holder's shards in a move's overlap: "moving: old and new task,
// one of them until T at the latest"; of several shards, "1 of them moving: old and new
// task, one of the two until T at the latest" or "2 of them moving: old and new task
// each, one of each until T at the latest". Both tasks are in what the holder holds:
// both count against its namespace until then.
func movingWords(h queue.Holder) string {
	by := fmtUntil(h.MoveEndsBy) + " at the latest"
	switch {
	case h.Shards == 1:
		return "moving: old and new task, one of them until " + by
	case h.Moving == 1:
		return "1 of them moving: old and new task, one of the two until " + by
	}
	return fmt.Sprintf("%d of them moving: old and new task each, one of each until %s", h.Moving, by)
}

// name: "job x", or OtherWork for another namespace's work Redact hid.
func holderName(h queue.Holder) string {
	if h.Other {
		return OtherWork
	}
	return "job " + h.Job
}

// progress: "running 5s of its usual 8s", "running 5s, its timeout 1m0s",
// "running 12s, longer than its usual 8s".
func holderProgress(h queue.Holder, now time.Time) string {
	ran := now.Sub(h.Since).Truncate(time.Second)
	if ran < 0 {
		ran = 0
	}
	switch h.Basis {
	case estimate.BasisP90:
		usual := (time.Duration(h.TypicalMs) * time.Millisecond).Round(100 * time.Millisecond)
		if now.After(h.ExpectedEnd) {
			return fmt.Sprintf("running %s, longer than its usual %s", ran, usual)
		}
		return fmt.Sprintf("running %s of its usual %s", ran, usual)
	case estimate.BasisTimeout:
		return fmt.Sprintf("running %s, its timeout %s", ran, time.Duration(h.TimeoutMs)*time.Millisecond)
	}
	return fmt.Sprintf("running %s; no earlier run known", ran)
}

// withExecutors adds to a no_offers wait the apps' executors on the agents
// c could use: each holds its app's share (an idle one too, until it
// exits), which the running tasks' count does not see, so they may be
// what the offers lack (else the wait names nobody).
func (o *occupancy) withExecutors(c *cand, w queue.Wait) queue.Wait {
	sh := c.shape()
	byAgent := map[string][]string{}
	for k := range o.v.Executors {
		byAgent[k.AgentID] = append(byAgent[k.AgentID], k.App)
	}
	var parts []string
	for _, a := range o.cluster {
		apps := byAgent[a.ID]
		if len(apps) == 0 || fitCount(a.Total, sh.task, sh.exec, 1) == 0 {
			continue
		}
		slices.Sort(apps)
		parts = append(parts, fmt.Sprintf("%s (%s)", joinAnd(apps), a.ID))
	}
	if len(parts) == 0 {
		return w
	}
	what := "the agent also runs the executors of apps "
	if len(parts) > 1 {
		what = "the agents also run the executors of apps "
	}
	w.Message += "; " + what + strings.Join(parts, ", ") + ", each holding its app's share until it exits"
	return w
}

// joinAnd joins words as "a", "a and b", "a, b and c".
func joinAnd(words []string) string {
	if len(words) <= 1 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " and " + words[len(words)-1]
}
