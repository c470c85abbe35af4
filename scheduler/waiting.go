package scheduler

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ejcloud/elasticjob/offers"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/store"
)

// Why work waits. Every launch round knows, for each ready entry and
// failover shard it did not launch, why; the reasons of entries that have
// waited longer than waitRecordAfter are recorded in the registry
// (registry.WaitingPath) so any instance can show them, rewritten when the
// reason changes (at most every waitRecordEvery), and forgotten once the
// entry launches or goes.

const (
	waitRecordAfter = time.Second
	waitRecordEvery = time.Second
	waitRefresh     = 30 * time.Second // a changed message alone is rewritten at most this often
	// waitRefreshPerCommit bounds the entries rewritten in one commit for a
	// changed message alone, longest unwritten first. A backlog of 80,000
	// entries behind older work, whose message quotes the round's figures,
	// was otherwise rewritten whole every waitRefresh: 2,700 registry
	// writes a second for figures. A changed reason is always written.
	waitRefreshPerCommit = 500
)

// WaitingObserver is implemented by observers that count waiting work
// (metrics); the scheduler calls it after every launch round.
type WaitingObserver interface {
	Waiting(byReason map[string]int)
}

type waitState struct {
	entries    map[string]waitEntry // key → since when it waits, what the registry holds of it
	recorded   int                  // entries with a record (waitEntry.hasRec)
	loaded     bool
	lastCommit time.Time
	capacity   map[string]offers.Resources // agent → the most it ever offered free
	last       int                         // entries waiting after the last round (the next round's map is made that large)
	// The last round's waiting map and later slice, emptied, for the next
	// round (scratch): with tens of thousands of jobs waiting, making them
	// anew each round was a twelfth of all the scheduler allocated on
	// ZooKeeper. peak is the most entries the map held.
	scratch      map[string]registry.Waiting
	scratchLater []string
	peak         int
}

// waitEntry is what the scheduler keeps of one entry: since when it waits
// (zero once a round found it no longer waiting) and what the registry
// holds of it (rec, written at writtenAt, when hasRec). One map of both:
// three maps of the same 80,000 keys held 31 MB of the scheduler's heap
// with a large backlog (BenchmarkWaitingState).
type waitEntry struct {
	since     time.Time
	rec       registry.Waiting
	writtenAt int64 // UnixNano
	hasRec    bool
}

// setRecord notes what the registry now holds of k, written at at (zero:
// when is not known).
func (ws *waitState) setRecord(k string, rec registry.Waiting, at time.Time) {
	e := ws.entries[k]
	if !e.hasRec {
		ws.recorded++
	}
	e.rec, e.hasRec = rec, true
	if !at.IsZero() {
		e.writtenAt = at.UnixNano()
	}
	ws.entries[k] = e
}

// dropRecord notes that the registry holds nothing of k.
func (ws *waitState) dropRecord(k string) {
	e, ok := ws.entries[k]
	if !ok || !e.hasRec {
		return
	}
	ws.recorded--
	if e.since.IsZero() {
		delete(ws.entries, k)
		return
	}
	e.rec, e.writtenAt, e.hasRec = registry.Waiting{}, 0, false
	ws.entries[k] = e
}

// loadRecords replaces what is known of the registry's records with rec
// (read from it), keeping when this instance wrote those it wrote.
func (ws *waitState) loadRecords(rec map[string]registry.Waiting) {
	for k, e := range ws.entries {
		if _, ok := rec[k]; e.hasRec && !ok {
			ws.dropRecord(k)
		}
	}
	for k, w := range rec {
		ws.setRecord(k, w, time.Time{})
	}
}

// takeScratch hands a round the emptied map and slice of the last one.
func (ws *waitState) takeScratch() (map[string]registry.Waiting, []string) {
	m, l := ws.scratch, ws.scratchLater
	ws.scratch, ws.scratchLater = nil, nil
	if m == nil {
		m = make(map[string]registry.Waiting, ws.last) // about as many as the last round: no growing
	}
	return m, l[:0]
}

