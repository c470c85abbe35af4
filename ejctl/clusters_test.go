package ejctl

import (
	"context"
	"testing"

	"github.com/ejcloud/elasticjob/api"
)

// The clusters jobs run on: listed, drained (the mark shown, --wait returns at once on an
// empty cluster), undrained; a cluster not configured is refused by name.
func TestClusterDrainCommands(t *testing.T) {
	s := newTestServer(t, api.Credentials{}, func(o *api.Options) {
		o.Operate.Clusters = []api.ClusterConfig{{Name: "mesos-dc1", Engine: "mesos"}, {Name: "k8s-prod", Engine: "kubernetes"}}
		o.Operate.ClusterHealth = func() []api.ClusterHealth {
			return []api.ClusterHealth{{Name: "mesos-dc1", Connected: true}, {Name: "k8s-prod", LastError: "dial tcp: connection refused"}}
		}
	})
	r := s.cli(t)
	out, _ := r.must(0, "cluster", "ls")
	has(t, "ls", out, "NAME", "ENGINE", "CONNECTED", "DRAINED", "RUNNING", "mesos-dc1", "k8s-prod", "kubernetes", "yes", "no (dial tcp: connection refused)")
	out, _ = r.must(0, "cluster", "drain", "mesos-dc1")
	has(t, "drain", out, "cluster mesos-dc1 drained: empty")
	if d, err := s.reg.Clusters().Drained(context.Background()); err != nil || len(d) != 1 {
		t.Fatalf("drain marks %v %v", d, err)
	}
	out, _ = r.must(0, "cluster", "ls")
	has(t, "ls after the drain", out, "since ")
	out, _ = r.must(0, "cluster", "drain", "mesos-dc1", "--wait")
	has(t, "drain --wait", out, "cluster mesos-dc1 drained: empty")
	out, _ = r.must(0, "cluster", "undrain", "mesos-dc1")
	has(t, "undrain", out, "cluster mesos-dc1 takes new work")
	if d, _ := s.reg.Clusters().Drained(context.Background()); len(d) != 0 {
		t.Fatalf("still drained: %v", d)
	}
	_, errOut := r.must(1, "cluster", "drain", "nowhere")
	has(t, "drain of an unknown cluster", errOut, `cluster "nowhere" is not configured`)
}

// A namespace's guarantee and limit per cluster: set one flag at a time (the others kept),
// shown by set and get, cleared with CLUSTER=; a malformed value and an unknown cluster
// are refused by name.
func TestNamespacePerClusterFlags(t *testing.T) {
	s := newTestServer(t, api.Credentials{}, func(o *api.Options) {
		o.Operate.Clusters = []api.ClusterConfig{{Name: "mesos-dc1", Engine: "mesos"}, {Name: "k8s-prod", Engine: "kubernetes"}}
	})
	r := s.cli(t)
	r.must(0, "ns", "create", "ops", "--limit-cpu", "8", "--limit-mem", "8192")
	out, _ := r.must(0, "ns", "set", "ops", "--cluster-guarantee", "k8s-prod=2,1024", "--cluster-limit", "k8s-prod=4,4096")
	has(t, "set", out, "per cluster k8s-prod: guarantee 2 CPU / 1024 MB, limit 4 CPU / 4096 MB", "limit 8 CPU / 8192 MB")
	out, _ = r.must(0, "ns", "set", "ops", "--cluster-limit", "mesos-dc1=1,512")
	has(t, "set keeps the others", out, "k8s-prod: guarantee 2 CPU / 1024 MB, limit 4 CPU / 4096 MB; mesos-dc1: guarantee -, limit 1 CPU / 512 MB")
	out, _ = r.must(0, "ns", "get", "ops")
	has(t, "get", out, "per cluster: k8s-prod: guarantee 2 CPU / 1024 MB")
	out, _ = r.must(0, "ns", "set", "ops", "--cluster-guarantee", "k8s-prod=", "--cluster-limit", "k8s-prod=")
	has(t, "clear", out, "per cluster mesos-dc1: guarantee -, limit 1 CPU / 512 MB, caps")
	_, errOut := r.must(1, "ns", "set", "ops", "--cluster-limit", "k8s-prod=two")
	has(t, "malformed", errOut, `--cluster-limit "k8s-prod=two": want CLUSTER=CPUS,MEMORY_MB`)
	_, errOut = r.must(1, "ns", "set", "ops", "--cluster-limit", "k8s=1,1")
	has(t, "unknown cluster", errOut, `perCluster names cluster "k8s", which is not configured`)
}
