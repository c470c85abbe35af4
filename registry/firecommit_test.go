package registry

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/store"
)

// ambiguousKV fails the first fire commit (one that writes a ready
// entry) with store.ErrUnavailable, an error whose outcome is unknown:
// applied (the commit landed, its reply was lost) or held (the commit
// lands later, when land is called).
type ambiguousKV struct {
	store.KV
	mu      sync.Mutex
	armed   bool
	apply   bool       // apply the failed commit before failing it
	held    []store.Op // the failed commit, when not applied
	before  func()     // runs once before the next fire commit reaches the store
	commits int        // fire commits that reached the store
}

func (k *ambiguousKV) Commit(ctx context.Context, ops ...store.Op) error {
	if !slices.ContainsFunc(ops, func(op store.Op) bool { return strings.HasPrefix(op.Path, ReadyPath+"/") }) {
		return k.KV.Commit(ctx, ops...)
	}
	k.mu.Lock()
	armed, apply, before := k.armed, k.apply, k.before
	k.armed, k.before = false, nil
	k.mu.Unlock()
	if before != nil {
		before()
	}
	if armed {
		if !apply {
			k.mu.Lock()
			k.held = slices.Clone(ops)
			k.mu.Unlock()
			return fmt.Errorf("store: commit: %w (request timed out)", store.ErrUnavailable)
		}
		if err := k.KV.Commit(ctx, ops...); err != nil {
			return err
		}
		return fmt.Errorf("store: commit: %w (connection lost)", store.ErrUnavailable)
	}
	k.mu.Lock()
	k.commits++
	k.mu.Unlock()
	return k.KV.Commit(ctx, ops...)
}

// land commits the held commit as it was sent.
func (k *ambiguousKV) land(ctx context.Context) error {
	k.mu.Lock()
	ops := k.held
	k.mu.Unlock()
	return k.KV.Commit(ctx, ops...)
}

// TestARetriedFireCommitLandsOnce: a fire commit that failed with an
// error whose outcome is unknown is tried again with the same id; a
// misfire=true job gets one execution for the instant whether the first
// try landed before the retry, lands late after the retry's reads (or
// after the retry landed), or never lands. A commit with another id adds
// the next instant.
func TestARetriedFireCommitLandsOnce(t *testing.T) {
	eachFireStore(t, func(t *testing.T, under store.KV) {
		for _, tc := range []struct {
			name string
			// apply: the first try landed before it failed; late: it lands
			// as the retry is in flight ("in flight") or after it ("after")
			apply bool
			late  string
		}{
			{"landed", true, ""},
			{"lost", false, ""},
			{"landing in flight", false, "in flight"},
			{"landing after the retry", false, "after"},
		} {
			for _, blind := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s blind=%v", tc.name, blind), func(t *testing.T) {
					ctx := t.Context()
					kv := &ambiguousKV{KV: under, armed: true, apply: tc.apply}
					fires, api := New(kv), New(under)
					if err := api.Config().AddJobAt(ctx, gateRigApp(t, api), t0); err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { _ = api.Config().DeleteJob(context.Background(), "j") })
					var absent func(string) bool
					if blind {
						absent = func(string) bool { return true }
					}
					instant := t0.Add(2 * time.Second)
					batch := map[string]CronFire{"j": {Misfire: true, At: instant, Instant: instant, Config: jobSum(t, api, "j")}}
					if _, err := fires.Work().TriggerFiresOnce(ctx, batch, instant, "c1", absent); err == nil {
						t.Fatal("the first try did not fail")
					}
					if tc.late == "in flight" {
						kv.before = func() {
							if err := kv.land(ctx); err != nil {
								t.Errorf("the first try landing late: %v", err)
							}
						}
					}
					if _, err := fires.Work().TriggerFiresOnce(ctx, batch, instant, "c1", absent); err != nil {
						t.Fatalf("retry: %v", err)
					}
					if tc.late == "after" {
						if err := kv.land(ctx); err == nil {
							t.Error("the first try landed after the retry had")
						}
					}
					if rd := count(t, api, "j"); rd.Count != 1 {
						t.Fatalf("pending %d for one instant, want 1", rd.Count)
					}
					if w, err := api.Schedule().Watermark(ctx); err != nil || !w.Until.Equal(instant) {
						t.Fatalf("watermark %+v %v, want %v", w, err, instant)
					}
					next := t0.Add(3 * time.Second)
					batch["j"] = CronFire{Misfire: true, At: next, Instant: next, Config: jobSum(t, api, "j")}
					if _, err := fires.Work().TriggerFiresOnce(ctx, batch, next, "c2", absent); err != nil {
						t.Fatal(err)
					}
					if rd := count(t, api, "j"); rd.Count != 2 {
						t.Fatalf("pending %d after the next commit, want 2", rd.Count)
					}
				})
			}
		}
	})
}

// nthFailingKV fails the nth commit that writes a ready entry (1-based),
// once: applied first (landed, its reply lost: store.ErrUnavailable) or
// refused.
type nthFailingKV struct {
	store.KV
	mu    sync.Mutex
	n     int
	apply bool
	seen  int
}

