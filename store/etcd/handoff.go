package etcd

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// HandOff moves the cluster's raft leadership from this member to another
// started voting member, when this member holds it (false when it did
// not). The scheduler that leads keeps raft leadership elsewhere, so that
// its death costs one failover, not two in a row: a raft leader's death
// first takes an election timeout, and the new raft leader then extends
// every lease by that timeout plus its TTL, the dead scheduler's among
// them.
//
// The member that has applied the most of the raft log goes first (each
// asked for its status through its client URL, within statusWait; one
// that does not answer goes last): leadership handed to a member that had
// just started again and was still catching up held the store's writes
// for seconds: a fire's commit past the 5 s a job has to fire again after
// a fault heals.
func (m *Member) HandOff(ctx context.Context) (bool, error) {
	s := m.e.Server
	if s.Leader() != s.MemberID() {
		return false, nil
	}
	var to []transferee
	for _, mm := range s.Cluster().Members() {
		if mm.ID != s.MemberID() && !mm.IsLearner && mm.Name != "" {
			to = append(to, transferee{id: uint64(mm.ID), urls: mm.ClientURLs})
		}
	}
	if len(to) == 0 {
		return false, nil // a member alone
	}
	m.progress(ctx, to)
	var err error
	for _, t := range byProgress(to) {
		if err = s.MoveLeader(ctx, uint64(s.MemberID()), t.id); err == nil {
			return true, nil
		}
	}
	return false, fmt.Errorf("etcd member %s: hand the raft leadership on: %w", m.cfg.Name, err)
}

// transferee is a member raft leadership may go to, and how much of the
// log it said it has applied (answered: it said).
type transferee struct {
	id       uint64
	urls     []string
	applied  uint64
	answered bool
}

// statusWait bounds the status asked of each transferee.
const statusWait = 500 * time.Millisecond

// progress asks each transferee, at once, how much of the log it applied.
func (m *Member) progress(ctx context.Context, to []transferee) {
	cli, err := m.Client()
	if err != nil {
		return
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(ctx, statusWait)
	defer cancel()
	done := make(chan struct{}, len(to))
	for i := range to {
		go func() {
			defer func() { done <- struct{}{} }()
			for _, u := range to[i].urls {
				if st, err := cli.Status(ctx, u); err == nil {
					to[i].applied, to[i].answered = appliedOf(st), true
					return
				}
			}
		}()
	}
	for range to {
		<-done
	}
}

func appliedOf(st *clientv3.StatusResponse) uint64 { return st.RaftAppliedIndex }

// byProgress orders transferees: those that answered first, the most
// applied first; then the others, in the cluster's order.
func byProgress(to []transferee) []transferee {
	out := slices.Clone(to)
	slices.SortStableFunc(out, func(a, b transferee) int {
		if a.answered != b.answered {
			if a.answered {
				return -1
			}
			return 1
		}
		return cmp.Compare(b.applied, a.applied)
	})
	return out
}
