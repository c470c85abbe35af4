package scheduler

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/store"
	"github.com/ejcloud/elasticjob/store/memory"
)

// committed is one fire commit as a dispatcher saw it: the instant each
// job's fire serves and when the commit was made.
type committed struct {
	job     string
	instant time.Duration // after the bubble's start
	at      time.Duration
}

// bubbleDispatcher commits through the registry and records each
// fire commit; refuse makes the store refuse it (a lost quorum).
type bubbleDispatcher struct {
	registryDispatcher
	start  time.Time
	mu     sync.Mutex
	fires  []committed
	refuse func() bool
	// slow is how long each fire commit takes (a store under load).
	slow time.Duration
}

func (d *bubbleDispatcher) TriggerFires(ctx context.Context, fires map[string]registry.CronFire, instant time.Time, commit string, absent func(string) bool) ([]string, error) {
	if d.refuse != nil && d.refuse() {
		return nil, store.ErrUnavailable
	}
	time.Sleep(d.slow)
	void, err := d.registryDispatcher.TriggerFires(ctx, fires, instant, commit, absent)
	if err == nil {
		d.mu.Lock()
		for job, f := range fires {
			d.fires = append(d.fires, committed{job: job, instant: f.Instant.Sub(d.start), at: time.Since(d.start)})
		}
		d.mu.Unlock()
	}
	return void, err
}

func (d *bubbleDispatcher) taken() []committed {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := slices.Clone(d.fires)
	slices.SortFunc(out, func(a, b committed) int {
		if a.instant != b.instant {
			return int(a.instant - b.instant)
		}
		return strings.Compare(a.job, b.job)
	})
	return out
}

// bubbleProducer starts a producer on a memory registry holding jobs, on
// the bubble's clock, and returns its dispatcher and a stop that ends it.
func bubbleProducer(t *testing.T, refuse func() bool, js ...jobs.Config) (*bubbleDispatcher, func()) {
	ctx, cancel := context.WithCancel(t.Context())
	kv := memory.New()
	reg := registry.New(kv)
	a := app.Default()
	a.AppName, a.AppURL, a.BootstrapScript, a.CPUCount, a.MemoryMB = "app", "http://example.invalid/app.tar.gz", "bin/start.sh", 1, 128
	if err := reg.Config().AddApp(ctx, a); err != nil {
		t.Fatal(err)
	}
	for _, j := range js {
		if err := reg.Config().AddJob(ctx, j); err != nil {
			t.Fatal(err)
		}
	}
	cat := NewCatalog(reg)
	if err := cat.Load(ctx); err != nil {
		t.Fatal(err)
	}
	d := &bubbleDispatcher{registryDispatcher: registryDispatcher{reg}, start: time.Now(), refuse: refuse}
	p := &Producer{Registry: reg, Dispatch: d, Catalog: cat, Clock: clock.Real{}, Location: time.UTC, Log: slog.New(slog.DiscardHandler)}
	done := make(chan struct{})
	go func() { defer close(done); _ = p.Run(ctx) }()
	return d, func() { cancel(); <-done; kv.Close() }
}

func cronJob(name, expr string, misfire bool) jobs.Config {
	j := jobs.Default()
	j.JobName, j.AppName, j.CPUCount, j.MemoryMB, j.ShardingTotalCount, j.Cron, j.Misfire = name, "app", 0.5, 64, 1, expr, misfire
	return j
}

// The producer's loop on the bubble's clock (testing/synctest): one timer
// serves every job, and each fire commits at its instant, to the
// nanosecond, with no clock injected and no sleep waiting for it.
func TestProducerLoopFiresOnTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d, stop := bubbleProducer(t, nil, cronJob("a", "0/2 * * * * ?", false), cronJob("b", "0/3 * * * * ?", true))
		defer stop()
		time.Sleep(6*time.Second + time.Millisecond)
		synctest.Wait()
		s := time.Second
		want := []committed{{"a", 2 * s, 2 * s}, {"b", 3 * s, 3 * s}, {"a", 4 * s, 4 * s}, {"a", 6 * s, 6 * s}, {"b", 6 * s, 6 * s}}
		if got := d.taken(); !slices.Equal(got, want) {
			t.Fatalf("committed %v, want %v", got, want)
		}
	})
}

// A store that refuses fire commits for 5 s (a lost quorum): the commit is
// retried, 100 ms doubling to 2 s, and lands at 7.1 s, once the store takes
// writes again, serving its instant; the instants missed meanwhile follow
// by the misfire rule (misfire=false: collapsed into one fire;
// misfire=true: each replayed), and nothing is lost.
func TestProducerLoopRetriesThroughARefusingStore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		refuse := func() bool {
			since := time.Since(start)
			return since >= 2*time.Second && since < 7*time.Second
		}
		d, stop := bubbleProducer(t, refuse, cronJob("a", "0/2 * * * * ?", false), cronJob("m", "0/2 * * * * ?", true))
		defer stop()
		time.Sleep(10*time.Second + time.Millisecond)
		synctest.Wait()
		got := d.taken()
		var a, m []time.Duration
		for _, c := range got {
			if c.at < c.instant {
				t.Errorf("%s's fire of %v committed at %v, before its instant", c.job, c.instant, c.at)
			}
			if c.job == "a" {
				a = append(a, c.instant)
			} else {
				m = append(m, c.instant)
			}
		}
		s := time.Second
		if want := []time.Duration{2 * s, 4 * s, 6 * s, 8 * s, 10 * s}; !slices.Equal(m, want) {
			t.Errorf("misfire=true: instants %v, want every one %v (%v)", m, want, got)
		}
		// The fire of 4s was due when the refused one landed (7.1s): it
		// commits then, and 6s collapses into it (the job fires from 7.1s on).
		if want := []time.Duration{2 * s, 4 * s, 8 * s, 10 * s}; !slices.Equal(a, want) {
			t.Errorf("misfire=false: instants %v, want %v (%v)", a, want, got)
		}
	})
}
