package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"testing"

	"github.com/ejcloud/elasticjob/api"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/queue"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/store"
	"github.com/ejcloud/elasticjob/store/memory"
	"github.com/ejcloud/elasticjob/task"
)

// afterListKV runs then, once, right after the first List of path
// returns: a write landing between two reads of one request.
type afterListKV struct {
	store.KV
	path string
	once sync.Once
	then func()
}

func (k *afterListKV) List(ctx context.Context, path string) ([]store.Node, error) {
	n, err := k.KV.List(ctx, path)
	if path == k.path && k.then != nil {
		k.once.Do(k.then)
	}
	return n, err
}

// TestAWaitingEntryIsListedWithItsReason: the launcher launches a waiting
// execution (its ready entry dequeued, its running entry written) and the
// recorder forgets its reason while GET /api/job/tasks/ready is between
// its reads. A listed entry comes with its reason: the entry is listed
// waiting only if its reason was read before it.
func TestAWaitingEntryIsListedWithItsReason(t *testing.T) {
	mem := memory.New()
	t.Cleanup(func() { mem.Close() })
	kv := &afterListKV{KV: mem}
	reg := registry.New(kv, registry.Options{Damage: registry.NewDamage(nil)})
	e := newEnv(t, func(o *api.Options, _ *api.Credentials) { o.Registry = reg })
	e.kv, e.reg = mem, reg
	e.must(http.StatusOK, http.MethodPost, "/api/app", appBody("app"))
	e.must(http.StatusOK, http.MethodPost, "/api/job/register",
		`{"jobName":"j","appName":"app","jobExecutionType":"TRANSIENT","shardingTotalCount":1,"cpuCount":0.5,"memoryMB":32}`)
	e.must(http.StatusNoContent, http.MethodPost, "/api/job/trigger", "j")
	why, _ := json.Marshal(queue.Wait{Reason: queue.WaitReserved, Message: "the oldest work that does not fit now", Since: t0})
	if err := mem.Commit(t.Context(), store.Put("/state/waiting/ready/j", why)); err != nil {
		t.Fatal(err)
	}
	kv.path = registry.ReadyPath
	kv.then = func() { // the launch commit, then the recorder's
		run, _ := json.Marshal(task.Entry{TaskID: "j@-@0@-@READY@-@@-@1", LaunchedAt: t0, State: task.Staging})
		if err := mem.Commit(context.Background(), store.Delete(registry.ReadyPath+"/j", store.AnyVersion),
			store.Put(registry.RunningPath+"/j/"+jobs.MetaKey("j", 0), run)); err != nil {
			t.Error(err)
		}
		if err := mem.Commit(context.Background(), store.Delete("/state/waiting/ready/j", store.AnyVersion)); err != nil {
			t.Error(err)
		}
	}
	rows := decode[[]map[string]any](t, e.must(http.StatusOK, http.MethodGet, "/api/job/tasks/ready", ""))
	for _, r := range rows {
		if _, ok := r["waiting"]; !ok {
			t.Errorf("listed waiting without its reason: %v", r)
		}
	}
}
