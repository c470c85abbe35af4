package kube

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	tstate "github.com/ejcloud/elasticjob/task"
)

// phaseStatus is what a pod's status says of its task when the executor has not said it
// itself: the fallback. ok is false while the pod says nothing new (Pending, no problem).
type phaseStatus struct {
	state   tstate.State
	reason  tstate.Reason
	source  tstate.Source
	message string
}

// rejections are the kubelet's admission failures of a pod that did not fit the node any
// more (someone else's pod took the room meanwhile): placement misses, not job failures.
var rejections = map[string]bool{"OutOfcpu": true, "OutOfmemory": true, "OutOfpods": true,
	"OutOfephemeral-storage": true, "UnexpectedAdmissionError": true}

// imageProblems are a container's waiting reasons that mean its image cannot be had.
var imageProblems = map[string]bool{"ErrImageNeverPull": true, "ErrImagePull": true, "ImagePullBackOff": true,
	"InvalidImageName": true, "ImageInspectError": true, "RegistryUnavailable": true}

// startProblems are a container's waiting reasons that mean it cannot start at all.
var startProblems = map[string]bool{"CreateContainerConfigError": true, "CreateContainerError": true,
	"RunContainerError": true}

// statusOfPod maps a pod's phase and container states to a task state (Running → RUNNING,
// Succeeded → FINISHED, Failed → FAILED with the cause, a kubelet rejection → DROPPED,
// eviction → LOST); ok false: nothing to report yet.
func statusOfPod(p *corev1.Pod, memMB int64) (phaseStatus, bool) {
	switch p.Status.Phase {
	case corev1.PodRunning:
		return phaseStatus{state: tstate.Running, source: tstate.SourceAgent}, true
	case corev1.PodSucceeded:
		return phaseStatus{state: tstate.Finished, source: tstate.SourceAgent, message: "the pod succeeded"}, true
	case corev1.PodFailed:
		return failedPod(p, memMB), true
	}
	if ps, ok := unschedulable(p); ok {
		return ps, true
	}
	for _, cs := range append(append([]corev1.ContainerStatus(nil), p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		w := cs.State.Waiting
		switch {
		case w == nil:
		case imageProblems[w.Reason]:
			return imageStatus(cs.Image, p.Spec.NodeName, w.Reason, oneLine(w.Message)), true
		case startProblems[w.Reason]:
			return phaseStatus{state: tstate.Error, source: tstate.SourceAgent, reason: tstate.ReasonContainerLaunchFailed,
				message: fmt.Sprintf("container %s cannot start (%s): %s", cs.Name, w.Reason, oneLine(w.Message))}, true
		}
	}
	return phaseStatus{}, false
}

func failedPod(p *corev1.Pod, memMB int64) phaseStatus {
	st := p.Status
	switch {
	case rejections[st.Reason]:
		return rejected(p.Spec.NodeName, st.Reason, oneLine(st.Message))
	case st.Reason == "Evicted":
		return phaseStatus{state: tstate.Lost, source: tstate.SourceAgent, reason: tstate.ReasonPreempted,
			message: "the pod was evicted from node " + p.Spec.NodeName + ": " + oneLine(st.Message)}
	case st.Reason == "DeadlineExceeded":
		d := int64(0)
		if p.Spec.ActiveDeadlineSeconds != nil {
			d = *p.Spec.ActiveDeadlineSeconds
		}
		return phaseStatus{state: tstate.Failed, source: tstate.SourceAgent, reason: tstate.ReasonMaxCompletionTime,
			message: fmt.Sprintf("timed out: the pod ran past its activeDeadlineSeconds (%d s)", d)}
	}
	for _, cs := range append(append([]corev1.ContainerStatus(nil), p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		t := cs.State.Terminated
		if t == nil || t.ExitCode == 0 {
			continue
		}
		if t.StartedAt.IsZero() && p.Status.StartTime != nil && t.Reason == "ContainerStatusUnknown" {
			// The kubelet lost the container before it ran (a pod ended while its container
			// was being created): the task never started, so it goes back to the queue.
			return phaseStatus{state: tstate.Dropped, source: tstate.SourceAgent, reason: tstate.ReasonInvalidOffers,
				message: fmt.Sprintf("container %s never started on node %s (%s: %s); back to the queue", cs.Name, p.Spec.NodeName, t.Reason, oneLine(t.Message))}
		}
		if t.Reason == "OOMKilled" {
			return phaseStatus{state: tstate.Failed, source: tstate.SourceAgent, reason: tstate.ReasonMemoryLimit,
				message: fmt.Sprintf("memory limit of %d MB exceeded (container %s OOMKilled, exit code %d)", memMB, cs.Name, t.ExitCode)}
		}
		msg := fmt.Sprintf("container %s exited with code %d", cs.Name, t.ExitCode)
		if t.Reason != "" && t.Reason != "Error" {
			msg += " (" + t.Reason + ")"
		}
		if m := oneLine(t.Message); m != "" {
			msg += ": " + m
		}
		return phaseStatus{state: tstate.Failed, source: tstate.SourceAgent, message: msg}
	}
	msg := "the pod failed"
	if st.Reason != "" || st.Message != "" {
		msg += " (" + st.Reason + "): " + oneLine(st.Message)
	}
	return phaseStatus{state: tstate.Failed, source: tstate.SourceAgent, message: msg}
}

// oneLine trims a message to one line of at most 300 bytes.
func oneLine(s string) string {
	s = strings.TrimSpace(strings.ReplaceAll(s, "\n", " "))
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// rank orders states so that a task's updates only move forward.
func rank(state tstate.State) int {
	switch {
	case state == "":
		return 0
	case state == tstate.Staging:
		return 1
	case state == tstate.Starting:
		return 2
	case state == tstate.Running:
		return 3
	case state.Terminal():
		return 4
	}
	return 0
}

// podMemMB is the memory limit of a pod's task container in MB.
func podMemMB(p *corev1.Pod) int64 {
	for _, c := range p.Spec.Containers {
		if c.Name == containerName {
			if q, ok := c.Resources.Limits[corev1.ResourceMemory]; ok {
				return q.Value() >> 20
			}
		}
	}
	return 0
}
