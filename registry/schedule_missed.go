package registry

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ejcloud/elasticjob/queue"
	"github.com/ejcloud/elasticjob/store"
)

// firedPath holds the producer's watermark: every cron fire scheduled at or
// before this instant has been committed (or collapsed into a pending
// execution). It is written in the same commit as the fires.
const firedPath = "/state/producer/fired_until"

// FiredUntil returns the watermark (ok false when none was recorded yet:
// no producer ever fired here); see Watermark.
func (sc Schedule) FiredUntil(ctx context.Context) (time.Time, bool, error) {
	w, err := sc.Watermark(ctx)
	return w.Until, w.OK, err
}

// Watermark is the producer's watermark as a new leader reads it.
type Watermark struct {
	Until time.Time // the watermark (zero when none was recorded)
	OK    bool      // one was recorded
	// CopyBehind: the registry was read through a copy (store/cache) that
	// held an earlier watermark, CopyUntil, than its backing store. A new
	// leader reads after the copy caught up with the terms before, so this
	// is never expected; it is reported, and the store's value is used.
	CopyBehind bool
	CopyUntil  time.Time
}

// backed is a store.KV that serves reads from a copy of another store
// (store/cache.KV).
type backed interface{ Backing() store.KV }

// Watermark reads the producer's watermark. Read through a copy of the
// registry, it also reads the backing store and returns the later of the
// two: a watermark read too early replays fires that already ran, so the
// one read that decides a replay does not rest on the copy alone.
func (sc Schedule) Watermark(ctx context.Context) (Watermark, error) {
	at, ok, err := firedUntilIn(ctx, sc.r.phys)
	if err != nil {
		return Watermark{}, err
	}
	w := Watermark{Until: at, OK: ok}
	b, isCopy := sc.r.phys.(backed) // the watermark has no namespace
	if !isCopy {
		return w, nil
	}
	sat, sok, err := firedUntilIn(ctx, b.Backing())
	if err != nil {
		return Watermark{}, err
	}
	if sok && (!ok || sat.After(at)) {
		w = Watermark{Until: sat, OK: true, CopyBehind: true, CopyUntil: at}
	}
	return w, nil
}

func firedUntilIn(ctx context.Context, kv store.KV) (time.Time, bool, error) {
	n, err := kv.Get(ctx, firedPath)
	if errors.Is(err, store.ErrNotFound) {
		return time.Time{}, false, nil
	}
	if err != nil {
		return time.Time{}, false, err
	}
	t, err := time.Parse(time.RFC3339Nano, string(n.Value))
	if err != nil {
		return time.Time{}, false, decodeErr(firedPath, err) // the producer replays nothing, and writes it anew
	}
	return t, true, nil
}

// missedBatch bounds the jobs of one catch-up commit (a variable: tests
// cut a catch-up into batches with a few jobs).
var missedBatch = 500

// Missed is what a new leader found it missed of one job: fires scheduled
// after the watermark and up to its start.
type Missed struct {
	Fires   int  // how many instants passed (≥ 1)
	Misfire bool // the job's misfire flag
	// After, when set, is the instant the fires were counted after: the
	// commit is then behind the job's gate (gate.go), so a disable,
	// update or deregister landing meanwhile voids them.
	After time.Time
	// Instants, when set, are the instants missed, oldest first: each
	// execution queued serves the next (queue.Ready.Nominal); one
	// collapsing them all (misfire=false) serves the first.
	Instants []time.Time
}

// TriggerMissed queues the executions of fires missed while no leader was
// firing, each job by its misfire rule (misfire=false: one execution for
// all of them; misfire=true: one per fire, up to MaxPending), and moves
// the watermark to until. Jobs are committed in batches in name order; the
// watermark goes with the last batch, so a crash before it replays the
// catch-up (which for misfire=false jobs collapses again).
func (sc Schedule) TriggerMissed(ctx context.Context, missed map[string]Missed, until time.Time) error {
	return sc.TriggerMissedOnce(ctx, missed, until, "")
}

// TriggerMissedOnce is TriggerMissed for a catch-up that may be tried
// again, with the same missed and until, after a try that failed part
// way (a batch committed, a later one refused) or with an unknown outcome
// (TriggerFiresOnce): each batch writes id and its number to
// firedCommitPath, on the version it read, and a try skips the batches
// the node says landed, so no misfire=true job is queued twice for the
// same missed fires. An empty id is TriggerMissed.
func (sc Schedule) TriggerMissedOnce(ctx context.Context, missed map[string]Missed, until time.Time, id string) error {
	names := make([]string, 0, len(missed))
	for n := range missed {
		names = append(names, n)
	}
	sort.Strings(names)
	mark := store.Put(firedPath, []byte(until.UTC().Format(time.RFC3339Nano)))
	for k, start := 0, 0; start < len(names) || start == 0; k, start = k+1, start+missedBatch {
		end := min(start+missedBatch, len(names))
		last := end == len(names)
		b := missedBatchOf{names: names[start:end], last: last, id: id, k: k}
		if err := sc.r.triggerMissedBatch(ctx, b, missed, until, mark); err != nil {
			return err
		}
		if last {
			return nil
		}
	}
	return nil
}

