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

	"github.com/ejcloud/elasticjob/election"
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
	backend, err := openStore(ctx, cfg, log)
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
