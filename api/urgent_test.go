package api_test

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"testing"

	"github.com/ejcloud/elasticjob/api"
	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/store"
	"github.com/ejcloud/elasticjob/store/memory"
)

// urgencyKV records whether each commit came under store.Urgent.
type urgencyKV struct {
	store.KV
	mu     sync.Mutex
	plain  int
	urgent int
}

func (k *urgencyKV) Commit(ctx context.Context, ops ...store.Op) error {
	k.mu.Lock()
	if store.IsUrgent(ctx) {
		k.urgent++
	} else {
		k.plain++
	}
	k.mu.Unlock()
	return k.KV.Commit(ctx, ops...)
}

// TestAPIWritesAreUrgent: a write through the API commits under
// store.Urgent, so on ZooKeeper it does not queue behind the launch loop.
func TestAPIWritesAreUrgent(t *testing.T) {
	kv := &urgencyKV{KV: memory.New()}
	clk := clock.NewFake(t0)
	reg := registry.New(kv)
	ops := &fakeOps{}
	o := api.Options{Registry: reg, Clock: clk, Log: slog.New(slog.DiscardHandler), Live: api.Live{Ops: ops, Engine: ops}}
	o.Auth = api.NewAuth(api.Credentials{}, clk, reg.Tenancy())
	h, _ := api.NewServer(o)
	e := &env{t: t, h: h, reg: reg, clock: clk, ops: ops}
	e.must(http.StatusOK, http.MethodPost, "/api/app", appBody("app"))
	e.must(http.StatusOK, http.MethodPost, "/api/job/register", jobBody("job", "app"))
	kv.mu.Lock()
	defer kv.mu.Unlock()
	if kv.urgent < 2 || kv.plain != 0 {
		t.Fatalf("%d urgent and %d plain commits, want every API commit urgent", kv.urgent, kv.plain)
	}
}
