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

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/ejcloud/elasticjob/api"
	"github.com/ejcloud/elasticjob/config"
	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/engine/kube"
	"github.com/ejcloud/elasticjob/engine/mesos/agents"
	"github.com/ejcloud/elasticjob/registry"
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

// TestSeveralClustersRefusedUntilWired: a list of several clusters stops the start with
// the reason, rather than running on one of them.
func TestSeveralClustersRefusedUntilWired(t *testing.T) {
	p := filepath.Join(t.TempDir(), "clusters.yaml")
	if err := os.WriteFile(p, []byte("clusters:\n  - {name: a, engine: embedded}\n  - {name: b, engine: mesos, mesos_url: \"http://127.0.0.1:1\"}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"clusters_file": p, "data_dir": t.TempDir()}
	err := run(context.Background(), nil, func(k string) (string, bool) { v, ok := env[k]; return v, ok }, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "lists 2 clusters") {
		t.Errorf("run: %v", err)
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
