package registry

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/internal/testproxy"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/queue"
	"github.com/ejcloud/elasticjob/store"
	"github.com/ejcloud/elasticjob/store/cache"
	"github.com/ejcloud/elasticjob/store/memory"
	zkstore "github.com/ejcloud/elasticjob/store/zk"
	"github.com/ejcloud/elasticjob/task"
)

// The trees below are written as the original wrote them, by hand from its
// formats: 3.0.4's YamlEngine (snakeyaml dumpAsMap, keys in alphabetical
// order, nulls and empty props left out) and 2.1.5's Gson adapters (their
// field order). None is produced by this repository's encoders.

const (
	origTaskID0 = "yaml_job@-@0@-@READY@-@2d0b6f5e-8c1a-4c52-9c7e-1d5d3f0e6a11-S0@-@8f1e2a3b-1111-4c22-9a33-44b5c6d7e8f9"
	origTaskID1 = "yaml_job@-@1@-@FAILOVER@-@2d0b6f5e-8c1a-4c52-9c7e-1d5d3f0e6a11-S1@-@0a1b2c3d-2222-4c22-9a33-44b5c6d7e8f9"
)

// original304 is a registry the original 3.0.4 left behind.
var original304 = map[string]string{
	"/config/app/yaml_app": "appCacheEnable: false\n" +
		"appName: yaml_app\n" +
		"appURL: http://repo.example/yaml_app-1.0.tar.gz\n" +
		"bootstrapScript: bin/start.sh\n" +
		"cpuCount: 0.5\n" +
		"eventTraceSamplingCount: 3\n" +
		"memoryMB: 256.0\n",
	"/config/job/yaml_job": "appName: yaml_app\n" +
		"cpuCount: 0.25\n" +
		"cron: 0/30 * * * * ?\n" +
		"description: 'nightly: export'\n" +
		"disabled: false\n" +
		"failover: true\n" +
		"jobErrorHandlerType: DINGTALK\n" +
		"jobExecutionType: TRANSIENT\n" +
		"jobExecutorServiceHandlerType: CPU\n" +
		"jobName: yaml_job\n" +
		"jobParameter: '123'\n" +
		"jobShardingStrategyType: AVG_ALLOCATION\n" +
		"maxTimeDiffSeconds: -1\n" +
		"memoryMB: 64.0\n" +
		"misfire: true\n" +
		"monitorExecution: true\n" +
		"overwrite: false\n" +
		"props:\n" +
		"  dingtalk.webhook: https://oapi.dingtalk.com/robot/send?access_token=x\n" +
		"  dingtalk.keyword: nightly\n" +
		"  dingtalk.secret: SECx\n" +
		"  script.command.line: echo hi\n" +
		"  streaming.process: 'true'\n" +
		"reconcileIntervalMinutes: 10\n" +
		"shardingItemParameters: 0=Beijing,1=Shanghai\n" +
		"shardingTotalCount: 2\n",
	"/config/job/yaml_daemon": "appName: yaml_app\n" +
		"cpuCount: 1.0\n" +
		"cron: '* * * * * ?'\n" +
		"disabled: false\n" +
		"failover: false\n" +
		"jobExecutionType: DAEMON\n" +
		"jobName: yaml_daemon\n" +
		"maxTimeDiffSeconds: 0\n" +
		"memoryMB: 128.0\n" +
		"misfire: false\n" +
		"monitorExecution: false\n" +
		"overwrite: false\n" +
		"reconcileIntervalMinutes: 0\n" +
		"shardingTotalCount: 3\n",
	"/state/ready/yaml_job":                 "3",
	"/state/ready/yaml_daemon":              "1",
	"/state/running/yaml_job/yaml_job@-@0":  origTaskID0,
	"/state/failover/yaml_job/yaml_job@-@1": origTaskID1,
	"/state/disable/job/yaml_daemon":        "yaml_daemon",
	"/state/disable/app/yaml_app":           "yaml_app",
	"/ha/framework_id":                      "2d0b6f5e-8c1a-4c52-9c7e-1d5d3f0e6a11-0042",
	"/state/running/yaml_daemon":            "",
	"/state/failover/yaml_daemon":           "",
}

