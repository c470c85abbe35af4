package registry

import (
	"context"
	"errors"
	"time"

	"github.com/ejcloud/elasticjob/store"
)

// revokedPath holds the ids of API tokens logged out before they expired,
// each with its expiry, so every scheduler instance refuses them.
const revokedPath = "/auth/revoked"

// Revoked reports whether the token id was logged out.
func (tn Tenancy) Revoked(ctx context.Context, id string) (bool, error) {
	_, err := tn.r.kv.Get(ctx, revokedPath+"/"+id)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// Revoke records a logged-out token id until expires, and forgets the
// revocations of tokens that expired since.
func (tn Tenancy) Revoke(ctx context.Context, id string, expires, now time.Time) error {
	ops := []store.Op{store.Put(revokedPath+"/"+id, []byte(expires.UTC().Format(time.RFC3339)))}
	nodes, err := tn.r.kv.List(ctx, revokedPath)
	if err != nil {
		return err
	}
	for _, n := range nodes {
		if t, err := time.Parse(time.RFC3339, string(n.Value)); err == nil && t.Before(now) {
			ops = append(ops, store.Delete(n.Path, n.Version))
		}
	}
	err = tn.r.commit(ctx, ops...)
	if errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrNotFound) {
		return tn.r.commit(ctx, ops[0]) // a concurrent prune: record this one alone
	}
	return err
}
