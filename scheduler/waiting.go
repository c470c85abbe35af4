package scheduler

import (
	"context"
	"hash/maphash"
	"log/slog"
	"slices"
	"time"

	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/observe"
	"github.com/ejcloud/elasticjob/queue"
	"github.com/ejcloud/elasticjob/registry"
)

// Why work waits. Every launch round knows, for each ready entry and
// failover shard it did not launch, why; the reasons of entries that have
// waited longer than waitRecordAfter are recorded in the registry
// (/state/waiting) so any instance can show them, rewritten when the
// reason changes (at most every waitRecordEvery; between the reasons of
// waiting behind other work, as a changed message is: behindWork), and
// forgotten once the entry launches or goes.

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
	// kept are entries the round meant to launch whose launch did not
	// commit: they wait as before, so the next record neither forgets
	// their reasons nor starts their wait over.
	kept map[string]bool
}

// keep notes an entry whose planned launch did not commit (kept).
func (r *waitRecorder) keep(key string) {
	if r.kept == nil {
		r.kept = map[string]bool{}
	}
	r.kept[key] = true
}

// recorded is the reason recorded for the entry of key (ok false: none;
// an entry is recorded once it has waited waitRecordAfter), read from the
// registry (its copy in memory) when this instance knows there is one.
func (r *waitRecorder) recorded(ctx context.Context, key string) (queue.Wait, bool) {
	e, ok := r.ws.entries[key]
	if !ok || !e.rec.has {
		return queue.Wait{}, false
	}
	w, ok, err := r.reg.Work().WaitingOf(ctx, key)
	if err != nil || !ok {
		return queue.Wait{}, false
	}
	if e.since != 0 {
		w.Since = clock.FromUnixNano(e.since)
	}
	return w, true
}

// record updates the recorded reasons after a round and reports the
// counts to the observers. queued (nil: unknown) says since when an entry
// of the round's queues waits: an entry seen waiting for the first time
// (under load the first round to see it may come late; a launch rolled
// back puts it back) has waited since it was queued, not since this
// round, and its reason is recorded once that is waitRecordAfter ago.
func (r *waitRecorder) record(ctx context.Context, waiting map[string]queue.Wait, queued func(key string) (time.Time, bool)) {
	ws := &r.ws
	now := r.clock.Now()
	if ws.entries == nil {
		ws.entries = map[string]waitEntry{}
	}
	kept := r.kept
	r.kept = nil
	counts := map[string]int{}
	for k, wt := range waiting {
		counts[wt.Reason]++
		if e := ws.entries[k]; e.since == 0 {
			e.since = now.UnixNano()
			if queued != nil {
				if at, ok := queued(k); ok && at.Before(now) {
					e.since = at.UnixNano()
				}
			}
			ws.entries[k] = e
		}
	}
	for k, e := range ws.entries {
		if _, ok := waiting[k]; !ok && e.since != 0 && !kept[k] {
			if !e.rec.has {
				delete(ws.entries, k)
				continue
			}
			e.since = 0
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
	keys, puts, more := r.waitingKeys(waiting, kept, now, 2*r.opts.commitTasks())
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

// waitingKeys computes the writes of one commit: entries that waited long
// enough with a new reason (or, at most waitRefreshPerCommit of them, the
// longest unwritten first, a changed message, or a change between the
// reasons of waiting behind other work: behindWork), and entries no longer
// waiting (in keys, not in puts); keys in path order. With max > 0 (on
// ZooKeeper a commit is one multi, which must stay under its request
// limit: twice a launch round's tasks, a reason being about half the bytes
// of a task's launch ops) it returns at most max keys, the deletes first
// (their reasons are wrong), each kind the first in path order, and more
// is true when some were left for the next commits.
//
// It selects as it goes (picks: bounded heaps), so a pass over a backlog of
// 90,000 entries with new reasons holds the max it writes, not a map and a
// sorted list of all of them rebuilt every second (BenchmarkWaitingKeys).
func (r *waitRecorder) waitingKeys(waiting map[string]queue.Wait, kept map[string]bool, now time.Time, max int) (keys []string, puts map[string]queue.Wait, more bool) {
	ws := &r.ws
	dels := pick[string]{n: max, less: func(a, b string) bool { return a < b }}
	for k, e := range ws.entries {
		if _, ok := waiting[k]; !ok && e.rec.has && !kept[k] {
			dels.add(k)
		}
	}
	room := 0 // 0: no bound
	if max > 0 {
		room = max - len(dels.items)
		if room == 0 {
			room = -1 // no put in this commit
		}
	}
	changed := pick[string]{n: room, less: func(a, b string) bool { return a < b }}
	stale := pick[staleKey]{n: waitRefreshPerCommit, less: staleKey.before} // only the message changed, and was written waitRefresh ago
	for k, wt := range waiting {
		e := ws.entries[k]
		if now.UnixNano()-e.since < int64(waitRecordAfter) {
			r.alarm.set(clock.FromUnixNano(e.since).Add(waitRecordAfter))
			continue
		}
		rec := e.rec
		moved := rec.reason != wt.Reason || !sameHolders(rec, wt)
		switch {
		case !rec.has || rec.until != clock.UnixNano(wt.Until) || rec.since != e.since || moved && !behindWork(rec.reason, wt.Reason):
			changed.add(k)
		case (moved || rec.message != maphash.String(recSeed, wt.Message)) && now.UnixNano()-e.writtenAt >= int64(waitRefresh):
			stale.add(staleKey{e.writtenAt, k})
		}
	}
	if stale.seen > waitRefreshPerCommit {
		r.alarm.set(now.Add(waitRecordEvery)) // the rest in the next commits
	}
	for _, s := range stale.items {
		changed.add(s.key)
	}
	puts = make(map[string]queue.Wait, len(changed.items))
	for _, k := range changed.items {
		wt := waiting[k]
		wt.Since = clock.FromUnixNano(ws.entries[k].since)
		puts[k] = wt
	}
	keys = append(dels.items, changed.items...)
	slices.Sort(keys)
	return keys, puts, dels.seen+changed.seen-len(keys) > 0
}

// behindWork reports whether an entry that waited for reason a and now waits for reason b
// waits behind other work of the backlog both times (behind_older_work: the round's bound
// reached by older work; behind_reservation: what it needs held for older work, whose
// holders follow the running work): a backlog past a round's bound flips between the two,
// and between holders, from one round to the next, and rewriting every entry each time was
// most of a round under load (9,000 reasons a round, 0.8–2 s). Such a change is refreshed as
// a changed message is (waitRefresh); a change to or from any other reason is written at
// once.
func behindWork(a, b string) bool {
	return (a == queue.WaitBehind || a == queue.WaitReservation) && (b == queue.WaitBehind || b == queue.WaitReservation)
}

// sameHolders: the same jobs hold what both waits need (a new holder is
// written at once, as a new reason is; its figures only with the message).
func sameHolders(rec recSum, w queue.Wait) bool {
	return rec.holders == holdersHash(w)
}
