package etcd

import (
	"testing"
	"time"
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
