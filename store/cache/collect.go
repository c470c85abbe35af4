package cache

import (
	"context"
	"sync"
)

// MaxCollected bounds the paths a Collector keeps; beyond it the collector
// only says that it overflowed (refresh everything).
const MaxCollected = 256

// Collector records the paths committed by one request.
type Collector struct {
	mu       sync.Mutex
	paths    []string
	seen     map[string]bool
	overflow bool
}

type collectorKey struct{}

// Collect returns a context under which every successful Commit made
// through a cache records the paths it wrote in the returned Collector.
func Collect(ctx context.Context) (context.Context, *Collector) {
	col := &Collector{seen: map[string]bool{}}
	return context.WithValue(ctx, collectorKey{}, col), col
}

func noteCommitted(ctx context.Context, paths []string) {
	col, _ := ctx.Value(collectorKey{}).(*Collector)
	if col == nil {
		return
	}
	col.mu.Lock()
	defer col.mu.Unlock()
	for _, p := range paths {
		if col.seen[p] {
			continue
		}
		if len(col.paths) >= MaxCollected {
			col.overflow = true
			return
		}
		col.seen[p] = true
		col.paths = append(col.paths, p)
	}
}

// Paths returns the committed paths, and whether there were too many to
// keep (then the reader should refresh everything).
func (col *Collector) Paths() (paths []string, overflow bool) {
	col.mu.Lock()
	defer col.mu.Unlock()
	return append([]string(nil), col.paths...), col.overflow
}