// keepScratch empties a finished round's map and slice for the next
// round. A map that once held four times what this round's holds is let
// go: it keeps the room of its largest round.
func (ws *waitState) keepScratch(w work) {
	n := len(w.waiting)
	if n < ws.peak/4 {
		ws.peak = n
		return
	}
	ws.peak = max(ws.peak, n)
	clear(w.waiting)
	clear(w.later) // no strings kept alive through the backing array
	ws.scratch, ws.scratchLater = w.waiting, w.later[:0]
}

func (w *work) wait(key, reason, msg string, until time.Time) {
	if w.waiting == nil {
		w.waiting = map[string]registry.Waiting{}
	}
	w.waiting[key] = registry.Waiting{Reason: reason, Message: msg, Until: until}
}

// waitAll gives every entry the round would have tried or left for later
// the same reason (no round happened).
func (w *work) waitAll(reason, msg string) {
	for _, r := range w.requests {
		w.wait(waitKey(r), reason, msg, time.Time{})
	}
	for _, k := range w.later {
		w.wait(k, reason, msg, time.Time{})
	}
}

func waitKey(r offers.Request) string {
	if r.Kind == offers.Failover {
		return registry.WaitingKey("failover", r.Job, r.Shard)
	}
	return registry.WaitingKey("ready", r.Job, 0)
}

// noteCapacity remembers the most each agent ever offered, to tell work
// that can never fit from work that waits for resources to free up.
func (s *Scheduler) noteCapacity() {
	if s.wait.capacity == nil {
		s.wait.capacity = map[string]offers.Resources{}
	}
	for _, o := range s.offers {
		c := s.wait.capacity[o.AgentID]
		c.CPU = max(c.CPU, offers.CPUs(o.CPUs))
		c.MemMB = max(c.MemMB, offers.MemMB(o.MemMB))
		s.wait.capacity[o.AgentID] = c
	}
}

// explainUnplaced turns the matcher's unplaced requests into reasons, one
// per ready job (a gang) or failover shard. A round may leave tens of
// thousands unplaced, so the requests are indexed once and the messages,
// which depend only on a request's size and the offers held, are worded
// once per size.
func (s *Scheduler) explainUnplaced(w *work, plan offers.Plan, in offers.Input) {
	if len(plan.Unplaced) == 0 {
		return
	}
	type shardKey struct {
		job   string
		shard int
		kind  offers.Kind
	}
	byShard := make(map[shardKey]int, len(in.Requests))
	byJob := map[string][]offers.Request{}
	for i, r := range in.Requests {
		byShard[shardKey{r.Job, r.Shard, r.Kind}] = i
		if r.Kind == offers.Ready {
			byJob[r.Job] = append(byJob[r.Job], r)
		}
	}
	ex := s.newExplainer(in)
	done := make(map[string]bool, len(plan.Unplaced))
	for _, u := range plan.Unplaced {
		kind := "ready"
		if u.Kind == offers.Failover {
			kind = "failover"
		}
		key := registry.WaitingKey(kind, u.Job, u.Shard)
		if done[key] {
			continue
		}
		done[key] = true
		req := offers.Request{Job: u.Job, Shard: u.Shard, Kind: u.Kind}
		if i, ok := byShard[shardKey{u.Job, u.Shard, u.Kind}]; ok {
			req = in.Requests[i]
		}
		if u.Kind == offers.Ready && len(byJob[u.Job]) > 1 && u.Reason == offers.ReasonGangIncomplete {
			w.wait(key, registry.WaitGang, ex.gang(byJob[u.Job]), time.Time{})
			continue
		}
		reason, msg := ex.shard(req, u.Reason)
		w.wait(key, reason, msg, time.Time{})
	}
}

