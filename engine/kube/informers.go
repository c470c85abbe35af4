package kube

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
)

// res is an amount of cpus and memory (MB).
type res struct{ cpus, mem float64 }

func (r res) sub(o res) res { return res{r.cpus - o.cpus, r.mem - o.mem} }
func (r res) add(o res) res { return res{r.cpus + o.cpus, r.mem + o.mem} }

// nodeInfo is a node as the engine uses it.
type nodeInfo struct {
	name        string
	allocatable res
	usable      bool   // Ready, schedulable, labels and taints allowed
	why         string // why not usable
}

// podUsage is what a pod bound to a node takes from it.
type podUsage struct {
	node string
	req  res
}

// slimPod drops what the engine never reads from the pods the informer keeps (every pod of
// the cluster): managed fields.
func slimPod(obj any) (any, error) {
	if p, ok := obj.(*corev1.Pod); ok {
		p.ManagedFields = nil
	}
	return obj, nil
}

func (e *Engine) onNode(obj any) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return
	}
	info := &nodeInfo{name: n.Name, allocatable: res{
		cpus: float64(n.Status.Allocatable.Cpu().MilliValue()) / 1000,
		mem:  float64(n.Status.Allocatable.Memory().Value()) / (1 << 20),
	}}
	info.usable, info.why = e.pods.usable(n)
	e.mu.Lock()
	if e.nodes[n.Name] == nil {
		e.names = nil
		e.nodeBack(n.Name)
	}
	e.nodes[n.Name] = info
	e.mu.Unlock()
	e.wake()
}

func (e *Engine) onNodeDeleted(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	n, ok := obj.(*corev1.Node)
	if !ok {
		return
	}
	e.mu.Lock()
	delete(e.nodes, n.Name)
	e.names = nil
	e.nodeGone(n.Name, e.clock.Now())
	e.mu.Unlock()
	e.wake()
}

// usable: Ready, not cordoned, carrying the selected labels, and no NoSchedule or
// NoExecute taint the pods do not tolerate.
func (e *podMaker) usable(n *corev1.Node) (bool, string) {
	if n.Spec.Unschedulable {
		return false, "cordoned (unschedulable)"
	}
	ready := false
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			ready = c.Status == corev1.ConditionTrue
		}
	}
	if !ready {
		return false, "not Ready"
	}
	for k, v := range e.cfg.NodeSelector {
		if n.Labels[k] != v {
			return false, "lacks label " + k + "=" + v + " (kube_node_selector)"
		}
	}
	for i := range n.Spec.Taints {
		t := &n.Spec.Taints[i]
		if t.Effect == corev1.TaintEffectPreferNoSchedule || tolerated(e.cfg.Tolerations, t) {
			continue
		}
		return false, "taint " + t.ToString() + " not tolerated (kube_tolerations)"
	}
	return true, ""
}

func tolerated(ts []corev1.Toleration, taint *corev1.Taint) bool {
	for i := range ts {
		t := &ts[i]
		if t.Effect != "" && t.Effect != taint.Effect {
			continue
		}
		if t.Key == "" && t.Operator == corev1.TolerationOpExists {
			return true
		}
		if t.Key == taint.Key && (t.Operator == corev1.TolerationOpExists || t.Value == taint.Value) {
			return true
		}
	}
	return false
}

// requestsOf is what the scheduler of Kubernetes charges a pod: the larger of its
// containers' requests and any init container's, plus its overhead.
func requestsOf(spec *corev1.PodSpec) res {
	var sum res
	for _, c := range spec.Containers {
		sum = sum.add(reqOf(c.Resources.Requests))
	}
	for _, c := range spec.InitContainers {
		r := reqOf(c.Resources.Requests)
		sum.cpus, sum.mem = max(sum.cpus, r.cpus), max(sum.mem, r.mem)
	}
	return sum.add(reqOf(spec.Overhead))
}

func reqOf(l corev1.ResourceList) res {
	var r res
	if q, ok := l[corev1.ResourceCPU]; ok {
		r.cpus = float64(q.MilliValue()) / 1000
	}
	if q, ok := l[corev1.ResourceMemory]; ok {
		r.mem = float64(q.Value()) / (1 << 20)
	}
	return r
}

func podTerminal(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

func (e *Engine) onPod(obj any) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	key := p.Namespace + "/" + p.Name
	e.mu.Lock()
	if n := podNode(p); n != "" && !podTerminal(p) { // a pod pinned to a node takes its room before it is bound
		e.usage[key] = podUsage{node: n, req: requestsOf(&p.Spec)}
	} else {
		delete(e.usage, key)
	}
	if id := e.pods.ours(p); id != "" {
		if e.late(id) && p.DeletionTimestamp == nil {
			go e.deleteLate(id, p)
		}
		e.tasks.seen(id, p, &e.finished)
	}
	e.mu.Unlock()
	e.wake()
}

func (e *Engine) onPodDeleted(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	e.mu.Lock()
	delete(e.usage, p.Namespace+"/"+p.Name)
	if id := e.pods.ours(p); id != "" {
		e.tasks.gone(id, p, &e.finished, &e.ends)
	}
	e.mu.Unlock()
	e.wake()
}

// ours returns the task id of a pod of this scheduler, "" for any other pod.
func (e *podMaker) ours(p *corev1.Pod) string {
	if p.Labels[LabelManagedBy] != ManagedBy || p.Labels[LabelFramework] != labelValue(e.frameworkID) {
		return ""
	}
	return p.Annotations[AnnotationTask]
}
