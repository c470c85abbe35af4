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