// explainer words the reasons of one round. What it says depends on the
// offers held and the agents' capacity (fixed for the round) and on a
// request's resources, so each distinct size is worded once.
type explainer struct {
	s        *Scheduler
	in       offers.Input
	largest  offers.Resources // the most one agent ever offered
	capacity offers.Resources // all agents' most, summed
	agents   int
	best     offers.Resources // the most free in one held offer
	free     offers.Resources // free in all held offers
	shards   map[shardSize]reasonMsg
	gangs    map[gangSize]string
}

type shardSize struct {
	task, exec offers.Resources
	reason     offers.Reason
}

type gangSize struct {
	n   int
	sum offers.Resources
}

type reasonMsg struct{ reason, msg string }

func (s *Scheduler) newExplainer(in offers.Input) *explainer {
	ex := &explainer{s: s, in: in, agents: len(s.wait.capacity), shards: map[shardSize]reasonMsg{}, gangs: map[gangSize]string{}}
	for _, c := range s.wait.capacity {
		ex.largest.CPU, ex.largest.MemMB = max(ex.largest.CPU, c.CPU), max(ex.largest.MemMB, c.MemMB)
		ex.capacity.CPU, ex.capacity.MemMB = ex.capacity.CPU+c.CPU, ex.capacity.MemMB+c.MemMB
	}
	for _, o := range in.Offers {
		ex.best.CPU, ex.best.MemMB = max(ex.best.CPU, o.Free.CPU), max(ex.best.MemMB, o.Free.MemMB)
		ex.free.CPU, ex.free.MemMB = ex.free.CPU+o.Free.CPU, ex.free.MemMB+o.Free.MemMB
	}
	return ex
}

func (ex *explainer) shard(r offers.Request, reason offers.Reason) (string, string) {
	k := shardSize{r.Task, r.Executor, reason}
	if m, ok := ex.shards[k]; ok {
		return m.reason, m.msg
	}
	var m reasonMsg
	m.reason, m.msg = ex.wordShard(r, reason)
	ex.shards[k] = m
	return m.reason, m.msg
}

func (ex *explainer) wordShard(r offers.Request, reason offers.Reason) (string, string) {
	need := fmt.Sprintf("a shard needs %s CPUs and %s MB (plus %s CPUs and %s MB for the app's executor on an agent where it does not run yet)",
		fmtCPU(r.Task.CPU), fmtMem(r.Task.MemMB), fmtCPU(r.Executor.CPU), fmtMem(r.Executor.MemMB))
	big := ex.largest
	if ex.agents > 0 && (r.Task.CPU+r.Executor.CPU > big.CPU || r.Task.MemMB+r.Executor.MemMB > big.MemMB) {
		return registry.WaitTooLarge, fmt.Sprintf("never fits: %s; the largest agent ever offered %s CPUs and %s MB",
			need, fmtCPU(big.CPU), fmtMem(big.MemMB))
	}
	held := fmt.Sprintf("the %d offers held now have at most %s CPUs and %s MB free", len(ex.in.Offers), fmtCPU(ex.best.CPU), fmtMem(ex.best.MemMB))
	short := func(lacks func(o offers.Offer) bool) int {
		n := 0
		for _, o := range ex.in.Offers {
			if lacks(o) {
				n++
			}
		}
		return n
	}
	switch reason {
	case offers.ReasonInsufficientCPU:
		n := short(func(o offers.Offer) bool { return o.Free.CPU < r.Task.CPU })
		return registry.WaitCPU, fmt.Sprintf("not enough CPU: %s; %s (%d short of CPU)", need, held, n)
	case offers.ReasonInsufficientMem:
		n := short(func(o offers.Offer) bool { return o.Free.MemMB < r.Task.MemMB })
		return registry.WaitMem, fmt.Sprintf("not enough memory: %s; %s (%d short of memory)", need, held, n)
	case offers.ReasonNoOffers:
		return registry.WaitNoOffers, "no resource offers held: waiting for Mesos to offer resources"
	}
	return registry.WaitResources, fmt.Sprintf("no single offer has both: %s; %s", need, held)
}

