package registry

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/identity"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/namespace"
	"github.com/ejcloud/elasticjob/queue"
	"github.com/ejcloud/elasticjob/store"
	"github.com/ejcloud/elasticjob/store/memory"
	"github.com/ejcloud/elasticjob/task"
	"github.com/ejcloud/elasticjob/workflow"
)

// fuzzPaths is one store path of each kind of stored record (scanKinds),
// in the default namespace's tree, another's, and the scheduler's own.
var fuzzPaths = []string{
	"/config/app/a", "/config/job/j", "/config/workflow/w", "/state/ready/j",
	"/state/running/j/j@-@0", "/state/failover/j/j@-@1", "/state/runs/j", "/state/trigger_keys/k",
	"/state/workflow/w", "/state/workflow/w/r1", "/state/workflow_keys/w/k", "/state/waiting/ready/j",
	"/state/waiting/failover/j/j@-@0", "/state/registered/j", "/state/producer/fired_until",
	"/namespaces/pay/config/app/a", "/namespaces/pay/config/job/j", "/namespaces/pay/state/ready/j",
	"/namespaces/pay", "/secrets/default/s", "/auth/tokens/t", "/kube/owners/CloudJob/j",
}

// fuzzSeeds are real encoded values of every record, the original
// ElasticJob-Cloud's formats (3.0.x YAML, 2.1.x Gson JSON with jobClass,
// a ready count, a bare task id) and hand edits.
func fuzzSeeds() [][]byte {
	a := app.Default()
	a.AppName, a.AppURL, a.BootstrapScript = "a", "http://h/a.tgz", "bin/start.sh"
	j := jobs.Default()
	j.JobName, j.AppName, j.Cron = "j", "a", "0/5 * * * * ?"
	w := workflow.Default()
	w.Name, w.Nodes = "w", []workflow.Node{{ID: "n", Job: "j"}}
	rd, _ := queue.Add(nil, queue.Trigger{At: time.Unix(1, 0), By: ByCron}, 0)
	return [][]byte{
		mustJSON(a), mustJSON(j), mustJSON(w), mustJSON(rd),
		mustJSON(task.Entry{TaskID: "j@-@0@-@READY@-@agent@-@uuid", State: task.Running}),
		mustJSON(queue.Failover{TaskID: "j@-@1@-@READY@-@agent@-@uuid"}),
		mustJSON(task.RunState{}), mustJSON(task.RunRecord{JobName: "j"}),
		mustJSON(WorkflowState{}), mustJSON(WorkflowKey{RunID: "r1"}), mustJSON(queue.Wait{}),
		mustJSON(namespace.Record{Name: "pay"}), mustJSON(identity.APIToken{ID: "t"}), mustJSON(Owner{Kind: "CloudJob"}),
		[]byte(time.Unix(1, 0).UTC().Format(time.RFC3339Nano)),
		[]byte("appName: legacy_app\nappURL: http://repo/legacy_app.tar.gz\nbootstrapScript: bin/start.sh\ncpuCount: 1.0\nmemoryMB: 128.0\n"),
		[]byte(`{"jobName":"legacy_job","jobClass":"com.example.MyJob","jobType":"SIMPLE","jobExecutionType":"TRANSIENT","cron":"0/30 * * * * ?","shardingTotalCount":3,"cpuCount":0.5,"memoryMB":128.0,"appURL":"http://x","bootstrapScript":"bin/start.sh","beanName":"","applicationContext":""}`),
		[]byte("1"), []byte("j@-@0@-@READY@-@agent@-@uuid"), []byte(""), []byte("null"), []byte("{}"), []byte("[]"),
		[]byte(`{"appName":`), []byte(`{"appName":7}`), []byte("\xff\xfe"),
	}
}

// FuzzDecodeStored: whatever a stored value holds, decoding it as any
// record never panics, fails only with a *DecodeError naming its path
// (errors.Is ErrDamaged), and never makes a listing fail: the value is
// set aside and the good entry beside it still listed.
func FuzzDecodeStored(f *testing.F) {
	for _, v := range fuzzSeeds() {
		for i := range fuzzPaths {
			f.Add(uint8(i), v)
		}
		for n := 1; n < len(v); n += 1 + len(v)/4 { // truncated
			f.Add(uint8(n), v[:n])
		}
	}
	f.Fuzz(func(t *testing.T, kind uint8, value []byte) {
		p := fuzzPaths[int(kind)%len(fuzzPaths)]
		ok, err := DecodeStored(p, value)
		if !ok {
			t.Fatalf("%s: no decoder", p)
		}
		var de *DecodeError
		if err != nil && (!errors.Is(err, ErrDamaged) || !errors.As(err, &de) || de.Path != p) {
			t.Fatalf("%s: %q failed with %v, not a damaged entry's error naming its path", p, value, err)
		}
		listings(t, p, value, err != nil)
	})
}

// listings writes value at p beside good entries and reads every listing.
func listings(t *testing.T, p string, value []byte, damaged bool) {
	t.Helper()
	ctx := context.Background()
	kv := memory.New()
	defer kv.Close()
	r := New(kv)
	r.damage = NewDamage(nil)
	if _, err := r.Tenancy().PutNamespace(ctx, namespace.Record{Name: "pay"}); err != nil {
		t.Fatal(err)
	}
	a := app.Default()
	a.AppName, a.AppURL, a.BootstrapScript = "good", "http://h/a.tgz", "bin/start.sh"
	if err := r.Config().AddApp(ctx, a); err != nil {
		t.Fatal(err)
	}
	if err := kv.Commit(ctx, store.Put(p, value)); err != nil {
		t.Fatal(err)
	}
	apps, err := r.Config().Apps(ctx)
	if err != nil {
		t.Fatalf("apps with %q at %s: %v", value, p, err)
	}
	if apps[0].AppName != "good" && apps[len(apps)-1].AppName != "good" {
		t.Fatalf("the good app is not listed: %+v", apps)
	}
	var m QueueMemo
	for what, f := range map[string]func() error{
		"jobs":      func() error { _, err := r.Config().Jobs(ctx); return err },
		"workflows": func() error { _, err := r.Flows().Workflows(ctx); return err },
		"ready":     func() error { _, err := r.Work().ReadyQueueMemo(ctx, &m); return err },
		"failover":  func() error { _, err := r.Work().FailoverQueueMemo(ctx, &m); return err },
		"running":   func() error { _, err := r.Work().RunningTasks(ctx); return err },
		"waiting":   func() error { _, err := r.Work().WaitingReasons(ctx); return err },
		"runs":      func() error { _, err := r.Flows().WorkflowRuns(ctx, "w"); return err },
		"ns":        func() error { _, err := r.Tenancy().Namespaces(ctx); return err },
		"secrets":   func() error { _, err := r.Tenancy().Secrets(ctx, namespace.Default); return err },
		"tokens":    func() error { _, err := r.Tenancy().Tokens(ctx, namespace.Default); return err },
		"owners":    func() error { _, err := r.Config().Owned(ctx, "CloudJob"); return err },
		"fires": func() error {
			return r.Work().TriggerMany(ctx, map[string]bool{"j": true, "pay~j": false}, time.Unix(2, 0), time.Time{}, nil)
		},
	} {
		if err := f(); err != nil {
			t.Fatalf("%s with %q at %s: %v", what, value, p, err)
		}
	}
	found, err := r.Scan(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if damaged && (len(found) != 1 || found[0].Path != p) {
		t.Fatalf("scan with %q at %s found %+v", value, p, found)
	}
}
