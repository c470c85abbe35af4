package backfill

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/ejcloud/elasticjob/registry"
)

// New is a new backfill of src over instants, made at now by by.
func New(id string, src Source, from, to time.Time, concurrency int, instants []time.Time, by string, now time.Time) Backfill {
	return Backfill{ID: id, Source: src, From: from.UTC(), To: to.UTC(), Concurrency: max(concurrency, 1),
		State: Running, Total: len(instants), CreatedBy: by, CreatedAt: now.UTC(), UpdatedAt: now.UTC()}
}

// Create stores a new backfill and its instants.
func Create(ctx context.Context, reg *registry.Registry, b Backfill, instants []time.Time) error {
	if len(instants) != b.Total {
		return fmt.Errorf("backfill: %d instants for a total of %d", len(instants), b.Total)
	}
	rec, err := json.Marshal(b)
	if err != nil {
		return err
	}
	ins, err := json.Marshal(EncodeInstants(instants))
	if err != nil {
		return err
	}
	return reg.Schedule().CreateBackfill(ctx, b.ID, rec, ins)
}

// Get reads one backfill.
func Get(ctx context.Context, reg *registry.Registry, id string) (Backfill, error) {
	n, err := reg.Schedule().Backfill(ctx, id)
	if err != nil {
		return Backfill{}, err
	}
	return Decode(n)
}

// List reads every backfill (of namespace ns only, unless ns is "*").
func List(ctx context.Context, reg *registry.Registry, ns string) ([]Backfill, error) {
	stored, err := reg.Schedule().Backfills(ctx)
	if err != nil {
		return nil, err
	}
	out := []Backfill{}
	for _, s := range stored {
		b, err := Decode(s)
		if err != nil || ns != "*" && b.Source.Namespace != ns {
			continue
		}
		out = append(out, b)
	}
	return out, nil
}

// Apply applies an operator's pause, resume or cancel (Control) with a
// compare and set, retried on a conflict with the leader's loop.
func Apply(ctx context.Context, reg *registry.Registry, id, action string, now time.Time) (Backfill, error) {
	for range 8 {
		b, err := Get(ctx, reg, id)
		if err != nil {
			return b, err
		}
		next, err := Control(b, action, now)
		if err != nil || next.State == b.State {
			return next, err
		}
		raw, _ := json.Marshal(next)
		if err := reg.Schedule().SetBackfill(ctx, id, raw, b.Version); err == nil {
			return next, nil
		} else if !isConflict(err) {
			return b, err
		}
	}
	return Backfill{}, fmt.Errorf("backfill %s: %s: too many concurrent changes; try again", id, action)
}
