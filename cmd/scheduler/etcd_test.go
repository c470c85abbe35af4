package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/election"
	"github.com/ejcloud/elasticjob/metrics"
	"github.com/ejcloud/elasticjob/store"
	etcdstore "github.com/ejcloud/elasticjob/store/etcd"
)

func freeURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return fmt.Sprintf("http://%s", ln.Addr())
}

// registry=etcd with a member alone: the store opens on the member in
// data_dir/etcd, the leadership is the etcd election (it leads, its API
// fence is its term's), the engine fence reads and passes; a data
// directory of another cluster is refused at start.
func TestOpenEtcdRegistry(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg := settings(t, map[string]string{"registry": "etcd", "etcd_client_url": freeURL(t), "etcd_peer_url": freeURL(t)})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	backend, err := openStore(ctx, cfg, log, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer backend.Close()
	if _, err := os.Stat(filepath.Join(cfg.DataDir, "etcd", "member")); err != nil {
		t.Fatalf("no member in data_dir/etcd: %v", err)
	}
	lead := newLeadership(cfg, backend, log)
	if _, ok := lead.(*raftAside); !ok {
		t.Fatalf("leadership is %T, want the etcd election with its member", lead)
	}
	rctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = lead.Run(rctx) }()
	defer func() { stop(); <-done }()
	var term *election.Term
	select {
	case term = <-lead.Terms():
	case <-ctx.Done():
		t.Fatal("no term")
	}
	if err := backend.Commit(ctx, append(apiFence(lead)(), store.Put("/config/x", []byte("1")))...); err != nil {
		t.Fatalf("a write fenced with the term: %v", err)
	}
	if err := engineFence(cfg, term)(ctx); err != nil {
		t.Fatalf("the engine fence of a leading term: %v", err)
	}
	if proofWindow(cfg) >= cfg.Etcd.Election {
		t.Errorf("proof window %v not below the election timeout %v", proofWindow(cfg), cfg.Etcd.Election)
	}

	other := settings(t, map[string]string{"registry": "etcd", "etcd_cluster_token": "another",
		"etcd_client_url": freeURL(t), "etcd_peer_url": freeURL(t)})
	other.DataDir = cfg.DataDir
	if _, err := openEtcd(ctx, other, log); !errors.Is(err, etcdstore.ErrForeignDataDir) {
		t.Fatalf("another cluster's data directory: %v, want ErrForeignDataDir", err)
	}
}

func TestLostDirHint(t *testing.T) {
	err := errors.New("etcd member s2: start: member 1fe54161c9b4f095 has already been bootstrapped")
	if h := lostDirHint(err, "s2", "/data/etcd"); !strings.Contains(h, "data directory was lost") || !strings.Contains(h, "remove member s2") {
		t.Errorf("hint %q", h)
	}
	if h := lostDirHint(errors.New("bind: address already in use"), "s2", "/d"); h != "" {
		t.Errorf("hint for another error: %q", h)
	}
}

