package kube

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/jobs"
	tstate "github.com/ejcloud/elasticjob/task"
)

// ErrUnknownOffer is returned by Accept for an offer that is neither outstanding nor kept
// as superseded (offers.go): declined, used, voided by a refused ACCEPT, or never made by
// this engine.
var ErrUnknownOffer = errors.New("kube: unknown offer")

// createWorkers bounds the pod creations of one Accept in flight at once.
const createWorkers = 8

// Accept creates the launches' pods bound to the offers' node: its outstanding offer, or
// one superseded since the round saw it, while the node is there, can take pods and has the
// room (prepare). Each pod asks for its shard's
// resources plus its share of its app executor's: the launches of one app in one Accept
// split the executor's cpus and memory equally (the scheduler charges an app's executor
// once per node and launch round; on Kubernetes every pod runs an executor of its own, which
// the engine declares in its Capabilities, so the scheduler charges it again next round).
func (e *Engine) Accept(ctx context.Context, offerIDs []string, launches []engine.TaskLaunch, refuse time.Duration) error {
	pods, errs, err := e.prepare(offerIDs, launches, refuse)
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, createWorkers)
	for i, p := range pods {
		if p == nil || errs[i] != nil { // adopted, or its podTemplate could not be applied: not created
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			_, err := e.cfg.Client.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				err = nil
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	return e.created(launches, errs)
}

// prepare checks the offers, builds the pods and records them as created (their resources
// taken from the node until the informer shows them). The checks are made under the lock the
// informers' handlers take, so an offer of a node the informer has shown deleted, unable to
// take pods, or with too little room left is refused, never used: a pod bound to a node
// that is gone would wait for it for good.
func (e *Engine) prepare(offerIDs []string, launches []engine.TaskLaunch, refuse time.Duration) ([]*corev1.Pod, []error, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.h == nil {
		return nil, nil, ErrNotRunning
	}
	c, err := e.claim(offerIDs)
	if err != nil {
		e.void(offerIDs)
		return nil, nil, err
	}
	node := c.node
	count := map[string]int{}
	for _, l := range launches {
		count[l.Executor.ID]++
	}
	pods := make([]*corev1.Pod, len(launches))
	errs := make([]error, len(launches))
	kns := make([]string, len(launches))
	var need res
	for i, l := range launches {
		if err := l.Task.Check(); err != nil {
			e.void(offerIDs)
			return nil, nil, fmt.Errorf("kube: task %s: %w", l.TaskID, err)
		}
		if e.adoptable(l.TaskID) {
			continue
		}
		n := float64(count[l.Executor.ID])
		var nsErr error
		kns[i], nsErr = e.ns.launchNamespace(l.TaskID)
		p, err := e.pods.build(podSpec{launch: l, node: node, shareCPUs: l.Executor.CPUs / n, shareMem: l.Executor.MemMB / n,
			token: e.cfg.TaskToken(l.TaskID), ns: kns[i], dns: e.pods.dnsPolicy(node)})
		pods[i], errs[i] = p, cmp.Or(nsErr, err)
		if errs[i] == nil {
			need = need.add(requestsOf(&p.Spec))
		} else {
			kns[i] = ""
		}
	}
	if err := e.fits(c, need); err != nil {
		e.void(offerIDs)
		return nil, nil, err
	}
	for i, l := range launches {
		p := pods[i]
		if p == nil {
			e.adopt(l.TaskID)
			continue
		}
		if kns[i] != "" {
			e.events.watch(kns[i])
		}
		e.tasks[l.TaskID] = &task{id: l.TaskID, pod: p.Name, node: node, execID: l.Executor.ID, memMB: podMemMB(p), ns: p.Namespace, share: parseShare(p.Annotations[AnnotationShare]),
			created: true, req: requestsOf(&p.Spec), images: imagesOf(&p.Spec)}
	}
	e.take(c, refuse) // after the pods count against the node
	return pods, errs, nil
}

// Capabilities is the Kubernetes engine's (Capabilities), with a launch round's pods here
// bounded at the client's requests per second when it is one cluster of several: each pod
// costs its create in its round and a delete once it ends, so at the client's rate those
// pods are created in about 2 s beside the deletes of as many ended ones; a round given
// more would hold every cluster's next one while its creates wait on the client's rate.
func (e *Engine) Capabilities() engine.Capabilities {
	c := Capabilities()
	c.RoundTasks = max(e.cfg.APIQPS, 0)
	return c
}

// Decline gives offers back until refuse has passed or their nodes' free resources change.
func (e *Engine) Decline(_ context.Context, offerIDs []string, refuse time.Duration) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	freeOf := e.frees()
	for _, id := range offerIDs {
		if name, o, ok := e.offers.lookup(id); ok {
			o.refuse(e.nodes[name], refuse, e.clock.Now(), freeOf)
		} else if name, ok := e.offers.nodeOf(id); ok && e.offers.byNode[name] != nil {
			e.offers.byNode[name].forget(id) // a superseded offer declined: not to be accepted after
		}
	}
	e.wake()
	return nil
}

