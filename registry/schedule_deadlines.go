package registry

import (
	"context"
	"errors"
	"fmt"

	"github.com/ejcloud/elasticjob/store"
)

// alertedPath holds a node per deadline alert raised (deadline.Watcher),
// named by the alert's hashed key and holding its JSON: a leader creates
// it before it tells anyone of the alert, so the next leader, finding it,
// does not raise the alert again. Nodes of alerts whose execution has
// started or ended are removed (ForgetAlerts).
const alertedPath = "/state/deadline/alerted"

// MarkAlert records that the alert named key was raised. It reports false
// (and no error) when it was already recorded: by this leader or an
// earlier one. The write is fenced: a deposed leader records nothing.
func (sc Schedule) MarkAlert(ctx context.Context, key string, value []byte) (bool, error) {
	if err := sc.r.commitPhys(ctx, store.Create(alertedPath+"/"+key, value)); err != nil {
		if errors.Is(err, store.ErrExists) {
			return false, nil
		}
		return false, fmt.Errorf("registry: record deadline alert %s: %w", key, err)
	}
	return true, nil
}

// AlertKeys lists the recorded alerts' keys.
func (sc Schedule) AlertKeys(ctx context.Context) ([]string, error) {
	keys, err := sc.r.phys.Children(ctx, alertedPath)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	return keys, err
}

// Alerts returns the recorded alerts' values by key.
func (sc Schedule) Alerts(ctx context.Context) (map[string][]byte, error) {
	nodes, err := sc.r.phys.List(ctx, alertedPath)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := make(map[string][]byte, len(nodes))
	for _, n := range nodes {
		out[lastSegment(n.Path)] = n.Value
	}
	return out, nil
}

// ForgetAlerts removes recorded alerts (their execution started or ended).
func (sc Schedule) ForgetAlerts(ctx context.Context, keys []string) error {
	if len(keys) == 0 {
		return nil
	}
	ops := make([]store.Op, len(keys))
	for i, k := range keys {
		ops[i] = store.Delete(alertedPath+"/"+k, store.AnyVersion)
	}
	return sc.r.commitPhys(ctx, ops...)
}
