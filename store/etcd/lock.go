package etcd

import (
	"context"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// lockAfter is how many guarded attempts a commit loses to other
// commits before it takes the guard for itself.
const lockAfter = 2

// lockTTL bounds how long a commit that died holding the guard keeps
// the others waiting.
const lockTTL = 15 // seconds

// errBusy: another commit holds the guard (its snapshot's revision).
type errBusy struct{ rev int64 }

func (e errBusy) Error() string { return "etcd store: another commit holds the guard" }

// A guarded commit (one that does not fit its compares in a transaction)
// applies only if no commit came between its snapshot and it, and under
// a stream of small commits it would never apply. So after lockAfter
// losses it holds the guard: it puts the guard key with a lease of its
// own, and while the key has a lease every other commit waits (a flat
// commit is conditional on the guard having none, a guarded one on its
// mod_revision). It then reads, plans and sends as before, and its last
// transaction puts the guard without the lease, which frees it. A commit
// that dies holding the guard frees it when its lease expires (the key
// is deleted). lock takes the guard, waiting while another holds it.
func (s *Store) lock(ctx context.Context) (clientv3.LeaseID, error) {
	g, err := s.cli.Grant(ctx, lockTTL)
	if err != nil {
		return 0, s.fail(ctx, "commit", "(guard)", err)
	}
	for {
		resp, err := s.cli.Txn(ctx).
			If(clientv3.Compare(clientv3.LeaseValue(s.k.guard), "=", 0)).
			Then(clientv3.OpPut(s.k.guard, "", clientv3.WithLease(g.ID))).Commit()
		if err != nil {
			s.unlock(ctx, g.ID)
			return 0, s.fail(ctx, "commit", "(guard)", err)
		}
		if resp.Succeeded {
			s.count(shapeLocked)
			return g.ID, nil
		}
		if err := s.waitGuard(ctx, resp.Header.Revision); err != nil {
			s.unlock(ctx, g.ID)
			return 0, err
		}
	}
}

// unlock revokes the commit's lease, which deletes the guard key if the
// commit still holds it (a released guard has no lease any more).
func (s *Store) unlock(ctx context.Context, lease clientv3.LeaseID) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if _, err := s.cli.Revoke(ctx, lease); err != nil {
		s.log.Warn("revoke of a commit's guard lease failed; it expires", "lease", int64(lease), "err", err)
	}
}

// waitGuard waits for the guard key to change after revision rev.
func (s *Store) waitGuard(ctx context.Context, rev int64) error {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for resp := range s.cli.Watch(wctx, s.k.guard, clientv3.WithRev(rev+1)) {
		if resp.Err() != nil || len(resp.Events) > 0 || resp.CompactRevision != 0 {
			return nil // changed, or the watch failed: read again
		}
	}
	if ctx.Err() != nil {
		return fmt.Errorf("etcd store commit: waiting for another commit: %w", ctx.Err())
	}
	return nil
}
