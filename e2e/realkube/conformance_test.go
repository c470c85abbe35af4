//go:build e2e

package realkube

import (
	"fmt"
	"testing"

	"github.com/ejcloud/elasticjob/e2e/conformance"
	"github.com/ejcloud/elasticjob/e2e/harness"
	"github.com/ejcloud/elasticjob/engine/kube"
)

// TestConformance runs the table of behaviours every engine passes (e2e/conformance) on the
// real one-node Kubernetes: each case with its own namespace and scheduler, two at a time
// (their pods share the node's 2 CPUs: what the others hold, at most 0.4 CPUs, leaves the
// why-waiting gang short while its blocker runs and room once it is killed).
func TestConformance(t *testing.T) {
	requireK8s(t)
	conformance.Run(t, realKube{})
}

// realKube is the Kubernetes engine; its shards run in pods on the host network and report
// to the suite's recorder with busybox wget.
type realKube struct{}

func (realKube) Name() string { return "kubernetes-1.37" }

func (realKube) Caps() conformance.Caps {
	return conformance.Caps{Report: conformance.ReportHTTP, CPUs: 2, Wait: waitLong, Parallel: true}
}

func (realKube) Cluster(t *testing.T) conformance.Cluster { return &kubeConformance{ns: namespace(t)} }

type kubeConformance struct {
	ns     string
	starts int
	ports  map[string]int // data directory → the port of the scheduler on it
}

// Start starts a scheduler on the case's namespace with its data on dataDir (the last
// --data-dir wins) and waits for its informers to sync. A restart on the same dataDir keeps
// the port, as a restarted scheduler keeps its address: the running pods' executors report
// to the address they were given (one that changed, they give up on after 2 minutes and the
// scheduler learns the ends from the pods' phases).
func (c *kubeConformance) Start(t *testing.T, dataDir string) *conformance.Scheduler {
	t.Helper()
	c.starts++
	if c.ports == nil {
		c.ports = map[string]int{}
	}
	if c.ports[dataDir] == 0 {
		c.ports[dataDir] = harness.FreePort(t)
	}
	s := startScheduler(t, fmt.Sprintf("scheduler%d", c.starts), schedOpts{ns: c.ns, port: c.ports[dataDir],
		extra: []string{"--data-dir", dataDir}})
	eventually(t, waitLong, s.subscribed, "%s to subscribe", s.Name)
	return &conformance.Scheduler{Proc: s.Proc, Base: s.base, Client: httpClient}
}

// Lose: the task's pod is deleted, as the pod garbage collector deletes the pods of a node
// that is gone (the one node of this cluster cannot be lost itself). The pod is checked
// first: bound, requests = limits, labels, a deadline from the job's timeout (checkPodSpec).
func (c *kubeConformance) Lose(t *testing.T, _ *conformance.Scheduler, taskID string) {
	t.Helper()
	for _, p := range pods(t, c.ns, "") {
		if p.Annotations[kube.AnnotationTask] == taskID {
			checkPodSpec(t, &p, "conformance")
			deletePod(t, c.ns, p.Name)
			return
		}
	}
	t.Fatalf("no pod runs %s", taskID)
}