// missedBatchOf is one commit of a catch-up: its jobs, whether it is the
// last (the watermark goes with it), and the catch-up's id (empty: none)
// and the batch's number.
type missedBatchOf struct {
	names []string
	last  bool
	id    string
	k     int
}

// progress is the op recording the batch in firedCommitPath, on the
// version of the node read now from kv; landed: the node says this batch
// (or a later one) of the catch-up landed already.
func (b missedBatchOf) progress(ctx context.Context, kv store.KV) (op []store.Op, landed bool, err error) {
	if b.id == "" {
		return nil, false, nil
	}
	v := []byte(b.id + "/" + strconv.Itoa(b.k))
	n, err := kv.Get(ctx, firedCommitPath)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return []store.Op{store.Create(firedCommitPath, v)}, false, nil
	case err != nil:
		return nil, false, err
	}
	if done, ok := strings.CutPrefix(string(n.Value), b.id+"/"); ok {
		if k, err := strconv.Atoi(done); err == nil && k >= b.k {
			return nil, true, nil
		}
	}
	return []store.Op{store.Set(firedCommitPath, v, n.Version)}, false, nil
}

func (r *Registry) triggerMissedBatch(ctx context.Context, b missedBatchOf, missed map[string]Missed, now time.Time, mark store.Op) error {
	for range maxCASRetries {
		ops, landed, err := b.progress(ctx, r.kv)
		if err != nil || landed {
			return err
		}
		for _, job := range b.names {
			m := missed[job]
			gate, open, err := gate(ctx, r.kv, job, m.After)
			if err != nil {
				return err
			}
			if !open {
				continue
			}
			ops = append(ops, gate...)
			fires, instants := m.Fires, m.Instants
			if !m.Misfire {
				fires = 1
			} else if len(instants) > 0 {
				kept, err := notQueued(ctx, r.kv, job, instants)
				if err != nil {
					return err
				}
				fires, instants = fires-(len(instants)-len(kept)), kept
			}
			for k := range fires {
				var nominal time.Time
				if k < len(instants) {
					nominal = instants[k]
				}
				entry, changed, err := r.triggerOpOver(ctx, job, queue.Trigger{Misfire: m.Misfire, At: now, By: ByCatchUp, Nominal: nominal}, ops)
				if errors.Is(err, ErrDamaged) {
					break // its entry is set aside: the rest fire
				}
				if err != nil {
					return err
				}
				if !changed {
					break
				}
				for _, op := range entry {
					ops = replaceOp(ops, op)
				}
			}
		}
		if b.last {
			ops = append(ops, mark)
		}
		if len(ops) == 0 {
			return nil
		}
		err = r.commit(ctx, ops...)
		if errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrExists) || errors.Is(err, store.ErrNotFound) {
			continue
		}
		return err
	}
	return fmt.Errorf("registry: queue missed fires: %w after %d tries", ErrConflict, maxCASRetries)
}

// triggerOpOver is triggerOp applied on top of an op of the same batch that
// already wrote the job's entry (its generation's op is in the batch too).
func (r *Registry) triggerOpOver(ctx context.Context, job string, t queue.Trigger, batch []store.Op) ([]store.Op, bool, error) {
	p := ReadyPath + "/" + job
	for i := len(batch) - 1; i >= 0; i-- {
		if batch[i].Path != p {
			continue
		}
		cur, err := decodeReady(store.Node{Path: p, Value: batch[i].Value})
		if err != nil {
			return nil, false, err
		}
		rd, changed := queue.Add(&cur, t, r.maxPending)
		if !changed {
			return nil, false, nil
		}
		op := batch[i]
		op.Value = encodeAt(p, rd)
		return []store.Op{op}, true, nil
	}
	return r.triggerOp(ctx, job, t)
}

// replaceOp puts op in place of an earlier op on its path, or appends it.
func replaceOp(ops []store.Op, op store.Op) []store.Op {
	for i := range ops {
		if ops[i].Path == op.Path {
			ops[i] = op
			return ops
		}
	}
	return append(ops, op)
}
