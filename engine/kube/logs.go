package kube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"

	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/jobs"
)

// maxLiveLog bounds what is read of a running pod's log for one request.
const maxLiveLog = 8 << 20

// taskLog reads a task's output: once its pod has ended or is going, the tail kept when it
// finished (the executor's report: stdout and stderr apart); while the pod runs, or when it
// ended and no tail is kept yet, the container's log (pods/log: stdout and stderr merged,
// served as stdout; stderr is then empty); once the pod is gone, the tail (ErrNoTail when
// none was kept). offset < 0 counts from the end.
//
// The tail comes first for an ended pod because the pod is deleted right after it is kept:
// between the pod's read and its log's, the kubelet may already have removed the container,
// and pods/log then answers with the kubelet's error text instead of the log.
func taskLog(ctx context.Context, cs kubernetes.Interface, ns string, tails *Tails, taskID, stream string, offset, length int64) (engine.LogChunk, error) {
	tid, err := jobs.ParseTaskID(taskID)
	if err != nil {
		return engine.LogChunk{}, err
	}
	name := podName(tid.JobName, tid.Item, taskID)
	fromTail := func() (engine.LogChunk, error) {
		t, err := tails.Get(ctx, taskID)
		if err != nil {
			return engine.LogChunk{}, err
		}
		if stream == "stderr" {
			return slice(t.Stderr, offset, length), nil
		}
		return slice(t.Stdout, offset, length), nil
	}
	p, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err) || err == nil && p.Annotations[AnnotationTask] != taskID:
		ch, err := fromTail()
		if err != nil {
			return engine.LogChunk{}, fmt.Errorf("%w (task %s; its pod %s is gone)", err, taskID, name)
		}
		return ch, nil
	case err != nil:
		return engine.LogChunk{}, fmt.Errorf("kube: pod %s: %w", name, err)
	}
	if ended(p) {
		ch, err := fromTail()
		if !errors.Is(err, ErrNoTail) {
			return ch, err
		}
	}
	if stream == "stderr" { // merged into the container's log: nothing apart until a tail is kept
		return slice("", offset, length), nil
	}
	data, err := readLog(ctx, cs, ns, name)
	if apierrors.IsNotFound(err) { // the pod went between the two reads; its tail is kept
		ch, terr := fromTail()
		if terr != nil {
			return engine.LogChunk{}, fmt.Errorf("%w (task %s; its pod %s is gone)", terr, taskID, name)
		}
		return ch, nil
	}
	if err != nil {
		return engine.LogChunk{}, fmt.Errorf("kube: log of pod %s: %w", name, err)
	}
	return slice(data, offset, length), nil
}

// ended: the pod's containers have finished, or the pod is being deleted.
func ended(p *corev1.Pod) bool {
	return p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

func readLog(ctx context.Context, cs kubernetes.Interface, ns, pod string) (string, error) {
	limit := int64(maxLiveLog)
	rc, err := cs.CoreV1().Pods(ns).GetLogs(pod, &corev1.PodLogOptions{Container: containerName, LimitBytes: &limit}).Stream(ctx)
	if err != nil {
		var st apierrors.APIStatus
		if errors.As(err, &st) && st.Status().Code == 400 { // ContainerCreating: no log yet
			return "", nil
		}
		return "", err
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, limit))
	return string(b), err
}

// slice is data[offset:offset+length] as a file read would give it (offset < 0: from the end).
func slice(data string, offset, length int64) engine.LogChunk {
	size := int64(len(data))
	if offset < 0 {
		offset = max(size+offset, 0)
	}
	offset = min(offset, size)
	end := size
	if length >= 0 {
		end = min(offset+length, size)
	}
	return engine.LogChunk{Offset: offset, Size: size, Data: data[offset:end]}
}

// appPods lists the task pods of an app (of any scheduler's framework in the namespace).
func appPods(ctx context.Context, cs kubernetes.Interface, ns, appName string) ([]corev1.Pod, error) {
	sel := labels.Set{LabelManagedBy: ManagedBy, LabelApp: labelValue(appName)}.String()
	l, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return nil, fmt.Errorf("kube: list the pods of app %s: %w", appName, err)
	}
	var out []corev1.Pod
	for _, p := range l.Items {
		if p.Annotations[AnnotationApp] == appName {
			out = append(out, p)
		}
	}
	return out, nil
}

// snapshot reads the nodes and pods from the API once and describes them as the engine
// would (for a scheduler instance that is not leading).
func snapshot(ctx context.Context, cs kubernetes.Interface, ns, frameworkID string) ([]NodeView, error) {
	e := newEngine(Config{Namespace: ns, Clock: clock.Real{}, Log: slog.New(slog.DiscardHandler)}, frameworkID, "")
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("kube: list nodes: %w", err)
	}
	for i := range nodes.Items {
		e.onNode(&nodes.Items[i])
	}
	pods, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("kube: list pods: %w", err)
	}
	for i := range pods.Items {
		e.onPod(&pods.Items[i])
	}
	if evs, err := listEvents(ctx, cs, ns); err == nil { // without them, the nodes still
		for i := range evs {
			e.onEvent(&evs[i])
		}
	}
	return e.Nodes(), nil
}
