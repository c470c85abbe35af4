package nsusage

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/namespace"
	"github.com/ejcloud/elasticjob/registry"
)

// Sampler records every namespace's usage into a Series every Every,
// while the leader's term lasts (a leader loop).
type Sampler struct {
	Registry *registry.Registry
	Series   *Series
	Clock    clock.Clock
	Log      *slog.Logger
}

// Run resets the series (a new term keeps its own hour), samples at once
// and then every Every until ctx ends. A failed read skips that sample.
func (s Sampler) Run(ctx context.Context) error {
	s.Series.Reset(s.Clock.Now())
	t := s.Clock.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
		}
		if err := s.Sample(ctx); err != nil && ctx.Err() == nil {
			s.Log.Warn("namespace usage: sample skipped", "err", err)
		}
		t.Reset(Every)
	}
}

// Sample reads every namespace's usage now and records it.
func (s Sampler) Sample(ctx context.Context) error {
	recs, err := s.Registry.Tenancy().Namespaces(ctx)
	if err != nil {
		return fmt.Errorf("sample: read the namespaces: %w", err)
	}
	now := s.Clock.Now()
	usage := make(map[string]namespace.Resources, len(recs))
	for _, rec := range recs {
		u, err := s.Registry.In(rec.Name).Tenancy().InUse(ctx)
		if err != nil {
			return fmt.Errorf("sample namespace %s: %w", rec.Name, err)
		}
		usage[rec.Name] = u
	}
	s.Series.Record(now, usage)
	return nil
}
