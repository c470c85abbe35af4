package etcd

import (
	"context"
	"fmt"
)

// HandOff moves the cluster's raft leadership from this member to another
// started voting member, when this member holds it (false when it did
// not). The scheduler that leads keeps raft leadership elsewhere, so that
// its death costs one failover, not two in a row: a raft leader's death
// first takes an election timeout, and the new raft leader then extends
// every lease by that timeout plus its TTL, the dead scheduler's among
// them.
func (m *Member) HandOff(ctx context.Context) (bool, error) {
	s := m.e.Server
	if s.Leader() != s.MemberID() {
		return false, nil
	}
	var to []uint64
	for _, mm := range s.Cluster().Members() {
		if mm.ID != s.MemberID() && !mm.IsLearner && mm.Name != "" {
			to = append(to, uint64(mm.ID))
		}
	}
	if len(to) == 0 {
		return false, nil // a member alone
	}
	var err error
	for _, id := range to {
		if err = s.MoveLeader(ctx, uint64(s.MemberID()), id); err == nil {
			return true, nil
		}
	}
	return false, fmt.Errorf("etcd member %s: hand the raft leadership on: %w", m.cfg.Name, err)
}
