package deadline

import (
	"context"
	"sync"
	"time"

	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/estimate"
)

// TypicalCache keeps what each job's recent runs took for TTL, read from
// Source (the history) when asked for and older: the start estimates of
// the leader's watcher and of the API share one. Safe for concurrent use.
type TypicalCache struct {
	Source func(ctx context.Context, job string) ([]time.Duration, error)
	Clock  clock.Clock
	TTL    time.Duration // 0: one minute

	mu sync.Mutex
	m  map[string]cachedTypical
}

// maxCachedTypicals bounds the cache: past it, it starts again empty. It
// holds every job of a large registry (≈ 110 B each): at 20,000, a pass
// over 93,000 waiting jobs emptied it several times and read every job's
// durations from the history again (50 MB of the leader's live heap at
// 100,000 jobs, and a query per job each pass).
const maxCachedTypicals = 250_000

// Get returns job's typical durations (a zero Typical when the source
// fails or there is none).
func (c *TypicalCache) Get(ctx context.Context, job string) estimate.Typical {
	if c == nil || c.Source == nil {
		return estimate.Typical{}
	}
	now := c.Clock.Now()
	ttl := c.TTL
	if ttl <= 0 {
		ttl = typicalTTL
	}
	c.mu.Lock()
	e, ok := c.m[job]
	c.mu.Unlock()
	if ok && now.Sub(e.at) < ttl {
		return e.t
	}
	ds, err := c.Source(ctx, job)
	if err != nil {
		return estimate.Typical{}
	}
	t := estimate.Of(ds)
	c.mu.Lock()
	if c.m == nil || len(c.m) >= maxCachedTypicals {
		c.m = map[string]cachedTypical{}
	}
	c.m[job] = cachedTypical{now, t}
	c.mu.Unlock()
	return t
}