// original215 is a registry the original 2.1.5 left behind.
var original215 = map[string]string{
	"/config/app/json_app": `{"appName":"json_app","appURL":"http://repo.example/json_app.tar.gz","bootstrapScript":"bin/start.sh",` +
		`"cpuCount":1.0,"memoryMB":128.0,"appCacheEnable":true,"eventTraceSamplingCount":0}`,
	"/config/job/json_simple": `{"jobName":"json_simple","jobClass":"com.example.job.MySimpleJob","jobType":"SIMPLE",` +
		`"cron":"0/30 * * * * ?","shardingTotalCount":10,"shardingItemParameters":"0=a,1=b","jobParameter":"p",` +
		`"failover":true,"misfire":false,"description":"simple",` + origJobProps +
		`,"appName":"json_app","cpuCount":1.0,"memoryMB":128.0,"jobExecutionType":"TRANSIENT"}`,
	"/config/job/json_dataflow": `{"jobName":"json_dataflow","jobClass":"com.example.job.MyDataflowJob","jobType":"DATAFLOW",` +
		`"cron":"0 0/5 * * * ?","shardingTotalCount":2,"shardingItemParameters":"","jobParameter":"",` +
		`"failover":false,"misfire":true,"description":"",` + origJobProps + `,"streamingProcess":true,` +
		`"appName":"json_app","cpuCount":0.5,"memoryMB":64.0,"jobExecutionType":"DAEMON"}`,
	"/config/job/json_script": `{"jobName":"json_script","jobClass":"com.dangdang.ddframe.job.api.script.ScriptJob","jobType":"SCRIPT",` +
		`"cron":"0/10 * * * * ?","shardingTotalCount":1,"shardingItemParameters":"","jobParameter":"",` +
		`"failover":false,"misfire":false,"description":"",` + origJobProps + `,"scriptCommandLine":"bin/run.sh --fast",` +
		`"appName":"json_app","cpuCount":0.1,"memoryMB":32.0,"jobExecutionType":"TRANSIENT"}`,
	"/config/job/json_spring": `{"jobName":"json_spring","jobClass":"com.example.job.MySimpleJob","jobType":"SIMPLE",` +
		`"cron":"0/30 * * * * ?","shardingTotalCount":1,"shardingItemParameters":"","jobParameter":"",` +
		`"failover":true,"misfire":true,"description":"",` + origJobProps +
		`,"appName":"json_app","cpuCount":1.0,"memoryMB":128.0,"jobExecutionType":"TRANSIENT",` +
		`"beanName":"springSimpleJob","applicationContext":"applicationContext.xml"}`,
	"/state/ready/json_simple":       "1",
	"/state/disable/job/json_spring": "json_spring",
	"/ha/framework_id":               "20161213-150115-16777343-5050-3389-0000",
}

const origJobProps = `"jobProperties":{"job_exception_handler":"com.dangdang.ddframe.job.executor.handler.impl.DefaultJobExceptionHandler",` +
	`"executor_service_handler":"com.dangdang.ddframe.job.executor.handler.impl.DefaultExecutorServiceHandler"}`

// writeTree writes tree as the original's Curator client did: every node
// persistent, its missing parents created empty.
func writeTree(t *testing.T, put func(p string, v []byte) error, tree map[string]string) {
	t.Helper()
	for p, v := range tree {
		if err := put(p, []byte(v)); err != nil {
			t.Fatalf("write %s: %v", p, err)
		}
	}
}

