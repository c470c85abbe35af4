// Package etcdtest starts real embedded etcd clusters on loopback for
// the tests of packages that use the replicated store: unique ports and
// temporary directories, the fast raft timers, every member
// stopped at the end of the test.
package etcdtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ejcloud/elasticjob/internal/loopback"
	"github.com/ejcloud/elasticjob/store/etcd"
)

// Cluster is a running loopback cluster.
type Cluster struct {
	t       testing.TB
	mu      sync.Mutex
	Configs []etcd.MemberConfig
	Members []*etcd.Member // nil while a member is down
}

// FreePort is a loopback port nothing listens on now (internal/loopback).
func FreePort(t testing.TB) int {
	t.Helper()
	p, err := loopback.Port()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Config is one member's config with fresh ports and directory and the
// fast timers; InitialCluster is left to the caller.
func Config(t testing.TB, name string) etcd.MemberConfig {
	return etcd.MemberConfig{
		Name:         name,
		Dir:          t.TempDir(),
		PeerURL:      fmt.Sprintf("http://127.0.0.1:%d", FreePort(t)),
		ClientURL:    fmt.Sprintf("http://127.0.0.1:%d", FreePort(t)),
		ClusterToken: "test-" + strings.ReplaceAll(t.Name(), "/", "-"),
		Heartbeat:    50 * time.Millisecond,
		Election:     500 * time.Millisecond,
		StartTimeout: 60 * time.Second,
	}
}

// Start starts an n-member cluster (members m0…m<n-1>), again on other
// ports if one was taken between picking and binding (at most 3 times).
func Start(t testing.TB, n int) *Cluster {
	t.Helper()
	c := &Cluster{t: t}
	for attempt := 1; ; attempt++ {
		c.Configs = make([]etcd.MemberConfig, n)
		var peers []etcd.Peer
		for i := range c.Configs {
			c.Configs[i] = Config(t, fmt.Sprintf("m%d", i))
			peers = append(peers, etcd.Peer{Name: c.Configs[i].Name, URL: c.Configs[i].PeerURL})
		}
		for i := range c.Configs {
			c.Configs[i].InitialCluster = peers
		}
		ms := make([]*etcd.Member, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i, cfg := range c.Configs {
			wg.Go(func() { ms[i], errs[i] = etcd.StartMember(context.Background(), cfg) })
		}
		wg.Wait()
		err := errors.Join(errs...)
		if err == nil {
			c.Members = ms
			t.Cleanup(c.Stop)
			return c
		}
		for _, m := range ms {
			if m != nil {
				m.Close()
			}
		}
		if attempt == 3 || !(errors.Is(err, syscall.EADDRINUSE) || strings.Contains(err.Error(), "address already in use")) {
			t.Fatalf("etcdtest: start %d members: %v", n, err)
		}
	}
}

// Endpoints are the client URLs of every configured member.
func (c *Cluster) Endpoints() []string {
	var eps []string
	for _, cfg := range c.Configs {
		eps = append(eps, cfg.ClientURL)
	}
	return eps
}

// Client dials every member; it is closed at the end of the test.
func (c *Cluster) Client(endpoints ...string) *clientv3.Client {
	c.t.Helper()
	if len(endpoints) == 0 {
		endpoints = c.Endpoints()
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second})
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { cli.Close() })
	return cli
}

// Leader is the index of the member leading the cluster now (-1: none).
func (c *Cluster) Leader() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, m := range c.Members {
		if m != nil && m.IsLeader() {
			return i
		}
	}
	return -1
}

// Kill stops member i the hard way.
func (c *Cluster) Kill(i int) {
	c.mu.Lock()
	m := c.Members[i]
	c.Members[i] = nil
	c.mu.Unlock()
	if m != nil {
		m.Kill()
	}
}

// Restart starts member i again on its data directory.
func (c *Cluster) Restart(i int) *etcd.Member {
	c.t.Helper()
	m, err := etcd.StartMember(context.Background(), c.Configs[i])
	if err != nil {
		c.t.Fatalf("etcdtest: restart %s: %v", c.Configs[i].Name, err)
	}
	c.mu.Lock()
	c.Members[i] = m
	c.mu.Unlock()
	return m
}

// Stop closes every running member.
func (c *Cluster) Stop() {
	c.mu.Lock()
	ms := c.Members
	c.Members = make([]*etcd.Member, len(ms))
	c.mu.Unlock()
	for _, m := range ms {
		if m != nil {
			m.Close()
		}
	}
}

// RemoveDir empties member i's data directory (a lost disk).
func (c *Cluster) RemoveDir(i int) {
	c.t.Helper()
	if err := os.RemoveAll(c.Configs[i].Dir); err != nil {
		c.t.Fatal(err)
	}
}
