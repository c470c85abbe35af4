package etcd

import (
	"fmt"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/store"
)

// TestHandOff: the raft leader's member hands its leadership to another
// member; a follower's HandOff does nothing; a member alone keeps it.
func TestHandOff(t *testing.T) {
	ms := startMembers(t, memberConfigs(t, 3))
	ctx := t.Context()
	var lead *Member
	for lead == nil {
		for _, m := range ms {
			if m.IsLeader() {
				lead = m
			}
		}
		if lead == nil {
			time.Sleep(20 * time.Millisecond) // polling for the first raft election
		}
	}
	for _, m := range ms {
		if m == lead {
			continue
		}
		if moved, err := m.HandOff(ctx); moved || err != nil {
			t.Fatalf("follower %s: HandOff = %v, %v; want false, nil", m.Name(), moved, err)
		}
	}
	moved, err := lead.HandOff(ctx)
	if err != nil || !moved {
		t.Fatalf("leader %s: HandOff = %v, %v; want true", lead.Name(), moved, err)
	}
	if lead.IsLeader() {
		t.Fatalf("%s still leads raft after handing off", lead.Name())
	}

	one, err := StartMember(ctx, memberConfigs(t, 1)[0])
	if err != nil {
		t.Fatal(err)
	}
	defer one.Close()
	if moved, err := one.HandOff(ctx); moved || err != nil {
		t.Fatalf("a member alone: HandOff = %v, %v; want false, nil", moved, err)
	}
}

// TestCommitsThroughHandOffs: commits sent to the raft leader's member
// while it hands its leadership on (raft drops proposals during the
// transfer) all succeed: a dropped proposal never entered the log, and
// the store sends it again (else a batch of status updates fails at the
// HandOff that starts a term).
func TestCommitsThroughHandOffs(t *testing.T) {
	ms := startMembers(t, memberConfigs(t, 3))
	ctx := t.Context()
	stores := map[*Member]*Store{}
	for _, m := range ms {
		stores[m] = openStore(t, m.Endpoints(), Options{})
	}
	const rounds = 6
	for r := range rounds {
		var lead *Member
		for lead == nil {
			for _, m := range ms {
				if m.IsLeader() {
					lead = m
				}
			}
			if lead == nil {
				time.Sleep(20 * time.Millisecond) // polling for the raft election
			}
		}
		st := stores[lead]
		stop := make(chan struct{})
		errs := make(chan error, 1)
		var n int
		go func() {
			defer close(errs)
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if err := st.Commit(ctx, store.Put(fmt.Sprintf("/r%d/k%d", r, i%8), []byte("v"))); err != nil {
					errs <- fmt.Errorf("commit %d of round %d on %s: %w", i, r, lead.Name(), err)
					return
				}
				n++
			}
		}()
		moved, err := lead.HandOff(ctx)
		close(stop)
		if cerr := <-errs; cerr != nil {
			t.Fatal(cerr)
		}
		if err != nil || !moved {
			t.Fatalf("round %d: %s HandOff = %v, %v", r, lead.Name(), moved, err)
		}
		t.Logf("round %d: %d commits through %s's hand-off", r, n, lead.Name())
	}
}

// TestHandOffGoesToTheMostCaughtUp: raft leadership is handed to the member that has
// applied the most of the log; one that did not answer comes last.
func TestHandOffGoesToTheMostCaughtUp(t *testing.T) {
	got := byProgress([]transferee{{id: 1, applied: 90, answered: true}, {id: 2}, {id: 3, applied: 120, answered: true}})
	var ids []uint64
	for _, t := range got {
		ids = append(ids, t.id)
	}
	if fmt.Sprint(ids) != "[3 1 2]" {
		t.Fatalf("order %v, want [3 1 2]: the most applied first, the silent one last", ids)
	}
}