func (ex *explainer) gang(rs []offers.Request) string {
	var sum offers.Resources
	for _, r := range rs {
		sum.CPU, sum.MemMB = sum.CPU+r.Task.CPU, sum.MemMB+r.Task.MemMB
	}
	k := gangSize{len(rs), sum}
	if m, ok := ex.gangs[k]; ok {
		return m
	}
	msg := fmt.Sprintf("the execution's %d shards launch together and need %s CPUs and %s MB in all; the offers held now have %s CPUs and %s MB free",
		len(rs), fmtCPU(sum.CPU), fmtMem(sum.MemMB), fmtCPU(ex.free.CPU), fmtMem(ex.free.MemMB))
	if ex.agents > 0 && (sum.CPU > ex.capacity.CPU || sum.MemMB > ex.capacity.MemMB) {
		agents := fmt.Sprintf("all %d agents together", ex.agents)
		if ex.agents == 1 {
			agents = "the only agent"
		}
		msg = fmt.Sprintf("never fits the cluster: %s, and %s ever offered %s CPUs and %s MB", msg, agents, fmtCPU(ex.capacity.CPU), fmtMem(ex.capacity.MemMB))
	}
	ex.gangs[k] = msg
	return msg
}

func fmtCPU(c offers.Milli) string { return strconv.FormatFloat(c.Cores(), 'f', -1, 64) }
func fmtMem(m int64) string        { return strconv.FormatInt(m, 10) }
func fmtUntil(t time.Time) string  { return t.UTC().Format(time.RFC3339) }
func shardList(items []int) string { return strings.Trim(fmt.Sprint(items), "[]") }

// recordWaiting updates the recorded reasons after a round and reports the
// counts to the observers.
func (s *Scheduler) recordWaiting(ctx context.Context, w work) {
	ws := &s.wait
	now := s.Clock.Now()
	if ws.entries == nil {
		ws.entries = map[string]waitEntry{}
	}
	ws.last = len(w.waiting)
	counts := map[string]int{}
	for k, wt := range w.waiting {
		counts[wt.Reason]++
		if e := ws.entries[k]; e.since.IsZero() {
			e.since = now
			ws.entries[k] = e
		}
	}
	for k, e := range ws.entries {
		if _, ok := w.waiting[k]; !ok && !e.since.IsZero() {
			if !e.hasRec {
				delete(ws.entries, k)
				continue
			}
			e.since = time.Time{}
			ws.entries[k] = e
		}
	}
	if o, ok := s.Observer.(WaitingObserver); ok {
		o.Waiting(counts)
	}
	if !ws.loaded {
		rec, err := s.Registry.WaitingReasons(ctx)
		if err != nil {
			s.Log.Warn("waiting: read recorded reasons", "err", err)
			return
		}
		ws.loadRecords(rec)
		ws.loaded = true
	}
	if next := ws.lastCommit.Add(waitRecordEvery); now.Before(next) {
		if len(w.waiting) > 0 || ws.recorded > 0 {
			s.wakeAt(next)
		}
		return
	}
	ops, puts, more := s.waitingOps(w, now, s.waitingCommitOps())
	if more {
		s.wakeAt(now.Add(waitRecordEvery)) // the rest in the next commits
	}
	if len(ops) == 0 {
		return
	}
	ws.lastCommit = now
	if err := s.Registry.Commit(ctx, ops...); err != nil {
		if ctx.Err() == nil { // else stopping: the next leader records them
			s.Log.Warn("waiting: record reasons", "entries", len(ops), "err", err)
		}
		ws.loaded = false // re-read what is there next time
		return
	}
	for _, op := range ops {
		k := strings.TrimPrefix(op.Path, registry.WaitingPath+"/")
		if op.Kind == store.OpDelete {
			ws.dropRecord(k)
			continue
		}
		ws.setRecord(k, puts[k], now)
	}
}

