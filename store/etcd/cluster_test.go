package etcd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/internal/loopback"
	"github.com/ejcloud/elasticjob/store"
)

// freePort returns a loopback port nothing listens on now (internal/loopback).
func freePort(t testing.TB) int {
	t.Helper()
	p, err := loopback.Port()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// memberConfigs are the configs of an n-member loopback cluster with the
// issue's fast timers, each in its own temporary directory.
func memberConfigs(t testing.TB, n int) []MemberConfig {
	t.Helper()
	cfgs := make([]MemberConfig, n)
	var peers []Peer
	for i := range cfgs {
		name := fmt.Sprintf("m%d", i)
		cfgs[i] = MemberConfig{
			Name:         name,
			Dir:          t.TempDir(),
			PeerURL:      fmt.Sprintf("http://127.0.0.1:%d", freePort(t)),
			ClientURL:    fmt.Sprintf("http://127.0.0.1:%d", freePort(t)),
			ClusterToken: "test-" + t.Name(),
			Heartbeat:    50 * time.Millisecond,
			Election:     500 * time.Millisecond,
			StartTimeout: 60 * time.Second,
		}
		peers = append(peers, Peer{Name: name, URL: cfgs[i].PeerURL})
	}
	for i := range cfgs {
		cfgs[i].InitialCluster = peers
	}
	return cfgs
}

// startMembers starts the members at once (each waits for a quorum) and
// stops them at the end of the test. A fresh cluster whose port, free when
// memberConfigs picked it, was taken by another process before its member
// bound it is started again on new ports in emptied directories (cfgs is
// updated in place), at most three times; a cluster restarted on its data
// keeps its ports, which its data records.
func startMembers(t testing.TB, cfgs []MemberConfig) []*Member {
	t.Helper()
	fresh := true
	for _, c := range cfgs {
		if ents, _ := os.ReadDir(c.Dir); len(ents) > 0 {
			fresh = false
		}
	}
	for attempt := 1; ; attempt++ {
		ms, i, err := tryStart(cfgs)
		if err == nil {
			t.Cleanup(func() {
				for _, m := range ms {
					m.Close()
				}
			})
			return ms
		}
		if !fresh || attempt == 3 || !portTaken(err) {
			t.Fatalf("member %d: %v", i, err)
		}
		t.Logf("member %d: %v: starting the cluster again on other ports", i, err)
		var peers []Peer
		for j := range cfgs {
			if err := os.RemoveAll(cfgs[j].Dir); err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(cfgs[j].Dir, 0o700); err != nil {
				t.Fatal(err)
			}
			cfgs[j].PeerURL = fmt.Sprintf("http://127.0.0.1:%d", freePort(t))
			cfgs[j].ClientURL = fmt.Sprintf("http://127.0.0.1:%d", freePort(t))
			peers = append(peers, Peer{Name: cfgs[j].Name, URL: cfgs[j].PeerURL})
		}
		for j := range cfgs {
			cfgs[j].InitialCluster = peers
		}
	}
}

// portTaken reports whether err is a listen on a port another process
// holds (etcd does not always wrap the listener's error).
func portTaken(err error) bool {
	return errors.Is(err, syscall.EADDRINUSE) || strings.Contains(err.Error(), "address already in use")
}

// tryStart starts the members at once; on a failure it closes those that
// started and returns a failing member's index and error: a port taken
// first, since the members waiting for the one that could not bind fail
// only by their timeout (which the taken port caused), and the members
// still waiting are stopped as soon as one finds its port taken.
func tryStart(cfgs []MemberConfig) ([]*Member, int, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ms := make([]*Member, len(cfgs))
	errs := make([]error, len(cfgs))
	var wg sync.WaitGroup
	for i, c := range cfgs {
		wg.Go(func() {
			ms[i], errs[i] = StartMember(ctx, c)
			if errs[i] != nil && portTaken(errs[i]) {
				cancel()
			}
		})
	}
	wg.Wait()
	first := -1
	for i, err := range errs {
		if err != nil && (first < 0 || portTaken(err) && !portTaken(errs[first])) {
			first = i
		}
	}
	if first < 0 {
		return ms, 0, nil
	}
	for _, m := range ms {
		if m != nil {
			m.Close()
		}
	}
	return nil, first, errs[first]
}

var prefixSeq atomic.Int64

// openStore opens a store on endpoints under a prefix of its own.
func openStore(t testing.TB, endpoints []string, o Options) *Store {
	t.Helper()
	o.Endpoints = endpoints
	if o.Prefix == "" {
		o.Prefix = fmt.Sprintf("/t%d", prefixSeq.Add(1))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := Open(ctx, o)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// split is one store seen through two members: commits and reads go
// through one, watches through another.
type split struct {
	*Store
	watcher *Store
}

func (s split) Watch(ctx context.Context, path string) (<-chan store.Event, error) {
	return s.watcher.Watch(ctx, path)
}

func (s split) Close() error {
	err := s.Store.Close()
	s.watcher.Close()
	return err
}
