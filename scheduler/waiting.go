package scheduler

import (
	"context"
	"github.com/ejcloud/elasticjob/observe"
	"log/slog"
	"sort"
	"time"

	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/queue"
	"github.com/ejcloud/elasticjob/registry"
)

// Why work waits. Every launch round knows, for each ready entry and
// failover shard it did not launch, why; the reasons of entries that have
// waited longer than waitRecordAfter are recorded in the registry
// (/state/waiting) so any instance can show them, rewritten when the
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

type waitState struct {
	entries    map[string]waitEntry // key → since when it waits, what the registry holds of it
	recorded   int                  // entries with a record (waitEntry.hasRec)
	loaded     bool
	lastCommit time.Time
}

// waitEntry is what the scheduler keeps of one entry: since when it waits
// (zero once a round found it no longer waiting) and what the registry
// holds of it (rec, written at writtenAt, when hasRec). One map of both:
// three maps of the same 80,000 keys held 31 MB of the scheduler's heap
// with a large backlog (BenchmarkWaitingState).
type waitEntry struct {
	since     time.Time
	rec       queue.Wait
	writtenAt int64 // UnixNano
	hasRec    bool
}

// setRecord notes what the registry now holds of k, written at at (zero:
// when is not known).
func (ws *waitState) setRecord(k string, rec queue.Wait, at time.Time) {
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
	e.rec, e.writtenAt, e.hasRec = queue.Wait{}, 0, false
	ws.entries[k] = e
}

// loadRecords replaces what is known of the registry's records with rec
// (read from it), keeping when this instance wrote those it wrote.
func (ws *waitState) loadRecords(rec map[string]queue.Wait) {
	for k, e := range ws.entries {
		if _, ok := rec[k]; e.hasRec && !ok {
			ws.dropRecord(k)
		}
	}
	for k, w := range rec {
		ws.setRecord(k, w, time.Time{})
	}
}

// waitRecorder records why work waits: the reasons of entries that have
// waited longer than waitRecordAfter go to the registry, rewritten when
// the reason changes (at most every waitRecordEvery), and forgotten once
// the entry launches or goes.
type waitRecorder struct {
	reg    *registry.Registry
	clock  clock.Clock
	log    *slog.Logger
	gauges observe.Gauges
	alarm  *alarm
	opts   *Options // commitTasks bounds a commit of reasons
	ws     waitState
}

// recorded is the reason recorded for the entry of key (ok false: none;
// an entry is recorded once it has waited waitRecordAfter).
func (r *waitRecorder) recorded(key string) (queue.Wait, bool) {
	e, ok := r.ws.entries[key]
	if !ok || !e.hasRec {
		return queue.Wait{}, false
	}
	w := e.rec
	w.Since = e.since
	return w, true
}

// record updates the recorded reasons after a round and reports the
// counts to the observers.
func (r *waitRecorder) record(ctx context.Context, waiting map[string]queue.Wait) {
	ws := &r.ws
	now := r.clock.Now()
	if ws.entries == nil {
		ws.entries = map[string]waitEntry{}
	}
	counts := map[string]int{}
	for k, wt := range waiting {
		counts[wt.Reason]++
		if e := ws.entries[k]; e.since.IsZero() {
			e.since = now
			ws.entries[k] = e
		}
	}
	for k, e := range ws.entries {
		if _, ok := waiting[k]; !ok && !e.since.IsZero() {
			if !e.hasRec {
				delete(ws.entries, k)
				continue
			}
			e.since = time.Time{}
			ws.entries[k] = e
		}
	}
	if o, ok := r.gauges.(observe.Waiting); ok {
		o.Waiting(counts)
	}
	if !ws.loaded {
		rec, err := r.reg.Work().WaitingReasons(ctx)
		if err != nil {
			r.log.Warn("waiting: read recorded reasons", "err", err)
			return
		}
		ws.loadRecords(rec)
		ws.loaded = true
	}
	if next := ws.lastCommit.Add(waitRecordEvery); now.Before(next) {
		if len(waiting) > 0 || ws.recorded > 0 {
			r.alarm.set(next)
		}
		return
	}
	keys, puts, more := r.waitingKeys(waiting, now, 2*r.opts.commitTasks())
	if more {
		r.alarm.set(now.Add(waitRecordEvery)) // the rest in the next commits
	}
	if len(keys) == 0 {
		return
	}
	ws.lastCommit = now
	ops := r.reg.Change()
	for _, k := range keys {
		if w, ok := puts[k]; ok {
			ops.Wait(k, w)
		} else {
			ops.Unwait(k)
		}
	}
	if err := ops.Commit(ctx); err != nil {
		if ctx.Err() == nil { // else stopping: the next leader records them
			r.log.Warn("waiting: record reasons", "entries", ops.Len(), "err", err)
		}
		ws.loaded = false // re-read what is there next time
		return
	}
	for _, k := range keys {
		if w, ok := puts[k]; ok {
			ws.setRecord(k, w, now)
		} else {
			ws.dropRecord(k)
		}
	}
}

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

// waitingKeys computes the writes: entries that waited long enough with a
// new reason (or, at most waitRefreshPerCommit of them, a changed message),
// and entries no longer waiting (in keys, not in puts); in path order.
// With max > 0 (on ZooKeeper a commit is one multi, which must stay under
// its request limit: twice a launch round's tasks, a reason being about
// half the bytes of a task's launch ops) it returns at most max keys
// (boundWaitingOps: deletes first) and more is true when some were left
// for the next commits.
func (r *waitRecorder) waitingKeys(waiting map[string]queue.Wait, now time.Time, max int) (keys []string, puts map[string]queue.Wait, more bool) {
	ws := &r.ws
	puts = map[string]queue.Wait{}
	var stale []string // only the message changed, and was written waitRefresh ago
	for k, wt := range waiting {
		e := ws.entries[k]
		if now.Sub(e.since) < waitRecordAfter {
			r.alarm.set(e.since.Add(waitRecordAfter))
			continue
		}
		wt.Since = e.since
		rec := e.rec
		switch {
		case !e.hasRec || rec.Reason != wt.Reason || !rec.Until.Equal(wt.Until) || !rec.Since.Equal(wt.Since) || !sameHolders(rec, wt):
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
		r.alarm.set(now.Add(waitRecordEvery)) // the rest in the next commits
	}
	for _, k := range stale {
		wt := waiting[k]
		wt.Since = ws.entries[k].since
		puts[k] = wt
	}
	keys = make([]string, 0, len(puts))
	for k := range puts {
		keys = append(keys, k)
	}
	for k, e := range ws.entries {
		if _, ok := waiting[k]; !ok && e.hasRec {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	if max > 0 && len(keys) > max {
		keys = boundWaitingOps(keys, func(k string) bool { _, ok := puts[k]; return ok }, max)
		more = true
	}
	return keys, puts, more
}

// sameHolders: the same jobs hold what both waits need (a new holder is
// written at once, as a new reason is; its figures only with the message).
func sameHolders(a, b queue.Wait) bool {
	if len(a.Holders) != len(b.Holders) {
		return false
	}
	for i := range a.Holders {
		if a.Holders[i].Job != b.Holders[i].Job {
			return false
		}
	}
	return true
}
