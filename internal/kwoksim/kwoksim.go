// Package kwoksim is what the project's kwok simulations share (the
// kube-scale benchmark's nodes, the clusters-real soak's second control
// plane): the kwok release, built from the Go module proxy, and the Stages
// that play a node and a pod's start and deletion as a kubelet would. Each
// user adds its own options and how its pods end.
package kwoksim

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Module is the kwok release built when no kwok binary is given.
const Module = "sigs.k8s.io/kwok/cmd/kwok@v0.8.0"

// NodeAnnotation marks the nodes kwok plays.
const NodeAnnotation = "kwok.x-k8s.io/node"

// Build builds kwok into dir (never into the repository) and returns the
// binary's path.
func Build(ctx context.Context, dir string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "install", Module)
	cmd.Env = append(os.Environ(), "GOBIN="+dir, "GOFLAGS=-buildvcs=false")
	if out, err := cmd.CombinedOutput(); err != nil {
		if len(out) > 2000 {
			out = out[len(out)-2000:]
		}
		return "", fmt.Errorf("go install %s: %w: %s", Module, err, out)
	}
	return filepath.Join(dir, "kwok"), nil
}

// Stages joins a configuration's documents (the options, then Stages)
// into one file.
func Stages(docs ...string) string { return strings.Join(docs, "---\n") }

// NodeInitialize makes a new node Ready with the allocatable it was
// created with.
const NodeInitialize = `apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata: {name: node-initialize}
spec:
  resourceRef: {apiGroup: v1, kind: Node}
  selector:
    matchExpressions:
    - key: '.status.conditions.[] | select( .type == "Ready" ) | .status'
      operator: NotIn
      values: ['True']
  next:
    statusTemplate: |
      {{ $now := Now }}
      conditions:
      {{ range NodeConditions }}
      - lastHeartbeatTime: {{ $now | Quote }}
        lastTransitionTime: {{ $now | Quote }}
        message: {{ .message | Quote }}
        reason: {{ .reason | Quote }}
        status: {{ .status | Quote }}
        type: {{ .type | Quote }}
      {{ end }}
      addresses:
      - {address: 127.0.0.1, type: InternalIP}
      allocatable:
      {{ YAML .status.allocatable 1 }}
      capacity:
      {{ YAML .status.capacity 1 }}
      nodeInfo: {architecture: amd64, operatingSystem: linux, kubeletVersion: kwok, containerRuntimeVersion: kwok}
      phase: Running
`

// PodRunning runs a pod bound to a kwok node at once (no image, no
// sandbox).
const PodRunning = `apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata: {name: pod-running}
spec:
  resourceRef: {apiGroup: v1, kind: Pod}
  selector:
    matchExpressions:
    - {key: '.metadata.deletionTimestamp', operator: DoesNotExist}
    - {key: '.status.phase', operator: In, values: ['', 'Pending']}
  next:
    statusTemplate: |
      {{ $now := Now }}
      conditions:
      - {lastTransitionTime: {{ $now | Quote }}, status: "True", type: Initialized}
      - {lastTransitionTime: {{ $now | Quote }}, status: "True", type: Ready}
      - {lastTransitionTime: {{ $now | Quote }}, status: "True", type: ContainersReady}
      containerStatuses:
      {{ range .spec.containers }}
      - image: {{ .image | Quote }}
        name: {{ .name | Quote }}
        ready: true
        restartCount: 0
        started: true
        state: {running: {startedAt: {{ $now | Quote }}}}
      {{ end }}
      hostIP: 127.0.0.1
      phase: Running
      startTime: {{ $now | Quote }}
`

// PodDelete removes a deleted pod at once (the kubelet's confirmation).
const PodDelete = `apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata: {name: pod-delete}
spec:
  resourceRef: {apiGroup: v1, kind: Pod}
  selector:
    matchExpressions:
    - {key: '.metadata.deletionTimestamp', operator: Exists}
  next:
    delete: true
`