// waitingCommitOps bounds the ops of one commit of reasons: twice a launch
// round's tasks (a reason is about half the bytes of a task's launch ops),
// none when rounds are unbounded. On ZooKeeper a commit is one multi, which
// must stay under its request limit: a backlog of 80,000 new entries made
// one multi of 80,000 ops that failed ("zk: buffer too small") every
// second, was rebuilt and failed again, and held the launch loop while it
// did (the simulated cluster launched 11 tasks a second).
func (s *Scheduler) waitingCommitOps() int { return 2 * s.Options.MaxRoundTasks }

// boundWaitingOps keeps max of the ops, deletes first (entries no longer
// waiting; their reasons are wrong), each kind in path order.
func boundWaitingOps(keys []string, isPut func(string) bool, max int) []string {
	out := make([]string, 0, max)
	for _, put := range []bool{false, true} {
		for _, k := range keys {
			if len(out) == max {
				return out
			}
			if isPut(k) == put {
				out = append(out, k)
			}
		}
	}
	return out
}

// waitingOps computes the writes: entries that waited long enough with a
// new reason (or, at most waitRefreshPerCommit of them, a changed message),
// and entries no longer waiting; in path order. With max > 0 it returns at
// most max ops (boundWaitingOps: deletes first) and more is true when some
// were left for the next commits; only the puts it returns are encoded.
func (s *Scheduler) waitingOps(w work, now time.Time, max int) (ops []store.Op, puts map[string]registry.Waiting, more bool) {
	ws := &s.wait
	puts = map[string]registry.Waiting{}
	var stale []string // only the message changed, and was written waitRefresh ago
	for k, wt := range w.waiting {
		e := ws.entries[k]
		if now.Sub(e.since) < waitRecordAfter {
			s.wakeAt(e.since.Add(waitRecordAfter))
			continue
		}
		wt.Since = e.since
		rec := e.rec
		switch {
		case !e.hasRec || rec.Reason != wt.Reason || !rec.Until.Equal(wt.Until) || !rec.Since.Equal(wt.Since):
			puts[k] = wt
		case rec.Message != wt.Message && now.UnixNano()-e.writtenAt >= int64(waitRefresh):
			stale = append(stale, k)
		}
	}
	if len(stale) > waitRefreshPerCommit {
		sort.Slice(stale, func(i, j int) bool {
			a, b := ws.entries[stale[i]].writtenAt, ws.entries[stale[j]].writtenAt
			return a < b || a == b && stale[i] < stale[j]
		})
		stale = stale[:waitRefreshPerCommit]
		s.wakeAt(now.Add(waitRecordEvery)) // the rest in the next commits
	}
	for _, k := range stale {
		wt := w.waiting[k]
		wt.Since = ws.entries[k].since
		puts[k] = wt
	}
	keys := make([]string, 0, len(puts))
	for k := range puts {
		keys = append(keys, k)
	}
	for k, e := range ws.entries {
		if _, ok := w.waiting[k]; !ok && e.hasRec {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	if max > 0 && len(keys) > max {
		keys = boundWaitingOps(keys, func(k string) bool { _, ok := puts[k]; return ok }, max)
		more = true
	}
	ops = make([]store.Op, 0, len(keys))
	for _, k := range keys {
		if wt, ok := puts[k]; ok {
			ops = append(ops, registry.PutWaitingOp(k, wt))
		} else {
			ops = append(ops, registry.DeleteWaitingOp(k))
		}
	}
	return ops, puts, more
}

// notRunnable gives the reason of an entry of a job that may not run.
func (s *Scheduler) notRunnable(w *work, key, job string) {
	j, ok := s.catalog.Job(job)
	switch {
	case !ok:
		return // deleted: the entry goes
	case s.catalog.JobDisabled(job):
		w.wait(key, registry.WaitJobDisabled, "the job is disabled", time.Time{})
	case j.AppName != "" && !s.catalog.AppActive(j.AppName):
		w.wait(key, registry.WaitAppDisabled, fmt.Sprintf("the job's app %s is disabled or missing", j.AppName), time.Time{})
	}
}
