package kube

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Task states and the reasons and sources sent with them (the Mesos names the scheduler
// knows: scheduler/status.go).
const (
	stateStaging  = "TASK_STAGING"
	stateRunning  = "TASK_RUNNING"
	stateFinished = "TASK_FINISHED"
	stateFailed   = "TASK_FAILED"
	stateKilled   = "TASK_KILLED"
	stateLost     = "TASK_LOST"
	stateError    = "TASK_ERROR"
	stateDropped  = "TASK_DROPPED"
	stateGone     = "TASK_GONE"

	sourceExecutor = "SOURCE_EXECUTOR"
	sourceAgent    = "SOURCE_AGENT" // the kubelet
	sourceMaster   = "SOURCE_MASTER"

	reasonReconciliation = "REASON_RECONCILIATION"
	// A pod the kubelet refused (OutOfcpu, …): TASK_DROPPED from SOURCE_AGENT while the task
	// is still STAGING is what the scheduler queues again at once as never started.
	reasonRejected = "REASON_INVALID_OFFERS"
	reasonOOM      = "REASON_CONTAINER_LIMITATION_MEMORY"
	reasonEvicted  = "REASON_CONTAINER_PREEMPTED"
	reasonNodeLost = "REASON_AGENT_REMOVED"
	reasonDeleted  = "REASON_TASK_KILLED_DURING_LAUNCH"
	reasonImage    = "REASON_CONTAINER_LAUNCH_FAILED"
	reasonDeadline = "REASON_MAX_COMPLETION_TIME_REACHED"
)

// phaseStatus is what a pod's status says of its task when the executor has not said it
// itself: the fallback. ok is false while the pod says nothing new (Pending, no problem).
type phaseStatus struct {
	state, message, reason, source string
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
		return phaseStatus{state: stateRunning, source: sourceAgent}, true
	case corev1.PodSucceeded:
		return phaseStatus{state: stateFinished, source: sourceAgent, message: "the pod succeeded"}, true
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
			return phaseStatus{state: stateError, source: sourceAgent, reason: reasonImage,
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
		return phaseStatus{state: stateLost, source: sourceAgent, reason: reasonEvicted,
			message: "the pod was evicted from node " + p.Spec.NodeName + ": " + oneLine(st.Message)}
	case st.Reason == "DeadlineExceeded":
		d := int64(0)
		if p.Spec.ActiveDeadlineSeconds != nil {
			d = *p.Spec.ActiveDeadlineSeconds
		}
		return phaseStatus{state: stateFailed, source: sourceAgent, reason: reasonDeadline,
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
			return phaseStatus{state: stateDropped, source: sourceAgent, reason: reasonRejected,
				message: fmt.Sprintf("container %s never started on node %s (%s: %s); back to the queue", cs.Name, p.Spec.NodeName, t.Reason, oneLine(t.Message))}
		}
		if t.Reason == "OOMKilled" {
			return phaseStatus{state: stateFailed, source: sourceAgent, reason: reasonOOM,
				message: fmt.Sprintf("memory limit of %d MB exceeded (container %s OOMKilled, exit code %d)", memMB, cs.Name, t.ExitCode)}
		}
		msg := fmt.Sprintf("container %s exited with code %d", cs.Name, t.ExitCode)
		if t.Reason != "" && t.Reason != "Error" {
			msg += " (" + t.Reason + ")"
		}
		if m := oneLine(t.Message); m != "" {
			msg += ": " + m
		}
		return phaseStatus{state: stateFailed, source: sourceAgent, message: msg}
	}
	msg := "the pod failed"
	if st.Reason != "" || st.Message != "" {
		msg += " (" + st.Reason + "): " + oneLine(st.Message)
	}
	return phaseStatus{state: stateFailed, source: sourceAgent, message: msg}
}

// oneLine trims a message to one line of at most 300 bytes.
func oneLine(s string) string {
	s = strings.TrimSpace(strings.ReplaceAll(s, "\n", " "))
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// terminal reports whether a state ends a task.
func terminal(state string) bool {
	switch state {
	case stateFinished, stateFailed, stateKilled, stateLost, stateError, stateDropped, stateGone:
		return true
	}
	return false
}

// rank orders states so that a task's updates only move forward.
func rank(state string) int {
	switch {
	case state == "":
		return 0
	case state == stateStaging:
		return 1
	case state == "TASK_STARTING":
		return 2
	case state == stateRunning:
		return 3
	case terminal(state):
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