// registry=etcd with the SQLite history: the history is the replicated
// log's (replog), applied to this replica's database; the store's
// operations and metrics are wired; with event_trace_rdb_driver=none or
// on another registry there is neither.
func TestEtcdHistoryAndOperations(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg := settings(t, map[string]string{"registry": "etcd", "etcd_client_url": freeURL(t), "etcd_peer_url": freeURL(t)})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	backend, err := openStore(ctx, cfg, log, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer backend.Close()
	eb := backend.(*etcdBackend)
	tw, hs, hl, err := openHistory(ctx, cfg, log, eb, func() bool { return true })
	if err != nil {
		t.Fatal(err)
	}
	if hl == nil || hs == nil {
		t.Fatalf("registry=etcd with SQLite history: log %v, store %v; want the replicated history", hl, hs)
	}
	rctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = hl.Run(rctx) }()
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	werr := hl.WaitApplied(wctx, 1) // the position of its first catch-up
	wcancel()
	stop()
	<-done
	closeTrace(tw, true)
	if werr != nil {
		t.Fatalf("the replica applied nothing of the log: %v", werr)
	}

	mx := metrics.New()
	admin := replicatedStore(eb, mx)
	if admin == nil {
		t.Fatal("no operations on registry=etcd")
	}
	mfs, err := prometheus.Gatherers{mx.Gatherer(), etcdstore.MemberGatherer()}.Gather()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, mf := range mfs {
		seen[mf.GetName()] = true
	}
	for _, want := range []string{"elasticjob_store_members", "elasticjob_store_db_size_bytes", "elasticjob_store_leader_changes_total",
		"elasticjob_store_commit_seconds", "etcd_server_leader_changes_seen_total"} {
		if !seen[want] {
			t.Errorf("/metrics lacks %s", want)
		}
	}

	none := cfg
	none.RDBDriver = "none"
	if tw, _, hl, err := openHistory(ctx, none, log, eb, nil); err != nil || tw != nil || hl != nil {
		t.Errorf("event_trace_rdb_driver=none: %v %v %v", tw, hl, err)
	}
	if replicatedStore(nil, metrics.New()) != nil {
		t.Error("operations without registry=etcd")
	}
}

// The replicated history's replicas are the members of etcd_peers; a
// joining member is started with etcd_join.
func TestReplogOptions(t *testing.T) {
	cfg := settings(t, map[string]string{"registry": "etcd", "etcd_name": "s2", "mesos_url": "http://m:5050", "etcd_join": "true",
		"etcd_peers": "s1=http://127.0.0.1:2380,s2=http://127.0.0.1:2381,s3=http://127.0.0.1:2382"})
	o := replogOptions(cfg, &etcdBackend{Store: &etcdstore.Store{}, member: &etcdstore.Member{}}, func() bool { return false }, slog.New(slog.DiscardHandler))
	if o.Name != "s2" || strings.Join(o.Replicas, ",") != "s1,s2,s3" || !o.CountResults || o.Prefix != cfg.Etcd.Prefix+"/history" || o.PruneIf() {
		t.Errorf("replog options: %+v", o)
	}
	if !etcdMemberConfig(cfg).Join {
		t.Error("etcd_join=true does not start the member joining")
	}
	if mc := etcdMemberConfig(cfg); mc.CatchUpEntries != 1000 || mc.AutoCompactionRetention != "1m0s" {
		t.Errorf("the member's memory bounds by default: catch-up entries %d, compaction retention %q", mc.CatchUpEntries, mc.AutoCompactionRetention)
	}
	tuned := settings(t, map[string]string{"registry": "etcd", "etcd_catchup_entries": "4000", "etcd_compaction_retention": "1h"})
	if mc := etcdMemberConfig(tuned); mc.CatchUpEntries != 4000 || mc.AutoCompactionRetention != "1h0m0s" {
		t.Errorf("etcd_catchup_entries=4000, etcd_compaction_retention=1h: %d, %q", mc.CatchUpEntries, mc.AutoCompactionRetention)
	}
	if got := replicaName("http://10.0.0.7:8899"); got != "10.0.0.7:8899" {
		t.Errorf("replicaName: %q", got)
	}
}

// TestHandOffWaitsOutTheTakeover: a leader's member keeps a raft leadership
// it holds until the term has launched (its takeover's commits are not
// dropped by a transfer), or for handOffMax at most; without a term, never.
func TestHandOffWaitsOutTheTakeover(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC))
	term := election.NewTerm(t.Context(), "", 7, clk)
	if handOffDue(nil, clk.Now(), true) {
		t.Fatal("due without a term")
	}
	if handOffDue(term, clk.Now().Add(handOffMax-time.Millisecond), false) {
		t.Fatal("due before the term launched")
	}
	if !handOffDue(term, clk.Now(), true) {
		t.Fatal("not due once the term launched")
	}
	if !handOffDue(term, clk.Now().Add(handOffMax), false) {
		t.Fatal("not due after handOffMax")
	}
}