func (k *nthFailingKV) Commit(ctx context.Context, ops ...store.Op) error {
	if !slices.ContainsFunc(ops, func(op store.Op) bool { return strings.HasPrefix(op.Path, ReadyPath+"/") }) {
		return k.KV.Commit(ctx, ops...)
	}
	k.mu.Lock()
	k.seen++
	fail := k.seen == k.n
	k.mu.Unlock()
	if !fail {
		return k.KV.Commit(ctx, ops...)
	}
	if !k.apply {
		return fmt.Errorf("store: commit: database or disk is full")
	}
	if err := k.KV.Commit(ctx, ops...); err != nil {
		return err
	}
	return fmt.Errorf("store: commit: %w (connection lost)", store.ErrUnavailable)
}

// TestARetriedCatchUpQueuesEachJobOnce: a catch-up of more jobs than one
// commit holds fails part way (its second batch refused, or a batch that
// landed reported failed), and the producer tries it again with the same
// missed fires and id: each misfire=true job has its missed fires queued
// once, and the watermark moves.
func TestARetriedCatchUpQueuesEachJobOnce(t *testing.T) {
	defer func(n int) { missedBatch = n }(missedBatch)
	missedBatch = 2 // 3 jobs: two batches
	eachStore(t, func(t *testing.T, under store.KV) {
		api, ctx := New(under), t.Context()
		jobs := addCatchUpJobs(t, api)
		for _, tc := range []struct {
			name  string
			n     int
			apply bool
		}{
			{"second batch refused", 2, false},
			{"first batch landed, reported failed", 1, true},
			{"last batch landed, reported failed", 2, true},
		} {
			t.Run(tc.name, func(t *testing.T) {
				for i := range jobs {
					if err := api.Work().ClearReady(ctx, fmt.Sprintf("j%04d", i)); err != nil {
						t.Fatal(err)
					}
				}
				kv := &nthFailingKV{KV: under, n: tc.n, apply: tc.apply}
				missed := map[string]Missed{}
				for i := range jobs {
					missed[fmt.Sprintf("j%04d", i)] = Missed{Fires: 2, Misfire: true, After: t0.Add(time.Second)}
				}
				until := t0.Add(10 * time.Second)
				id := "catch-up " + tc.name
				if err := New(kv).Schedule().TriggerMissedOnce(ctx, missed, until, id); err == nil {
					t.Fatal("the first try did not fail")
				}
				if err := New(kv).Schedule().TriggerMissedOnce(ctx, missed, until, id); err != nil {
					t.Fatalf("retry: %v", err)
				}
				for i := range jobs {
					if rd := count(t, api, fmt.Sprintf("j%04d", i)); rd.Count != 2 {
						t.Fatalf("j%04d: %d pending, want its 2 missed fires once", i, rd.Count)
					}
				}
				if w, err := api.Schedule().Watermark(ctx); err != nil || !w.Until.Equal(until) {
					t.Fatalf("watermark %+v %v, want %v", w, err, until)
				}
			})
		}
	})
}

// TestANextTermsCatchUpSkipsTheInstantsADeadOneQueued: a term's catch-up of more jobs
// than one commit holds lands its first batch and the term ends before the last (the
// watermark goes with it). The next term counts the missed fires from the same
// watermark, up to its own start, under another id: the misfire=true instants the
// first batch queued are not queued again, the later ones are, and the jobs of the
// batch that never landed get all of theirs.
func TestANextTermsCatchUpSkipsTheInstantsADeadOneQueued(t *testing.T) {
	defer func(n int) { missedBatch = n }(missedBatch)
	missedBatch = 2 // 3 jobs: two batches
	eachStore(t, func(t *testing.T, under store.KV) {
		api, ctx := New(under), t.Context()
		jobs := addCatchUpJobs(t, api)
		at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
		missed := func(until int) map[string]Missed {
			m := map[string]Missed{}
			for i := range jobs {
				var in []time.Time
				for s := 2; s <= until; s++ {
					in = append(in, at(s))
				}
				m[fmt.Sprintf("j%04d", i)] = Missed{Fires: len(in), Misfire: true, After: at(1), Instants: in}
			}
			return m
		}
		dead := &nthFailingKV{KV: under, n: 2} // the second batch refused: the term ends there
		if err := New(dead).Schedule().TriggerMissedOnce(ctx, missed(3), at(3), "term 1"); err == nil {
			t.Fatal("the first term's catch-up did not fail")
		}
		if err := api.Schedule().TriggerMissedOnce(ctx, missed(5), at(5), "term 2"); err != nil {
			t.Fatal(err)
		}
		for i := range jobs {
			rd := count(t, api, fmt.Sprintf("j%04d", i))
			if got := rd.NominalInstants(); rd.Count != 4 || len(got) != 4 || !got[0].Equal(at(2)) || !got[3].Equal(at(5)) {
				t.Fatalf("j%04d: %d pending, instants %v; want each of 2..5 s once", i, rd.Count, got)
			}
		}
	})
}

// addCatchUpJobs registers one job more than a catch-up commit holds
// (j0000, j0001, …), so their catch-up takes two batches, and returns how
// many.
func addCatchUpJobs(t *testing.T, api *Registry) int {
	t.Helper()
	j := gateRigApp(t, api)
	n := missedBatch + 1
	for i := range n {
		j.JobName = fmt.Sprintf("j%04d", i)
		if err := api.Config().AddJobAt(t.Context(), j, t0); err != nil {
			t.Fatal(err)
		}
	}
	return n
}
