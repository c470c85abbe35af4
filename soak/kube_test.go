package soak

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
)

// TestKubeShapeFaults: the kube shape offers the etcd shape's scheduler
// and peer faults (the cut from mesos-local becoming the cut from the API
// server) and the cluster's own, none of the simulated agents'.
func TestKubeShapeFaults(t *testing.T) {
	s, err := NewShape(Config{Shape: "kube", Dir: t.TempDir(), K8sHome: "/nowhere"}, "runs.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range s.Faults() {
		names = append(names, f.Name)
		if f.MinHold <= 0 || f.MaxHold < f.MinHold || f.Inject == nil {
			t.Errorf("%s: holds %s-%s, inject %v", f.Name, f.MinHold, f.MaxHold, f.Inject != nil)
		}
	}
	want := []string{"apiserver-stopped", "kill-leader", "kill-standby", "kubelet-restarted", "leader-cut-from-apiserver",
		"leader-cut-from-peers", "node-lost", "pause-leader", "pod-deleted"}
	slices.Sort(names)
	if !slices.Equal(names, want) {
		t.Errorf("faults %v, want %v", names, want)
	}
	if _, ok := s.(realRuns); !ok {
		t.Error("the kube shape does not serve its runs' app")
	}
}

// TestKubeShapeRefusesWhatCannotRun: a missing build or a dynamically
// linked executor is said plainly before anything starts.
func TestKubeShapeRefusesWhatCannotRun(t *testing.T) {
	if err := static("/bin/sh"); err == nil || !strings.Contains(err.Error(), "CGO_ENABLED=0") {
		t.Errorf("a dynamic binary: %v", err)
	}
	k := &Kube{Etcd: Etcd{ZK: ZK{Bin: t.TempDir(), Dir: t.TempDir()}}, Home: t.TempDir()}
	want := "start.sh"
	if os.Geteuid() != 0 {
		want = "as root"
	}
	if err := k.Start(context.Background()); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("a build without scripts: %v, want %q", err, want)
	}
}
