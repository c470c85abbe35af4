package etcd

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	etcdstore "github.com/ejcloud/elasticjob/store/etcd"
	"github.com/ejcloud/elasticjob/store/etcd/etcdtest"
)

// startMembers starts an n-member loopback cluster with fast raft timers;
// the members stop at the end of the test.
func startMembers(t *testing.T, n int) []*etcdstore.Member {
	t.Helper()
	return etcdtest.Start(t, n).Members
}

var prefixSeq atomic.Int64

// openStore opens a store on endpoints (or o's Member) under a prefix of
// its own, closed at the end of the test.
func openStore(t testing.TB, endpoints []string, o etcdstore.Options) *etcdstore.Store {
	t.Helper()
	o.Endpoints = endpoints
	if o.Prefix == "" {
		o.Prefix = fmt.Sprintf("/t%d", prefixSeq.Add(1))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := etcdstore.Open(ctx, o)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
