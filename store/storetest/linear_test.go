package storetest

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/store"
	"github.com/ejcloud/elasticjob/store/memory"
)

// staleReads is a store whose reads answer each key's value as it was
// before its last write (a copy one write behind): not linearizable.
type staleReads struct {
	store.KV
	mu   sync.Mutex
	prev map[string]store.Node
}

func (s *staleReads) Get(ctx context.Context, path string) (store.Node, error) {
	s.mu.Lock()
	n, ok := s.prev[path]
	s.mu.Unlock()
	if ok {
		return n, nil
	}
	return s.KV.Get(ctx, path)
}

func (s *staleReads) Commit(ctx context.Context, ops ...store.Op) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	before := map[string]store.Node{}
	for _, op := range ops {
		if n, err := s.KV.Get(ctx, op.Path); err == nil {
			before[op.Path] = n
		}
	}
	if err := s.KV.Commit(ctx, ops...); err != nil {
		return err
	}
	for p, n := range before {
		s.prev[p] = n
	}
	return nil
}

// failures is a testing.TB that keeps what the check reported.
type failures struct {
	testing.TB
	errs []string
}

func (f *failures) Errorf(format string, args ...any) { f.errs = append(f.errs, format) }
func (f *failures) Helper()                           {}

// TestLinearizabilityCheckFindsStaleReads: the check passes a linearizable store's
// history and fails one whose reads lag a write behind.
func TestLinearizabilityCheckFindsStaleReads(t *testing.T) {
	for _, tc := range []struct {
		name   string
		kv     func() store.KV
		refute bool
	}{
		{"memory", func() store.KV { return memory.New() }, false},
		{"stale reads", func() store.KV { return &staleReads{KV: memory.New(), prev: map[string]store.Node{}} }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kv := tc.kv()
			defer kv.Close()
			h := NewHistory("/lin", 2)
			var wg sync.WaitGroup
			for c := range 3 {
				wg.Go(func() { h.Drive(t.Context(), kv, c, 100, time.Minute, 7) })
			}
			wg.Wait()
			f := &failures{TB: t}
			h.Check(f)
			if refuted := len(f.errs) > 0; refuted != tc.refute {
				t.Fatalf("%d operations: refuted %v (%s), want %v", h.Len(), refuted, strings.Join(f.errs, "; "), tc.refute)
			}
		})
	}
}
