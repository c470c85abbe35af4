package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/ejcloud/elasticjob/api"
	"github.com/ejcloud/elasticjob/config"
	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/engine/clusters"
	"github.com/ejcloud/elasticjob/engine/kube"
	"github.com/ejcloud/elasticjob/engine/mesos/agents"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/round"
	"github.com/ejcloud/elasticjob/store/memory"
)

// settings loads the scheduler's settings from env-style keys, with a data dir and an
// executor of the test's own.
func settings(t *testing.T, kv map[string]string) config.Config {
	t.Helper()
	dir := t.TempDir()
	exe := filepath.Join(dir, "executor")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"data_dir": dir, "executor_path": exe}
	for k, v := range kv {
		env[k] = v
	}
	cfg, err := config.Load(nil, func(k string) (string, bool) { v, ok := env[k]; return v, ok }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func kubeconfig(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(p, []byte("apiVersion: v1\nkind: Config\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

var quiet = slog.New(slog.DiscardHandler)

func noKube(t *testing.T) func(kube.Connection) (kube.Clients, error) {
	return func(kube.Connection) (kube.Clients, error) {
		t.Error("Kubernetes connected for a Mesos engine")
		return kube.Clients{}, errors.New("no")
	}
}

func TestChooseEngineMesos(t *testing.T) {
	for _, c := range []struct {
		name                        string
		kv                          map[string]string
		url                         string
		embedded, checkpoint, rejct bool
	}{
		{"embedded", nil, "http://127.0.0.1:5051", true, true, false},
		{"real cluster", map[string]string{"mesos_url": "http://m:5050", "mesos_checkpoint": "false"}, "http://m:5050", false, false, true},
		{"real cluster, file URLs allowed", map[string]string{"mesos_url": "http://m:5050", "allow_file_app_urls": "true"}, "http://m:5050", false, true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := settings(t, c.kv)
			ms, err := newMasters(c.url, quiet)
			if err != nil {
				t.Fatal(err)
			}
			e, err := chooseEngine(cfg, registry.New(memory.New()), ms, noKube(t), quiet)
			if err != nil {
				t.Fatal(err)
			}
			reads, ok := e.reads.(*agents.Engine)
			if e.name != "mesos" || !ok || e.kube != nil {
				t.Fatalf("engine %q %T", e.name, e.reads)
			}
			if reads.URL != c.url || reads.Embedded != c.embedded || reads.Checkpoint != c.checkpoint || reads.Client.Leader() != c.url {
				t.Fatalf("reads %+v", reads)
			}
			caps := e.reads.Capabilities()
			if caps.Checkpointing != c.checkpoint || !caps.ExecutorSharing || !caps.Logs || !caps.ClusterView {
				t.Fatalf("capabilities %+v", caps)
			}
			if len(e.reportURLs) != 1 || e.reportURLs[0] != cfg.Advertised() || e.rejectFileURLs != c.rejct {
				t.Fatalf("report URLs %v, reject file URLs %v", e.reportURLs, e.rejectFileURLs)
			}
			if e.exe.command == "" {
				t.Fatal("no executor command")
			}
			var o api.Options
			e.apiEngine(&o)
			if o.Operate.Executors != nil || o.Apps.PodTemplates != nil || o.Tenancy.EngineCaps != nil || o.Apps.RejectFileAppURLs != c.rejct {
				t.Fatalf("API options on Mesos: %+v", o)
			}
			term, err := e.newTerm(registry.New(memory.New()), "fw-1", quiet)
			if err != nil {
				t.Fatal(err)
			}
			if mt, ok := term.(mesosTerm); !ok || mt.Inventory != e.reads {
				t.Fatalf("term %T: the Mesos client with the master's agents as its inventory", term)
			}
		})
	}
}

func TestChooseEngineKubernetes(t *testing.T) {
	cfg := settings(t, map[string]string{"kube_config": kubeconfig(t), "kube_namespace": "jobs", "kube_api_qps": "20", "kube_api_burst": "40",
		"kube_scheduler_url": "http://ej.svc:8899", "kube_namespaces": "team=k-team"})
	cs := fake.NewClientset()
	var asked kube.Connection
	connect := func(c kube.Connection) (kube.Clients, error) { asked = c; return kube.Clients{Typed: cs}, nil }
	ms, _ := newMasters("", quiet)
	e, err := chooseEngine(cfg, registry.New(memory.New()), ms, connect, quiet)
	if err != nil {
		t.Fatal(err)
	}
	if asked != (kube.Connection{Kubeconfig: cfg.Kube.Config, QPS: 20, Burst: 40}) {
		t.Fatalf("connected with %+v", asked)
	}
	if _, ok := e.reads.(*kube.Cluster); e.name != "kubernetes" || !ok || e.kube == nil || e.kubes.Typed != cs {
		t.Fatalf("engine %q %T", e.name, e.reads)
	}
	caps := e.reads.Capabilities()
	if !caps.Checkpointing || caps.ExecutorSharing || !caps.Logs || !caps.Sandboxes || !caps.ClusterView || !caps.Capacity {
		t.Fatalf("capabilities %+v", caps)
	}
	if len(e.reportURLs) != 1 || e.reportURLs[0] != "http://ej.svc:8899" || !e.rejectFileURLs || e.exe.command != "" {
		t.Fatalf("report URLs %v, reject file URLs %v, executor %+v", e.reportURLs, e.rejectFileURLs, e.exe)
	}
	var o api.Options
	e.apiEngine(&o)
	if o.Operate.Executors == nil || o.Apps.PodTemplates == nil || o.Tenancy.EngineCaps == nil || !o.Apps.RejectFileAppURLs {
		t.Fatalf("API options on Kubernetes: %+v", o)
	}
	if c := o.Tenancy.EngineCaps("team"); c.KubernetesNamespace != "k-team" || c.Closed != "" || c.Quota != nil {
		t.Fatalf("team's engine cap on a standby: %+v", c)
	}
	term, err := e.newTerm(registry.New(memory.New()), "fw-1", quiet)
	if err != nil {
		t.Fatal(err)
	}
	if kt, ok := term.(*kube.Term); !ok || kt.FrameworkID() != "fw-1" {
		t.Fatalf("term %T", term)
	}
	if err := o.Operate.Executors.Report(context.Background(), engine.ExecutorReport{TaskID: "x"}); !errors.Is(err, engine.ErrUnavailable) {
		t.Fatalf("a report before the term runs: %v", err)
	}
}

func TestChooseEngineKubernetesUnreachable(t *testing.T) {
	cfg := settings(t, map[string]string{"kube_config": kubeconfig(t)})
	boom := errors.New("kubernetes: no such cluster")
	ms, _ := newMasters("", quiet)
	_, err := chooseEngine(cfg, registry.New(memory.New()), ms, func(kube.Connection) (kube.Clients, error) { return kube.Clients{}, boom }, quiet)
	if !errors.Is(err, boom) {
		t.Fatalf("%v, want the connection's error", err)
	}
}

func TestKubeConfigFromSettings(t *testing.T) {
	cfg := settings(t, map[string]string{"kube_config": kubeconfig(t), "kube_namespace": "jobs", "kube_executor_image": "reg/ej:1",
		"kube_image_pull_policy": "Always", "kube_host_network": "true", "kube_node_selector": "pool=batch",
		"kube_tolerations": "dedicated=batch:NoSchedule,gpu:NoExecute", "kube_service_account": "runner", "kube_binding": "kube-scheduler",
		"advertise_url": "http://sched:8899", "kube_scheduler_url": "http://ej.svc:8899"})
	kc := kubeConfig(cfg, kube.Clients{}, func(id string) string { return "tok-" + id })
	if kc.Namespace != "jobs" || kc.ExecutorImage != "reg/ej:1" || kc.PullPolicy != corev1.PullAlways || !kc.HostNetwork ||
		kc.NodeSelector["pool"] != "batch" || kc.ServiceAccount != "runner" || kc.Binding != "kube-scheduler" || kc.TaskToken("t") != "tok-t" {
		t.Fatalf("%+v", kc)
	}
	want := []corev1.Toleration{
		{Key: "dedicated", Value: "batch", Effect: corev1.TaintEffectNoSchedule, Operator: corev1.TolerationOpEqual},
		{Key: "gpu", Effect: corev1.TaintEffectNoExecute, Operator: corev1.TolerationOpExists},
	}
	if len(kc.Tolerations) != 2 || kc.Tolerations[0] != want[0] || kc.Tolerations[1] != want[1] {
		t.Fatalf("tolerations %+v", kc.Tolerations)
	}
	if len(kc.SchedulerURLs) != 1 || kc.SchedulerURLs[0] != "http://ej.svc:8899" {
		t.Fatalf("scheduler URLs %v", kc.SchedulerURLs)
	}
}

// TestAppURLsAtLaunch: the launcher's one rewrite of an app URL moves a hosted package to
// the address the pods reach on Kubernetes, and only resolves it on Mesos.
func TestAppURLsAtLaunch(t *testing.T) {
	cfg := settings(t, map[string]string{"kube_config": kubeconfig(t), "advertise_url": "http://sched:8899", "kube_scheduler_url": "http://ej.svc:8899"})
	resolve := func(u string) string { return strings.Replace(u, "peer:8899", "sched:8899", 1) }
	if u := launchURL(cfg, resolve)("http://peer:8899/api/packages/a/1"); u != "http://ej.svc:8899/api/packages/a/1" {
		t.Fatalf("a hosted package at %s, want the address the pods reach", u)
	}
	if u := launchURL(cfg, resolve)("https://repo/a.tgz"); u != "https://repo/a.tgz" {
		t.Fatalf("another URL rewritten: %s", u)
	}
	mesos := settings(t, map[string]string{"advertise_url": "http://sched:8899"})
	if u := launchURL(mesos, resolve)("http://peer:8899/api/packages/a/1"); u != "http://sched:8899/api/packages/a/1" {
		t.Fatalf("on Mesos a hosted package at %s, want this instance's", u)
	}
}

// TestSeveralClustersCompose: a clusters_file of an embedded, a Mesos and a Kubernetes
// cluster builds one engine per cluster from its own settings and composes them: the API
// reads them all (file:// app URLs refused: some agents are remote), a term composes each
// cluster's engine in the configured order.
func TestSeveralClustersCompose(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "b.secret")
	if err := os.WriteFile(secret, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	list := filepath.Join(dir, "clusters.yaml")
	doc := "clusters:\n  - {name: a, engine: embedded}\n" +
		"  - {name: b, engine: mesos, mesos_url: \"http://127.0.0.1:1\", mesos_principal: pb, mesos_secret_file: " + secret + "}\n" +
		"  - {name: c, engine: kubernetes, kube_config: " + kubeconfig(t) + ", kube_namespace: batch}\n"
	if err := os.WriteFile(list, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := settings(t, map[string]string{"clusters_file": list, "advertise_url": "http://sched:8899", "kube_scheduler_url": "http://ej.svc:8899"})
	cfg.Mesos.Principal, cfg.Mesos.Secret = "elasticjob", "embedded-secret" // as withEmbeddedCredential leaves them
	var asked kube.Connection
	connect := func(c kube.Connection) (kube.Clients, error) {
		asked = c
		return kube.Clients{Typed: fake.NewClientset()}, nil
	}
	e, closeAll, err := composeEngines(cfg, registry.New(memory.New()), "http://127.0.0.1:5051", connect, quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer closeAll()
	reads, ok := e.reads.(composedReads)
	if e.name != "clusters" || !ok || len(reads) != 3 {
		t.Fatalf("engine %q %T", e.name, e.reads)
	}
	if asked.Kubeconfig == "" {
		t.Fatal("the Kubernetes cluster was not connected")
	}
	a, b, c := reads[0], reads[1], reads[2]
	if r, ok := a.eng.reads.(*agents.Engine); !ok || !r.Embedded || r.URL != "http://127.0.0.1:5051" || a.eng.exe.command == "" || len(a.eng.exe.uris) != 0 {
		t.Fatalf("the embedded cluster: %T %+v", a.eng.reads, a.eng.exe)
	}
	if a.cfg.Mesos.Principal != "elasticjob" || a.cfg.Mesos.Secret != "embedded-secret" {
		t.Fatalf("the embedded cluster's credential: %q %q", a.cfg.Mesos.Principal, a.cfg.Mesos.Secret)
	}
	if r, ok := b.eng.reads.(*agents.Engine); !ok || r.Embedded || r.URL != "http://127.0.0.1:1" || b.eng.exe.command != cfg.ExecutorPath {
		t.Fatalf("the Mesos cluster: %T %+v", b.eng.reads, b.eng.exe)
	}
	if b.cfg.Mesos.Principal != "pb" || b.cfg.Mesos.Secret != "s3cret" {
		t.Fatalf("the Mesos cluster's credential: %q %q", b.cfg.Mesos.Principal, b.cfg.Mesos.Secret)
	}
	if c.eng.kube == nil || c.cfg.Kube.Namespace != "batch" || c.eng.reportURLs[0] != "http://ej.svc:8899" {
		t.Fatalf("the Kubernetes cluster: %+v", c.cfg.Kube)
	}
	if !e.rejectFileURLs || e.kube != c.eng.kube {
		t.Fatalf("composed: reject file URLs %v, kube %v", e.rejectFileURLs, e.kube)
	}
	if caps := reads.Capabilities(); caps.ExecutorSharing || !caps.Logs {
		t.Fatalf("composed capabilities %+v: executors are not shared on Kubernetes", caps)
	}
	term, err := e.newTerm(registry.New(memory.New()), "a=fa,b=fb,c=fc", quiet)
	if err != nil {
		t.Fatal(err)
	}
	ce, ok := term.(*clusters.Engine)
	if !ok || strings.Join(ce.Names(), ",") != "a,b,c" {
		t.Fatalf("term %T", term)
	}
}

// fakeTerm records what a cluster's engine is asked to launch.
type fakeTerm struct {
	clusters.Term
	launched []engine.TaskLaunch
}

func (f *fakeTerm) Accept(_ context.Context, _ []string, launches []engine.TaskLaunch, _ time.Duration) error {
	f.launched = append(f.launched, launches...)
	return nil
}

// TestMemberTermLaunchesWithItsClustersDelivery: a launch built with the home cluster's
// executor delivery and report addresses reaches a cluster with that cluster's own, and the
// scheduler's copy is left as it was.
func TestMemberTermLaunchesWithItsClustersDelivery(t *testing.T) {
	f := &fakeTerm{}
	m := memberTerm{Term: f, exe: delivery{command: "./elasticjob-executor", uris: []engine.URI{{Value: "http://sched/artifacts/x"}}}, urls: []string{"http://ej.svc:8899"}}
	sa := &jobs.SecretAccess{URLs: []string{"http://sched:8899"}, Token: "t"}
	in := []engine.TaskLaunch{{TaskID: "t1", Executor: engine.ExecutorSpec{Command: "/usr/bin/executor"}, Task: jobs.TaskData{SecretAccess: sa}}}
	if err := m.Accept(context.Background(), []string{"o1"}, in, 0); err != nil {
		t.Fatal(err)
	}
	got := f.launched[0]
	if got.Executor.Command != "./elasticjob-executor" || len(got.Executor.URIs) != 1 || got.Task.SecretAccess.URLs[0] != "http://ej.svc:8899" || got.Task.SecretAccess.Token != "t" {
		t.Fatalf("launched %+v", got)
	}
	if in[0].Executor.Command != "/usr/bin/executor" || sa.URLs[0] != "http://sched:8899" {
		t.Fatal("the scheduler's launch was changed in place")
	}
	// Kubernetes: no executor command to give; the pods get the executor from their image.
	f.launched = nil
	k := memberTerm{Term: f, urls: []string{"http://ej.svc:8899"}}
	if err := k.Accept(context.Background(), nil, in, 0); err != nil || f.launched[0].Executor.Command != "/usr/bin/executor" {
		t.Fatalf("kubernetes member: %v %+v", err, f.launched)
	}
}

// fakeReads answers a log for the tasks it holds and ErrNotFound for others.
type fakeReads struct {
	engineReads
	logs map[string]string
	err  error
}

func (f fakeReads) TaskLog(_ context.Context, taskID, _ string, _, _ int64) (engine.LogChunk, error) {
	if f.err != nil {
		return engine.LogChunk{}, f.err
	}
	if l, ok := f.logs[taskID]; ok {
		return engine.LogChunk{Data: l, Size: int64(len(l))}, nil
	}
	return engine.LogChunk{}, engine.ErrNotFound
}

func (f fakeReads) Agents(context.Context) ([]engine.Agent, error) {
	if f.err != nil {
		return nil, f.err
	}
	return []engine.Agent{{ID: "S0", CPUs: 1}}, nil
}

// TestComposedReadsFindTheTasksCluster: a task's log is read from the cluster that ran it; a
// cluster that fails is named when no cluster has it, and its agents are left out.
func TestComposedReadsFindTheTasksCluster(t *testing.T) {
	down := errors.New("connection refused")
	c := composedReads{
		{name: "a", eng: &engines{reads: fakeReads{logs: map[string]string{"t-a": "on a"}}}},
		{name: "b", eng: &engines{reads: fakeReads{err: down}}},
		{name: "k", eng: &engines{reads: fakeReads{logs: map[string]string{"t-k": "on k"}}}},
	}
	ctx := context.Background()
	if l, err := c.TaskLog(ctx, "t-k", "stdout", 0, -1); err != nil || l.Data != "on k" {
		t.Fatalf("t-k: %q %v", l.Data, err)
	}
	if _, err := c.TaskLog(ctx, "t-x", "stdout", 0, -1); err == nil || !errors.Is(err, down) || !strings.Contains(err.Error(), "cluster b") {
		t.Fatalf("a task no cluster has, with one cluster down: %v", err)
	}
	as, err := c.Agents(ctx)
	if err != nil || len(as) != 2 || as[0].ID != "a:S0" || as[1].ID != "k:S0" {
		t.Fatalf("agents %+v %v", as, err)
	}
}

// TestClusterStatesReadTheDrainMarks: the round hears every configured cluster, in order,
// with the drain marks of the registry; when they cannot be read, the last ones hold.
func TestClusterStatesReadTheDrainMarks(t *testing.T) {
	ctx := context.Background()
	reg := registry.New(memory.New())
	cs := &clusterStates{names: []string{"k8s", "mesos"}, reg: reg, log: quiet}
	if err := reg.Clusters().Drain(ctx, registry.Drain{Cluster: "mesos", Since: time.Unix(1, 0)}); err != nil {
		t.Fatal(err)
	}
	got := cs.Clusters(ctx)
	if len(got) != 2 || got[0] != (round.ClusterState{Name: "k8s"}) || got[1] != (round.ClusterState{Name: "mesos", Drained: true}) {
		t.Fatalf("states %+v", got)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if got := cs.Clusters(cancelled); !got[1].Drained {
		t.Fatalf("with the marks unreadable: %+v", got)
	}
}

// TestKubeTailsKeepInTheRegistry: the Kubernetes engine's tails go through the wiring's
// adapter to the registry's log tails, and a tail the registry does not keep is the
// engine's ErrNoTail.
func TestKubeTailsKeepInTheRegistry(t *testing.T) {
	ctx := t.Context()
	reg := registry.New(memory.New())
	s := &kube.Tails{Store: kubeTails{reg}}
	id := "team~j@-@0@-@READY@-@n1@-@0b0f7d5e-1f6a-4c3b-9d2e-5a6b7c8d9e0f"
	if err := s.Put(ctx, id, kube.Tail{Stdout: "out"}); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Get(ctx, id); err != nil || got.Stdout != "out" {
		t.Fatalf("Get = %+v, %v; want the tail put", got, err)
	}
	if names, err := reg.Work().LogTails(ctx, "team~j"); err != nil || len(names) != 1 || names[0] != id {
		t.Fatalf("the registry keeps %q, %v; want %s", names, err, id)
	}
	if _, err := s.Get(ctx, strings.Replace(id, "@-@0@-@", "@-@1@-@", 1)); !errors.Is(err, kube.ErrNoTail) {
		t.Fatalf("a tail not kept: %v, want ErrNoTail", err)
	}
}

// TestTheLastClusterKeepsItsFrameworkID: when the clusters shrink to one (Mesos switched off
// last in a migration), the framework id kept by the composition holds every cluster's; the
// one cluster left subscribes with its own, so its master still knows its running tasks.
func TestTheLastClusterKeepsItsFrameworkID(t *testing.T) {
	ms, err := newMasters("http://127.0.0.1:5051", quiet)
	if err != nil {
		t.Fatal(err)
	}
	e, err := chooseEngine(settings(t, nil), registry.New(memory.New()), ms, noKube(t), quiet)
	if err != nil {
		t.Fatal(err)
	}
	for kept, want := range map[string]string{
		"mesos-dc1=fw-m," + config.DefaultCluster + "=fw-k": "fw-k",
		"fw-k":           "fw-k",
		"mesos-dc1=fw-m": "",
		"":               "",
	} {
		term, err := e.newTerm(registry.New(memory.New()), kept, quiet)
		if err != nil {
			t.Fatal(err)
		}
		if got := term.(mesosTerm).FrameworkID(); got != want {
			t.Errorf("kept %q: subscribes as %q, want %q", kept, got, want)
		}
	}
}
