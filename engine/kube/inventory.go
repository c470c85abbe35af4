package kube

import (
	"context"
	"math"
	"sort"

	"github.com/ejcloud/elasticjob/engine"
	tstate "github.com/ejcloud/elasticjob/task"
)

// Agents lists the usable nodes with their allocatable resources (what an execution that can
// never fit is compared against).
func (e *Engine) Agents(context.Context) ([]engine.Agent, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.subscribed {
		return nil, ErrNotRunning
	}
	var out []engine.Agent
	for _, n := range e.nodes {
		if n.usable {
			out = append(out, engine.Agent{ID: n.name, Hostname: n.name, CPUs: n.allocatable.cpus, MemMB: n.allocatable.mem})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// NodeView is a node on the console's cluster page: its resources, whether tasks may run on
// it (and why not), and the pods of this scheduler's tasks on it.
type NodeView struct {
	Name            string    `json:"name"`
	Usable          bool      `json:"usable"`
	Why             string    `json:"why,omitempty"`
	AllocatableCPUs float64   `json:"allocatableCpus"`
	AllocatableMem  float64   `json:"allocatableMemMB"`
	FreeCPUs        float64   `json:"freeCpus"`
	FreeMem         float64   `json:"freeMemMB"`
	Pods            []PodView `json:"pods"`
}

// PodView is one task pod.
type PodView struct {
	Name   string `json:"name"`
	TaskID string `json:"taskId"`
	Phase  string `json:"phase"`
	State  string `json:"state"` // what the scheduler was told
	// Waiting is why the pod waits (the last Warning event about it) while it has not started.
	Waiting string `json:"waiting,omitempty"`
	// CPUs and MemMB are what the pod requests (what it holds of its node): what the cluster
	// page shows of a pod of a namespace its reader has no role in, besides its phase.
	CPUs  float64 `json:"cpus,omitempty"`
	MemMB float64 `json:"memMB,omitempty"`
}

// Nodes describes every node and the task pods on it.
func (e *Engine) Nodes() []NodeView {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]NodeView, 0, len(e.nodes))
	freeOf := e.frees()
	byNode := map[string][]*task{}
	for _, t := range e.tasks {
		byNode[t.node] = append(byNode[t.node], t)
	}
	for _, n := range e.nodes {
		free := freeOf(n)
		v := NodeView{Name: n.name, Usable: n.usable, Why: n.why, AllocatableCPUs: n.allocatable.cpus, AllocatableMem: n.allocatable.mem,
			FreeCPUs: free.cpus, FreeMem: free.mem, Pods: []PodView{}}
		for _, t := range byNode[n.name] {
			pv := PodView{Name: t.pod, TaskID: t.id, State: string(t.sent), Phase: "Creating"}
			r := t.req
			if u, ok := e.usage[t.ns+"/"+t.pod]; ok && !t.created {
				r = u.req
			}
			pv.CPUs, pv.MemMB = math.Round(r.cpus*1000)/1000, math.Round(r.mem)
			if t.obj != nil {
				pv.Phase = string(t.obj.Status.Phase)
			}
			if rank(t.sent) < rank(tstate.Running) && t.running == nil {
				pv.Waiting = t.waiting
			}
			v.Pods = append(v.Pods, pv)
		}
		sort.Slice(v.Pods, func(i, j int) bool { return v.Pods[i].Name < v.Pods[j].Name })
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
