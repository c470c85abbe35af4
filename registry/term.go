package registry

import (
	"context"
	"errors"

	"github.com/ejcloud/elasticjob/store"
)

// BeginTerm writes a new term's record (leaderTermPath: its sequence,
// election node and start time), behind the fence, through barrier: once it
// returns, the registry copy holds every write of the terms before.
func (tm Term) BeginTerm(ctx context.Context, record []byte, barrier Barrier) error {
	return barrier(ctx, leaderTermPath, record, tm.r.commit)
}

// FrameworkID returns the persisted Mesos framework id ("" if none).
func (tm Term) FrameworkID(ctx context.Context) (string, error) {
	n, err := tm.r.kv.Get(ctx, frameworkIDPath)
	if errors.Is(err, store.ErrNotFound) {
		n, err = tm.r.kv.Get(ctx, legacyFrameworkIDPath)
	}
	if errors.Is(err, store.ErrNotFound) {
		return "", nil
	}
	return string(n.Value), err
}

// SetFrameworkID persists the Mesos framework id.
func (tm Term) SetFrameworkID(ctx context.Context, id string) error {
	return tm.r.commit(ctx, store.Put(frameworkIDPath, []byte(id)))
}
