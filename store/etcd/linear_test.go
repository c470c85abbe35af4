package etcd

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/store"
	"github.com/ejcloud/elasticjob/store/storetest"
)

// TestLinearizableAcrossALeaderKill: clients of a three-member cluster — through every
// member, through one follower with local plans, and in process on the leader's member
// with local plans, as a scheduler uses its own — read, write and write conditionally
// a few keys while the raft leader is killed (no leadership transfer) and, later,
// started again on its data. Their history, the operations whose outcome the kill made
// unknown included, is linearizable (porcupine).
func TestLinearizableAcrossALeaderKill(t *testing.T) {
	if testing.Short() {
		t.Skip("a three-member cluster")
	}
	cfgs := memberConfigs(t, 3)
	ms := startMembers(t, cfgs)
	lead, follower := -1, -1
	for i, m := range ms {
		if m.IsLeader() {
			lead = i
		} else {
			follower = i
		}
	}
	if lead < 0 {
		t.Fatal("no leader among the members")
	}
	var all []string
	for _, m := range ms {
		all = append(all, m.Endpoints()...)
	}
	prefix := "/lin"
	clients := []store.KV{
		openStore(t, all, Options{Prefix: prefix}),
		openStore(t, all, Options{Prefix: prefix}),
		openStore(t, ms[follower].Endpoints(), Options{Prefix: prefix, LocalPlans: true, MaxTxnOps: EmbeddedMaxTxnOps}),
		openStore(t, nil, Options{Prefix: prefix, Member: ms[lead], LocalPlans: true, MaxTxnOps: EmbeddedMaxTxnOps}),
	}
	h := storetest.NewHistory("/k", 3)
	const perClient = 250
	var wg sync.WaitGroup
	for c, kv := range clients {
		wg.Go(func() { h.Drive(t.Context(), kv, c, perClient, 3*time.Second, 54) })
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-h.When(perClient):
	case <-done:
	}
	ms[lead].Kill()
	t.Logf("killed the leader %s after %d operations", cfgs[lead].Name, h.Len())
	select {
	case <-h.When(2 * perClient):
	case <-done:
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	back, err := StartMember(ctx, cfgs[lead])
	if err != nil {
		t.Fatalf("start %s again: %v", cfgs[lead].Name, err)
	}
	t.Cleanup(func() { back.Close() })
	t.Logf("started %s again after %d operations", cfgs[lead].Name, h.Len())
	<-done
	h.Check(t)
}
