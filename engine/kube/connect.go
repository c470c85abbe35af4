package kube

import (
	"fmt"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Connection says how the scheduler reaches the Kubernetes API server.
type Connection struct {
	Kubeconfig string // kube_config: a kubeconfig file
	InCluster  bool   // kube_in_cluster: the pod's service account
	QPS        float32
	Burst      int
}

// Clients are the scheduler's Kubernetes clients: the typed one (pods, nodes, events) and
// the dynamic one (the definitions' objects, package crd).
type Clients struct {
	Typed   kubernetes.Interface
	Dynamic dynamic.Interface
}

// Connect makes the clients of c. Built-in types travel as protobuf (the informers decode
// every pod of the cluster) and the watches uncompressed (inflating them was the largest
// part of the informers' CPU: docs/benchmarks.md).
func Connect(c Connection) (Clients, error) {
	var rc *rest.Config
	var err error
	if c.InCluster {
		rc, err = rest.InClusterConfig()
	} else {
		rc, err = clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	}
	if err != nil {
		return Clients{}, fmt.Errorf("kubernetes: %w", err)
	}
	rc.UserAgent = "elasticjob-scheduler"
	rc.ContentType, rc.AcceptContentTypes = "application/vnd.kubernetes.protobuf", "application/vnd.kubernetes.protobuf,application/json"
	rc.DisableCompression = true
	rc.QPS, rc.Burst = c.QPS, c.Burst
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return Clients{}, fmt.Errorf("kubernetes: %w", err)
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return Clients{}, fmt.Errorf("kubernetes: %w", err)
	}
	return Clients{Typed: cs, Dynamic: dyn}, nil
}