// Suppress stops new offers until Revive.
func (e *Engine) Suppress(context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.offers.suppressed = true
	return nil
}

// Revive offers every node with room again, refused or not.
func (e *Engine) Revive(context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.offers.revive()
	e.wake()
	return nil
}

// Kill deletes the task's pod with the kill grace period (its executor gets SIGTERM, kills
// the job and reports it KILLED). A task without a pod is answered KILLED at once.
func (e *Engine) Kill(ctx context.Context, taskID, _ string) error {
	e.mu.Lock()
	t := e.tasks[taskID]
	name := ""
	if t != nil {
		t.killing, name = true, t.pod
	} else if tid, err := jobs.ParseTaskID(taskID); err == nil {
		name = podName(tid.JobName, tid.Item, taskID)
	}
	ns := e.ns.taskNamespace(taskID, t.seenNS())
	e.mu.Unlock()
	grace := int64(e.pods.killGrace().Seconds()) + 1
	err := e.cfg.Client.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &grace})
	if apierrors.IsNotFound(err) {
		e.mu.Lock()
		switch {
		case t == nil && !e.finished.Has(taskID):
			st := engine.Status{TaskID: taskID, State: tstate.Killed, Source: tstate.SourceMaster, Message: "killed: it had no pod", Timestamp: e.clock.Now()}
			e.post(func(ctx context.Context, h engine.Handler) { h.UpdateAsync(ctx, st, func(bool) {}) })
		case t != nil && t.obj == nil && !t.deleted && (t.created || t.unsure) && e.tasks[taskID] == t:
			// Launched by this engine, never shown by the informer, and not there: no
			// event will ever end it (unseen.go); a pod of it that shows up yet is deleted.
			t.absent, t.deleted, t.created, t.dirty = true, true, false, true
		}
		e.mu.Unlock()
		e.wake()
		return nil
	}
	if err != nil {
		return fmt.Errorf("kube: kill %s: delete pod %s: %w", taskID, name, err)
	}
	return nil
}

// Shutdown kills the tasks of one app executor (an app's pods on one node).
func (e *Engine) Shutdown(ctx context.Context, executorID, agentID string) error {
	e.mu.Lock()
	var ids []string
	for id, t := range e.tasks {
		if t.execID == executorID && (agentID == "" || t.node == agentID) && !t.committed {
			ids = append(ids, id)
		}
	}
	e.mu.Unlock()
	var errs []error
	for _, id := range ids {
		errs = append(errs, e.Kill(ctx, id, agentID))
	}
	return errors.Join(errs...)
}

// Reconcile answers from the informer's view: each named task's state (a task without a
// pod is LOST), or, with none named, the state of every pod of this scheduler (the scheduler
// kills those of tasks it does not know).
func (e *Engine) Reconcile(_ context.Context, refs []engine.TaskRef) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.h == nil {
		return ErrNotRunning
	}
	var out []engine.Status
	now := e.clock.Now()
	if len(refs) == 0 {
		for id, t := range e.tasks {
			if !t.committed {
				out = append(out, answer(id, t, now, e.ns))
			}
		}
	}
	for _, r := range refs {
		out = append(out, answer(r.TaskID, e.tasks[r.TaskID], now, e.ns))
	}
	for _, st := range out {
		e.post(func(ctx context.Context, h engine.Handler) { h.UpdateAsync(ctx, st, func(bool) {}) })
	}
	e.wake()
	return nil
}

// answer is a reconciliation answer for one task (t nil: none known) at now; ns names the
// Kubernetes namespace of a task without a pod.
func answer(id string, t *task, now time.Time, ns *namespaces) engine.Status {
	st := engine.Status{TaskID: id, Reason: tstate.ReasonReconciliation, Source: tstate.SourceMaster, Timestamp: now}
	switch {
	case t == nil:
		st.State = tstate.Lost
		st.Message = "no pod of this task in Kubernetes namespace " + ns.taskNamespace(id, "") + ": it was deleted, or never created"
		if tid, err := jobs.ParseTaskID(id); err == nil {
			st.AgentID = tid.AgentID
		}
		return st
	case t.sent != "":
		st.State = t.sent
	default:
		st.State = tstate.Staging
		if d, ok := t.derive(now); ok && !d.State.Terminal() {
			st.State = d.State
		}
	}
	st.AgentID, st.ExecutorID = t.node, t.execID
	return st
}
