package registry

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/internal/testproxy"
	"github.com/ejcloud/elasticjob/store"
	"github.com/ejcloud/elasticjob/store/cache"
	"github.com/ejcloud/elasticjob/store/memory"
	"github.com/ejcloud/elasticjob/store/sqlite"
	zkstore "github.com/ejcloud/elasticjob/store/zk"
)

var zkSeq atomic.Int64

// eachStore runs f on every store the registry runs on: memory, the
// embedded SQLite store, ZooKeeper (EJ_TEST_ZK), and the scheduler's
// in-memory copy over SQLite (store/cache with its roots, /namespaces
// among them): the namespaces' layout is the registry's, the same on all.
func eachStore(t *testing.T, f func(t *testing.T, kv store.KV)) {
	t.Run("memory", func(t *testing.T) {
		kv := memory.New()
		t.Cleanup(func() { kv.Close() })
		f(t, kv)
	})
	openSQLite := func(t *testing.T) store.KV {
		kv, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "registry.db"), sqlite.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { kv.Close() })
		return kv
	}
	t.Run("sqlite", func(t *testing.T) { f(t, openSQLite(t)) })
	t.Run("cache", func(t *testing.T) {
		kv, err := cache.Open(context.Background(), openSQLite(t), cache.Options{Roots: []string{"/config", "/state", "/auth", NamespacesPath}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { kv.Close() })
		f(t, kv)
	})
	t.Run("zookeeper", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		kv, err := zkstore.Open(ctx, zkstore.Options{Servers: strings.Split(testproxy.ZK(t), ","),
			Namespace: fmt.Sprintf("ejtest/registry-%d-%d", time.Now().UnixNano(), zkSeq.Add(1))})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { kv.Close() })
		f(t, kv)
	})
}
