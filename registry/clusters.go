package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"time"

	"github.com/ejcloud/elasticjob/store"
)

// clustersDrainedPath holds one node per drained cluster (docs/clusters.md):
// /state/clusters/drained/{name}, its Drain as JSON. In the registry, so that every
// replica (the leader's launch rounds, every instance's API) sees the same drains.
const clustersDrainedPath = "/state/clusters/drained"

// Drain is a cluster's drain mark: who set it, and when.
type Drain struct {
	Cluster string    `json:"cluster"`
	By      string    `json:"by,omitempty"`
	Since   time.Time `json:"since"`
}

// Clusters are the drain marks of the scheduler's clusters.
type Clusters struct{ r *Registry }

// Clusters is the registry's drain marks.
func (r *Registry) Clusters() Clusters { return Clusters{r} }

// Drained lists the drained clusters by name.
func (c Clusters) Drained(ctx context.Context) (map[string]Drain, error) {
	nodes, err := c.r.kv.List(ctx, clustersDrainedPath)
	if err != nil {
		return nil, fmt.Errorf("registry: list the drained clusters: %w", err)
	}
	out := make(map[string]Drain, len(nodes))
	for _, n := range nodes {
		var d Drain
		err := json.Unmarshal(n.Value, &d)
		if c.r.setAsideAt(n, err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("registry: decode %s: %w", n.Path, err)
		}
		d.Cluster = path.Base(n.Path)
		out[d.Cluster] = d
	}
	return out, nil
}

// Drain marks a cluster drained (again: its first mark's Since is kept).
func (c Clusters) Drain(ctx context.Context, d Drain) error {
	p := clustersDrainedPath + "/" + d.Cluster
	if n, err := c.r.kv.Get(ctx, p); err == nil {
		var prev Drain
		if json.Unmarshal(n.Value, &prev) == nil && !prev.Since.IsZero() {
			return nil
		}
	}
	return c.r.commit(ctx, store.Put(p, mustJSON(d)))
}

// Undrain clears a cluster's drain mark; false when it had none.
func (c Clusters) Undrain(ctx context.Context, cluster string) (bool, error) {
	p := clustersDrainedPath + "/" + cluster
	if _, err := c.r.kv.Get(ctx, p); errors.Is(err, store.ErrNotFound) {
		return false, nil
	} else if err != nil {
		return false, fmt.Errorf("registry: read %s: %w", p, err)
	}
	if err := c.r.commit(ctx, store.Delete(p, store.AnyVersion)); err != nil {
		return false, fmt.Errorf("registry: undrain %s: %w", cluster, err)
	}
	return true, nil
}
