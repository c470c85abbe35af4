package etcd

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ejcloud/elasticjob/store"
)

func healthyLeaders(t *testing.T, sts []MemberStatus) (healthy, leaders int) {
	t.Helper()
	for _, st := range sts {
		if st.Healthy {
			healthy++
			if st.RaftIndex == 0 {
				t.Errorf("%s: raft index 0", st.Name)
			}
		}
		if st.Leader {
			leaders++
		}
	}
	return healthy, leaders
}

// TestReplaceLostMember: a member whose disk is lost is removed, added
// again and started on an empty directory with Join; it gets the data,
// and the member list shows it healthy. Removing a member that answers
// while another is down is refused.
func TestReplaceLostMember(t *testing.T) {
	ctx := t.Context()
	cfgs := memberConfigs(t, 3)
	ms := startMembers(t, cfgs)
	var eps []string
	for _, m := range ms {
		eps = append(eps, m.Endpoints()...)
	}
	s := openStore(t, eps, Options{Prefix: "/ops"})
	a := NewAdmin(s)
	if err := s.Commit(ctx, store.Put("/kept", []byte("v"))); err != nil {
		t.Fatal(err)
	}
	sts, err := a.Statuses(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if h, l := healthyLeaders(t, sts); len(sts) != 3 || h != 3 || l != 1 {
		t.Fatalf("members %d, healthy %d, leaders %d; want 3, 3, 1: %+v", len(sts), h, l, sts)
	}
	lost := 2
	if ms[lost].IsLeader() {
		lost = 1
	}
	ms[lost].Kill()
	if err := os.RemoveAll(cfgs[lost].Dir); err != nil {
		t.Fatal(err)
	}
	sts, _ = a.Statuses(ctx)
	if h, _ := healthyLeaders(t, sts); h != 2 {
		t.Fatalf("healthy %d after a kill, want 2", h)
	}
	other := 3 - lost // the other follower or the leader: it answers
	if other == lost {
		other = 0
	}
	if err := a.RemoveMember(ctx, cfgs[other].Name); !errors.Is(err, ErrQuorumAtRisk) {
		t.Fatalf("removing a healthy member while one is down: %v, want ErrQuorumAtRisk", err)
	}
	if err := a.RemoveMember(ctx, "nope"); !errors.Is(err, ErrNoMember) {
		t.Fatalf("removing an unknown member: %v, want ErrNoMember", err)
	}
	if err := a.RemoveMember(ctx, cfgs[lost].Name); err != nil {
		t.Fatal(err)
	}
	if _, err := a.AddMember(ctx, cfgs[0].Name, "http://127.0.0.1:1"); !errors.Is(err, ErrMemberExists) {
		t.Fatalf("adding a name in use: %v, want ErrMemberExists", err)
	}
	added, err := a.AddMember(ctx, cfgs[lost].Name, cfgs[lost].PeerURL)
	if err != nil {
		t.Fatal(err)
	}
	peers, err := ParsePeers(added.InitialCluster)
	if err != nil || len(peers) != 3 {
		t.Fatalf("initial cluster %q: %v", added.InitialCluster, err)
	}
	c := cfgs[lost]
	c.InitialCluster, c.Join = peers, true
	m, err := StartMember(ctx, c)
	if err != nil {
		t.Fatalf("rejoin: %v", err)
	}
	ms[lost] = m
	r := openStore(t, m.Endpoints(), Options{Prefix: "/ops"})
	if n, err := r.Get(ctx, "/kept"); err != nil || string(n.Value) != "v" {
		t.Fatalf("through the rejoined member: %+v, %v", n, err)
	}
	sts, err = a.Statuses(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if h, l := healthyLeaders(t, sts); len(sts) != 3 || h != 3 || l != 1 {
		t.Fatalf("after the rejoin: members %d, healthy %d, leaders %d; want 3, 3, 1: %+v", len(sts), h, l, sts)
	}
}

// TestBackupRestore: a backup restores the registry as it was (values
// and versions), drops nodes made after it, leaves the election's nodes
// out and ends the terms; a truncated backup is refused.
func TestBackupRestore(t *testing.T) {
	ctx := t.Context()
	ms := startMembers(t, memberConfigs(t, 1))
	s := openStore(t, ms[0].Endpoints(), Options{Prefix: "/bk"})
	a := NewAdmin(s, "/ha/election")
	ops := []store.Op{store.Put("/ha/election/n_1", []byte("leader")), store.Put("/config/job/a", []byte("A")), store.Put("/config/job/b", []byte("B"))}
	for i := range 300 { // more than a transaction
		ops = append(ops, store.Put("/state/ready/"+strings.Repeat("x", 3)+string(rune('a'+i%26))+string(rune('a'+i/26)), []byte("r")))
	}
	if err := s.Commit(ctx, ops...); err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(ctx, store.Set("/config/job/a", []byte("A2"), store.AnyVersion)); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	res, err := a.Backup(ctx, &buf)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "n_1") {
		t.Fatal("the backup holds the election's node")
	}
	before, _ := s.Get(ctx, "/config/job/a")
	if err := s.Commit(ctx, store.Delete("/config/job/b", store.AnyVersion), store.Put("/config/job/c", []byte("C")),
		store.Set("/config/job/a", []byte("A3"), store.AnyVersion)); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Restore(ctx, bytes.NewReader(buf.Bytes()[:buf.Len()-20])); !errors.Is(err, ErrBadBackup) {
		t.Fatalf("restore of a truncated backup: %v, want ErrBadBackup", err)
	}
	got, err := a.Restore(ctx, bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if got.Nodes != res.Nodes || got.Deleted != 1 {
		t.Errorf("restored %d nodes and deleted %d, want %d and 1 (/config/job/c)", got.Nodes, got.Deleted, res.Nodes)
	}
	if n, err := s.Get(ctx, "/config/job/a"); err != nil || string(n.Value) != "A2" || n.Version != before.Version {
		t.Errorf("/config/job/a = %+v, %v; want A2 at version %d", n, err, before.Version)
	}
	if n, err := s.Get(ctx, "/config/job/b"); err != nil || string(n.Value) != "B" {
		t.Errorf("/config/job/b = %+v, %v; want B back", n, err)
	}
	if _, err := s.Get(ctx, "/config/job/c"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("/config/job/c after restore: %v, want ErrNotFound", err)
	}
	if _, err := s.Get(ctx, "/ha/election/n_1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the election's node after restore: %v, want deleted (terms end)", err)
	}
	if names, err := s.Children(ctx, "/state/ready"); err != nil || len(names) != 300 {
		t.Errorf("/state/ready has %d children, %v; want 300", len(names), err)
	}
	// The store works on after the restore (the guard was freed).
	if err := s.Commit(ctx, store.Put("/after", nil)); err != nil {
		t.Fatal(err)
	}
	// Into another prefix (another cluster).
	s2 := openStore(t, ms[0].Endpoints(), Options{Prefix: "/bk2"})
	if _, err := NewAdmin(s2).Restore(ctx, bytes.NewReader(buf.Bytes())); err != nil {
		t.Fatal(err)
	}
	if n, err := s2.Get(ctx, "/config/job/a"); err != nil || string(n.Value) != "A2" {
		t.Errorf("restored into another prefix: %+v, %v", n, err)
	}
}

// TestMaintenanceAndMetrics: a pass defragments a member with free
// space; the cluster collector reports every member.
func TestMaintenanceAndMetrics(t *testing.T) {
	ctx := t.Context()
	ms := startMembers(t, memberConfigs(t, 1))
	s := openStore(t, ms[0].Endpoints(), Options{Prefix: "/mt"})
	a := NewAdmin(s)
	big := bytes.Repeat([]byte("z"), 64<<10)
	for i := range 40 {
		if err := s.Commit(ctx, store.Put("/big", append(big, byte(i)))); err != nil {
			t.Fatal(err)
		}
	}
	m := &Maintenance{Admin: a, MinFree: 1, FreeRatio: 0.0001, Compact: true}
	if _, err := m.Pass(ctx); err != nil { // records the revision
		t.Fatal(err)
	}
	res, err := m.Pass(ctx) // compacts to it, then defragments
	if err != nil {
		t.Fatal(err)
	}
	if res.CompactedTo == 0 {
		t.Errorf("pass = %+v, want a compaction", res)
	}
	// The space the compaction freed shows in the member's status once its
	// backend commits (etcd batches those, every 100 ms and later under
	// load): until then a pass finds nothing free and rightly defragments
	// nothing, so the passes go on until one does, within a bound.
	for until := time.Now().Add(20 * time.Second); len(res.Defragmented) == 0 && time.Now().Before(until); {
		if res, err = m.Pass(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if len(res.Defragmented) != 1 {
		t.Errorf("pass = %+v, want one member defragmented", res)
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewClusterCollector(a))
	reg.MustRegister(s.Collectors()...)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, mf := range mfs {
		names[mf.GetName()] = true
	}
	etcdSeries := map[string]bool{}
	mfs, err = prometheus.Gatherers{reg, MemberGatherer()}.Gather()
	if err != nil {
		t.Fatalf("the scheduler's and the member's series together: %v", err)
	}
	for _, mf := range mfs {
		names[mf.GetName()] = true
		if strings.HasPrefix(mf.GetName(), "etcd_") {
			etcdSeries[mf.GetName()] = true
		}
	}
	for _, n := range []string{"etcd_disk_wal_fsync_duration_seconds", "etcd_server_leader_changes_seen_total", "etcd_mvcc_db_total_size_in_bytes"} {
		if !etcdSeries[n] {
			t.Errorf("member series %s missing", n)
		}
	}
	for _, n := range []string{"elasticjob_store_members", "elasticjob_store_member_healthy", "elasticjob_store_member_leader",
		"elasticjob_store_db_size_bytes", "elasticjob_store_member_raft_index", "elasticjob_store_commit_seconds", "elasticjob_store_commit_shapes_total",
		"elasticjob_store_leader_changes_total"} {
		if !names[n] {
			t.Errorf("metric %s missing", n)
		}
	}
}

// TestQuotaAlarm: a member past its quota raises NOSPACE (writes are
// refused); the members list and the metrics show it, and a maintenance
// pass after the space is freed (deletes, compaction) defragments and
// disarms it: writes work again.
func TestQuotaAlarm(t *testing.T) {
	ctx := t.Context()
	cfgs := memberConfigs(t, 1)
	cfgs[0].QuotaBytes = 4 << 20
	ms := startMembers(t, cfgs)
	s := openStore(t, ms[0].Endpoints(), Options{Prefix: "/quota"})
	a := NewAdmin(s)
	big := bytes.Repeat([]byte("q"), 256<<10)
	var full error
	for i := 0; i < 200 && full == nil; i++ {
		full = s.Commit(ctx, store.Put("/big/"+strings.Repeat("k", i%7+1)+string(rune('a'+i%26)), big))
	}
	if full == nil || !strings.Contains(full.Error(), "space") {
		t.Fatalf("writes past a 4 MiB quota: %v, want no space", full)
	}
	sts, err := a.Statuses(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(sts[0].Alarms) == 0 || sts[0].Alarms[0] != "NOSPACE" {
		t.Fatalf("alarms %v, want NOSPACE", sts[0].Alarms)
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewClusterCollector(a))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	alarm := false
	for _, mf := range mfs {
		alarm = alarm || mf.GetName() == "elasticjob_store_alarm"
	}
	if !alarm {
		t.Error("no elasticjob_store_alarm series while NOSPACE is raised")
	}
	// Free the space: deletes are allowed under NOSPACE.
	if _, err := s.cli.Delete(ctx, s.k.level("/big", 2), clientv3.WithPrefix()); err != nil {
		t.Fatal(err)
	}
	m := &Maintenance{Admin: a, Compact: true, MinFree: 1, FreeRatio: 0.0001}
	res, err := m.Pass(ctx) // the alarmed member is defragmented whatever its free space, then disarmed
	if err != nil {
		t.Fatal(err)
	}
	if !res.Disarmed || len(res.Defragmented) != 1 {
		t.Fatalf("pass = %+v, want the member defragmented and the alarm disarmed", res)
	}
	if res, err = m.Pass(ctx); err != nil || res.CompactedTo == 0 { // compacts the deleted values away
		t.Fatalf("second pass = %+v, %v; want a compaction", res, err)
	}
	if err := s.Commit(ctx, store.Put("/after", []byte("ok"))); err != nil {
		sts, _ := a.Statuses(ctx)
		t.Fatalf("a write after the disarm: %v (pass %+v; members %+v)", err, res, sts)
	}
}

// TestRemoveMemberBounded: etcd waits for a membership change with no bound
// of its own, and a removal proposed around a change of raft leader can be
// dropped. A removal whose proposals are never applied fails within
// RemoveWait with ErrChangeUnfinished (503), the member still listed; one
// whose first proposal was dropped and whose second was applied with its
// answer lost is done.
func TestRemoveMemberBounded(t *testing.T) {
	ctx := t.Context()
	cfgs := memberConfigs(t, 3)
	ms := startMembers(t, cfgs)
	var eps []string
	for _, m := range ms {
		eps = append(eps, m.Endpoints()...)
	}
	s := openStore(t, eps, Options{Prefix: "/rm"})
	lost := 2
	if ms[lost].IsLeader() {
		lost = 1
	}
	ms[lost].Kill()

	a := NewAdmin(s)
	a.RemoveWait, a.removeTry = 600*time.Millisecond, 200*time.Millisecond
	var tries int
	a.memberRemove = func(ctx context.Context, _ uint64) error { // dropped: never applied
		tries++
		<-ctx.Done()
		return ctx.Err()
	}
	// Unbounded, the dropped proposal would wait for the test's context:
	// the call returning at all is the bound at work.
	err := a.RemoveMember(ctx, cfgs[lost].Name)
	var hs interface{ HTTPStatus() int }
	if !errors.Is(err, ErrChangeUnfinished) || !errors.As(err, &hs) || hs.HTTPStatus() != 503 {
		t.Fatalf("a removal never applied: %v, want ErrChangeUnfinished (503)", err)
	}
	if !strings.Contains(err.Error(), "retry") || !strings.Contains(err.Error(), "still listed") || tries < 2 {
		t.Errorf("%d proposals, error %q: want several, and a message that says it is still listed and to retry", tries, err)
	}
	if _, err := a.Statuses(ctx); err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.find(ctx, cfgs[lost].Name); err != nil {
		t.Fatalf("the member after a removal never applied: %v, want it listed", err)
	}

	tries = 0
	a.RemoveWait, a.removeTry = time.Minute, 200*time.Millisecond
	a.memberRemove = func(ctx context.Context, id uint64) error {
		if tries++; tries == 1 {
			<-ctx.Done() // dropped
			return ctx.Err()
		}
		if _, err := s.cli.MemberRemove(ctx, id); err != nil {
			return err
		}
		return rpctypes.ErrTimeout // applied, the answer lost
	}
	if err := a.RemoveMember(ctx, cfgs[lost].Name); err != nil || tries != 2 {
		t.Fatalf("a removal applied at its second proposal, its answer lost: %v after %d proposals, want done after 2", err, tries)
	}
	if _, _, err := a.find(ctx, cfgs[lost].Name); !errors.Is(err, ErrNoMember) {
		t.Fatalf("the member after its removal: %v, want ErrNoMember", err)
	}
}