// legacyStores runs f on a memory store and on ZooKeeper (EJ_TEST_ZK), each
// holding tree written node by node (on ZooKeeper by a plain client, as
// the original's Curator wrote it, under the namespace's root).
func legacyStores(t *testing.T, tree map[string]string, f func(t *testing.T, r *Registry)) {
	t.Run("memory", func(t *testing.T) {
		kv := memory.New()
		t.Cleanup(func() { kv.Close() })
		writeTree(t, func(p string, v []byte) error { return kv.Commit(context.Background(), store.Put(p, v)) }, tree)
		f(t, New(kv))
	})
	t.Run("cache", func(t *testing.T) {
		kv := memory.New()
		t.Cleanup(func() { kv.Close() })
		writeTree(t, func(p string, v []byte) error { return kv.Commit(context.Background(), store.Put(p, v)) }, tree)
		c, err := cache.Open(context.Background(), kv, cache.Options{Roots: []string{"/config", "/state", "/auth", NamespacesPath}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		f(t, New(c))
	})
	t.Run("zookeeper", func(t *testing.T) {
		servers := strings.Split(testproxy.ZK(t), ",")
		ns := fmt.Sprintf("ejtest-legacy-%d-%d", time.Now().UnixNano(), zkSeq.Add(1))
		conn, _, err := zk.Connect(servers, 10*time.Second, zk.WithLogInfo(false))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		writeTree(t, func(p string, v []byte) error { return zkCreate(conn, "/"+ns+p, v) }, tree)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		kv, err := zkstore.Open(ctx, zkstore.Options{Servers: servers, Namespace: ns})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { kv.Close() })
		f(t, New(kv))
	})
}

// zkCreate creates p with v, and its missing parents empty.
func zkCreate(conn *zk.Conn, p string, v []byte) error {
	parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
	for i := 1; i < len(parts); i++ {
		_, err := conn.Create("/"+strings.Join(parts[:i], "/"), nil, 0, zk.WorldACL(zk.PermAll))
		if err != nil && err != zk.ErrNodeExists {
			return err
		}
	}
	_, err := conn.Create(p, v, 0, zk.WorldACL(zk.PermAll))
	if err == zk.ErrNodeExists {
		_, err = conn.Set(p, v, -1)
	}
	return err
}

func TestOriginal304Tree(t *testing.T) {
	legacyStores(t, original304, func(t *testing.T, r *Registry) {
		ctx := context.Background()
		apps, err := r.Config().Apps(ctx)
		if err != nil {
			t.Fatal(err)
		}
		wantApp := app.Config{AppName: "yaml_app", AppURL: "http://repo.example/yaml_app-1.0.tar.gz", BootstrapScript: "bin/start.sh",
			CPUCount: 0.5, MemoryMB: 256, AppCacheEnable: false, EventTraceSamplingCount: 3}
		if len(apps) != 1 || !reflect.DeepEqual(apps[0], wantApp) {
			t.Fatalf("apps: %+v", apps)
		}
		all, err := r.Config().Jobs(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(all) != 2 {
			t.Fatalf("jobs: %+v", all)
		}
		wantDaemon := jobs.Config{JobName: "yaml_daemon", AppName: "yaml_app", JobExecutionType: jobs.Daemon, Cron: "* * * * * ?",
			ShardingTotalCount: 3, CPUCount: 1, MemoryMB: 128, Props: map[string]string{}}
		if !reflect.DeepEqual(all[0], wantDaemon) {
			t.Errorf("yaml_daemon:\n got %+v\nwant %+v", all[0], wantDaemon)
		}
		wantJob := jobs.Config{JobName: "yaml_job", AppName: "yaml_app", JobExecutionType: jobs.Transient, Cron: "0/30 * * * * ?",
			ShardingTotalCount: 2, ShardingItemParameters: "0=Beijing,1=Shanghai", JobParameter: "123", CPUCount: 0.25, MemoryMB: 64,
			Failover: true, Misfire: true, Description: "nightly: export", JobExecutorServiceHandlerType: "CPU",
			JobErrorHandlerType: jobs.HandlerWebhook, Props: map[string]string{
				"dingtalk.webhook": "https://oapi.dingtalk.com/robot/send?access_token=x", "dingtalk.keyword": "nightly", "dingtalk.secret": "SECx", "script.command.line": "echo hi",
				"streaming.process": "true", "webhook.url": "https://oapi.dingtalk.com/robot/send?access_token=x", "webhook.format": "dingtalk"}}
		if !reflect.DeepEqual(all[1], wantJob) {
			t.Errorf("yaml_job:\n got %+v\nwant %+v", all[1], wantJob)
		}
		for _, j := range all {
			if err := j.Validate(); err != nil {
				t.Errorf("%s as read does not validate: %v", j.JobName, err)
			}
		}
		checkState(t, r, map[string]int{"yaml_job": 3, "yaml_daemon": 1})
		running, err := r.Work().RunningTasks(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if e := running["yaml_job"][0]; e.TaskID != origTaskID0 || e.State != task.Running || e.AgentID != "2d0b6f5e-8c1a-4c52-9c7e-1d5d3f0e6a11-S0" ||
			e.Source != string(jobs.SourceNormal) || !LeftByOriginal(e) || len(running) != 1 || len(running["yaml_job"]) != 1 {
			t.Errorf("running: %+v", running)
		}
		fo, err := r.Work().FailoverQueue(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(fo) != 1 || fo[0].Job != "yaml_job" || fo[0].Item != 1 || fo[0].TaskID != origTaskID1 {
			t.Errorf("failover: %+v", fo)
		}
		checkFlags(t, r, "app", "yaml_app")
		checkFlags(t, r, "job", "yaml_daemon")
		if id, err := r.Term().FrameworkID(ctx); err != nil || id != "2d0b6f5e-8c1a-4c52-9c7e-1d5d3f0e6a11-0042" {
			t.Errorf("framework id %q, %v", id, err)
		}
		if p, ok, err := r.Work().PauseOf(ctx, "yaml_daemon"); ok || err != nil {
			t.Errorf("the original's disable flag read as a pause: %+v %v", p, err)
		}
	})
}

func TestOriginal215Tree(t *testing.T) {
	legacyStores(t, original215, func(t *testing.T, r *Registry) {
		ctx := context.Background()
		a, err := r.Config().App(ctx, "json_app")
		if err != nil {
			t.Fatal(err)
		}
		if want := (app.Config{AppName: "json_app", AppURL: "http://repo.example/json_app.tar.gz", BootstrapScript: "bin/start.sh",
			CPUCount: 1, MemoryMB: 128, AppCacheEnable: true}); !reflect.DeepEqual(a, want) {
			t.Errorf("json_app: %+v", a)
		}
		all, err := r.Config().Jobs(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]jobs.Config{}
		for _, j := range all {
			got[j.JobName] = j
			if err := j.Validate(); err != nil {
				t.Errorf("%s as read does not validate: %v", j.JobName, err)
			}
		}
		want := map[string]jobs.Config{
			"json_simple": {JobName: "json_simple", AppName: "json_app", JobExecutionType: jobs.Transient, Cron: "0/30 * * * * ?",
				ShardingTotalCount: 10, ShardingItemParameters: "0=a,1=b", JobParameter: "p", CPUCount: 1, MemoryMB: 128, Failover: true,
				Description: "simple", JobType: jobs.TypeSimple, JobClass: "com.example.job.MySimpleJob", Props: map[string]string{}},
			"json_dataflow": {JobName: "json_dataflow", AppName: "json_app", JobExecutionType: jobs.Daemon, Cron: "0 0/5 * * * ?",
				ShardingTotalCount: 2, CPUCount: 0.5, MemoryMB: 64, Misfire: true, JobType: jobs.TypeDataflow,
				JobClass: "com.example.job.MyDataflowJob", Props: map[string]string{"streaming.process": "true"}},
			"json_script": {JobName: "json_script", AppName: "json_app", JobExecutionType: jobs.Transient, Cron: "0/10 * * * * ?",
				ShardingTotalCount: 1, CPUCount: 0.1, MemoryMB: 32, JobType: jobs.TypeScript,
				Props: map[string]string{"script.command.line": "bin/run.sh --fast"}},
			"json_spring": {JobName: "json_spring", AppName: "json_app", JobExecutionType: jobs.Transient, Cron: "0/30 * * * * ?",
				ShardingTotalCount: 1, CPUCount: 1, MemoryMB: 128, Failover: true, Misfire: true, JobType: jobs.TypeSimple,
				JobClass: "com.example.job.MySimpleJob", BeanName: "springSimpleJob", ApplicationContext: "applicationContext.xml",
				Props: map[string]string{}},
		}
		if !maps.EqualFunc(got, want, func(a, b jobs.Config) bool { return reflect.DeepEqual(a, b) }) {
			t.Errorf("jobs:\n got %+v\nwant %+v", got, want)
		}
		checkState(t, r, map[string]int{"json_simple": 1})
		checkFlags(t, r, "job", "json_spring")
		checkFlags(t, r, "app")
		if id, err := r.Term().FrameworkID(ctx); err != nil || id != "20161213-150115-16777343-5050-3389-0000" {
			t.Errorf("framework id %q, %v", id, err)
		}
	})
}

// checkState checks the ready counts.
func checkState(t *testing.T, r *Registry, ready map[string]int) {
	t.Helper()
	q, err := r.Work().ReadyQueue(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, rd := range q {
		got[rd.Job] = rd.Count
		if rd.Misfired != rd.Count-1 {
			t.Errorf("%s: %d pending, %d of them misfired", rd.Job, rd.Count, rd.Misfired)
		}
	}
	if !maps.Equal(got, ready) {
		t.Errorf("ready counts %v, want %v", got, ready)
	}
}

// checkFlags checks the disable flags of a kind.
func checkFlags(t *testing.T, r *Registry, kind string, names ...string) {
	t.Helper()
	got, err := r.Config().Disabled(context.Background(), kind)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(names) {
		t.Errorf("disabled %ss: %v, want %v", kind, got, names)
	}
	for _, n := range names {
		if on, err := r.Config().IsDisabled(context.Background(), kind, n); !got[n] || !on || err != nil {
			t.Errorf("%s %s: not disabled (%v)", kind, n, err)
		}
	}
}

// A node in the original's form is rewritten in ours at its next change,
// not before: a launch taking the ready count writes the rest as ours.
func TestOriginalNodeRewrittenOnChange(t *testing.T) {
	kv := memory.New()
	defer kv.Close()
	ctx := context.Background()
	writeTree(t, func(p string, v []byte) error { return kv.Commit(ctx, store.Put(p, v)) }, original304)
	r := New(kv)
	q, err := r.Work().ReadyQueue(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, rd := range q {
		if rd.Job != "yaml_job" {
			continue
		}
		if err := r.commit(ctx, dequeueOps(rd, time.Now())...); err != nil {
			t.Fatal(err)
		}
	}
	n, err := kv.Get(ctx, ReadyPath+"/yaml_job")
	if err != nil {
		t.Fatal(err)
	}
	var rd queue.Ready
	if err := decodeAt(n.Path, n.Value, &rd); err != nil || rd.Count != 2 || n.Value[0] != '{' {
		t.Errorf("after one launch: %s (%+v, %v)", n.Value, rd, err)
	}
	if n, _ := kv.Get(ctx, JobsPath+"/yaml_job"); !strings.HasPrefix(string(n.Value), "appName: yaml_app\n") {
		t.Errorf("an unchanged job was rewritten: %s", n.Value)
	}
}

// Values that are neither ours nor the original's stay errors.
func TestLegacyDecodeRefuses(t *testing.T) {
	for _, c := range []struct {
		path, value string
		v           any
	}{
		{"/config/app/a", "not an app", &app.Config{}},
		{"/config/app/a", "cpuCount: 1.0\n", &app.Config{}},
		{"/config/job/j", "- a\n- b\n", &jobs.Config{}},
		{"/config/job/j", `{"jobName":"j","shardingTotalCount":"3"}`, &jobs.Config{}},
		{"/config/app/a", `{"appName":"a","cpuCount":true}`, &app.Config{}},
		{"/state/ready/j", "0", &queue.Ready{}},
		{"/state/ready/j", "-2", &queue.Ready{}},
		{"/state/ready/j", "", &queue.Ready{}},
		{"/state/running/j/j@-@0", "j@-@0@-@READY@-@s", &task.Entry{}},
		{"/state/running/j/j@-@0", "k@-@0@-@READY@-@s@-@u", &task.Entry{}},
		{"/state/failover/j/j@-@1", "j@-@0@-@FAILOVER@-@s@-@u", &queue.Failover{}},
		{"/state/failover/j/j@-@1", "j@-@1@-@BOGUS@-@s@-@u", &queue.Failover{}},
	} {
		if err := decodeAt(c.path, []byte(c.value), c.v); err == nil {
			t.Errorf("%s = %q decoded: %+v", c.path, c.value, c.v)
		}
	}
}

// FuzzLegacyDecode: any value at an app, job, ready, running or failover
// path decodes or fails without panicking, and a value that decodes (the
// original's form included) is written in this scheduler's form as
// itself: read back and written again, it is the same bytes, so rewriting a
// node at its next change loses nothing of what was read.
func FuzzLegacyDecode(f *testing.F) {
	for _, tree := range []map[string]string{original304, original215} {
		for p, v := range tree {
			f.Add(p, []byte(v))
		}
	}
	f.Add("/state/ready/j", []byte(" 12\n"))
	f.Add("/config/job/j", []byte("jobName: j\nprops:\n  a: 1\n  b: true\n  c: [1, 2]\njobErrorHandlerType: WECHAT\n"))
	f.Add("/config/app/a", []byte("appName: a\ncpuCount: '2'\n"))
	f.Fuzz(func(t *testing.T, p string, b []byte) {
		var v any
		switch {
		case strings.HasPrefix(p, AppsPath+"/"):
			v = &app.Config{}
		case strings.HasPrefix(p, JobsPath+"/"):
			v = &jobs.Config{}
		case strings.HasPrefix(p, ReadyPath+"/"):
			v = &queue.Ready{}
		case strings.HasPrefix(p, RunningPath+"/"):
			v = &task.Entry{}
		case strings.HasPrefix(p, failoverPath+"/"):
			v = &queue.Failover{}
		default:
			return
		}
		if nsOfPath(p) != "" || decodeAt(p, b, v) != nil {
			return
		}
		val := reflect.ValueOf(v).Elem().Interface()
		written := encodeAt(p, val)
		again := reflect.New(reflect.TypeOf(v).Elem()).Interface()
		if err := decodeAt(p, written, again); err != nil {
			t.Fatalf("%s = %q decoded to %+v, whose JSON does not decode: %v", p, b, v, err)
		}
		if rewritten := encodeAt(p, reflect.ValueOf(again).Elem().Interface()); string(rewritten) != string(written) {
			t.Fatalf("%s = %q: written as %s, read and written again as %s", p, b, written, rewritten)
		}
	})
}
