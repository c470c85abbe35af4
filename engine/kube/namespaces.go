package kube

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/namespace"
)

// Each of the scheduler's namespaces runs its pods in a Kubernetes namespace of its own
// (Config.NamespaceOf; the default namespace's is Config.Namespace). The engine follows the
// cluster's namespaces and ResourceQuotas and tells the launch round, before it launches, that
// a namespace's Kubernetes namespace is missing or that its quota leaves no room
// (NamespaceCaps), so such work waits with the reason instead of being refused by the API
// server. The scheduler does not create Kubernetes namespaces: the operator makes each one,
// with its quota and the scheduler's rights there.

// ErrNamespace is wrapped by the errors of a launch whose Kubernetes namespace cannot take its
// pod (not mapped to a valid name, or missing).
var ErrNamespace = errors.New("kube: no Kubernetes namespace for the task")

// namespaces maps the scheduler's namespaces to Kubernetes namespaces (the engine's
// configuration, read only) and follows the cluster's namespaces and ResourceQuotas; its
// informers are set under its own lock.
type namespaces struct {
	cfg  *Config
	log  *slog.Logger
	wake func() // the engine's loop: a namespace or a quota changed

	mu            sync.Mutex
	nsInformer    cache.SharedIndexInformer // the cluster's namespaces
	quotaInformer cache.SharedIndexInformer // and ResourceQuotas
}

// informers are the namespaces' and quotas' informers (nil before start).
func (e *namespaces) informers() (ns, quotas cache.SharedIndexInformer) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.nsInformer, e.quotaInformer
}

// kubeNamespace is the Kubernetes namespace of the pods of scheduler namespace ns.
func (e *namespaces) kubeNamespace(ns string) (string, error) {
	if e.cfg.NamespaceOf == nil || ns == "" || ns == namespace.Default {
		return e.cfg.Namespace, nil
	}
	kns, err := e.cfg.NamespaceOf(ns)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrNamespace, err)
	}
	return kns, nil
}

// schedulerNamespace is the scheduler namespace of a task id (default when it cannot be read).
func schedulerNamespace(taskID string) string {
	if tid, err := jobs.ParseTaskID(taskID); err == nil {
		return namespace.Of(tid.JobName)
	}
	return namespace.Default
}

// taskNamespace is the Kubernetes namespace of a task's pod: where it was created or seen,
// else where its namespace maps to now (seen: the namespace it was seen in, or "").
func (e *namespaces) taskNamespace(id string, seen string) string {
	if seen != "" {
		return seen
	}
	kns, err := e.kubeNamespace(schedulerNamespace(id))
	if err != nil {
		return e.cfg.Namespace
	}
	return kns
}

// launchNamespace is the Kubernetes namespace a new task's pod is created in, or why it
// cannot be.
func (e *namespaces) launchNamespace(taskID string) (string, error) {
	kns, err := e.kubeNamespace(schedulerNamespace(taskID))
	if err != nil {
		return "", err
	}
	if why := e.missing(kns); why != "" {
		return "", fmt.Errorf("%w: %s", ErrNamespace, why)
	}
	return kns, nil
}

// missing says why Kubernetes namespace kns cannot take pods ("" when it can, or when the
// namespaces cannot be read).
func (e *namespaces) missing(kns string) string {
	inf, _ := e.informers()
	if inf == nil || !inf.HasSynced() {
		return ""
	}
	obj, ok, err := inf.GetStore().GetByKey(kns)
	if err != nil {
		return ""
	}
	if !ok {
		return fmt.Sprintf("its Kubernetes namespace %s does not exist: create it (kubectl create namespace %s) and bind the "+
			"scheduler's task Role there (deploy/kubernetes/base/rbac.yaml); the scheduler creates no namespaces", kns, kns)
	}
	if n, _ := obj.(*corev1.Namespace); n != nil && n.Status.Phase == corev1.NamespaceTerminating {
		return fmt.Sprintf("its Kubernetes namespace %s is being deleted", kns)
	}
	return ""
}

// startNamespaceInformers follows the cluster's namespaces and ResourceQuotas (read only;
// without the right to, the engine runs on without either: every namespace is taken to exist
// and unquota'd, and the API server's refusals say the rest).
func (e *namespaces) start(f informers.SharedInformerFactory) {
	nsInf, quotaInf := f.Core().V1().Namespaces().Informer(), f.Core().V1().ResourceQuotas().Informer()
	wake := cache.ResourceEventHandlerFuncs{AddFunc: func(any) { e.wake() }, UpdateFunc: func(any, any) { e.wake() }, DeleteFunc: func(any) { e.wake() }}
	_, _ = nsInf.AddEventHandler(wake)
	_, _ = quotaInf.AddEventHandler(wake)
	e.mu.Lock()
	e.nsInformer, e.quotaInformer = nsInf, quotaInf
	e.mu.Unlock()
}

// awaitNamespaceInformers waits a bounded time for the namespaces and quotas to be read.
func (e *namespaces) await(ctx context.Context) {
	wctx, cancel := context.WithTimeout(ctx, eventsSyncWait)
	defer cancel()
	nsInf, quotaInf := e.informers()
	if !cache.WaitForCacheSync(wctx.Done(), nsInf.HasSynced, quotaInf.HasSynced) {
		if ctx.Err() == nil {
			e.log.Error("the cluster's namespaces and ResourceQuotas cannot be read (the ClusterRole needs namespaces and " +
				"resourcequotas get, list and watch): a missing Kubernetes namespace or a full quota shows only as the API server's refusal of a pod")
		}
	}
}

// NamespaceCaps tells the launch round what the Kubernetes namespaces of the scheduler
// namespaces named allow: none of a namespace's work while its Kubernetes namespace is
// missing or cannot be named; no more than its ResourceQuotas leave. engine.NamespaceCaps.
func (e *Engine) NamespaceCaps(names []string) map[string]engine.NamespaceCap {
	var out map[string]engine.NamespaceCap
	put := func(ns string, c engine.NamespaceCap) {
		if out == nil {
			out = map[string]engine.NamespaceCap{}
		}
		out[ns] = c
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	var shards map[string]res // by Kubernetes namespace, read once when a quota needs it
	for _, ns := range names {
		kns, err := e.ns.kubeNamespace(ns)
		if err != nil {
			put(ns, engine.NamespaceCap{Closed: strings.TrimPrefix(err.Error(), ErrNamespace.Error()+": ")})
			continue
		}
		if why := e.ns.missing(kns); why != "" {
			put(ns, engine.NamespaceCap{Closed: why})
			continue
		}
		if room, name, ok := e.ns.quotaRoom(kns); ok {
			if shards == nil {
				shards = e.tasks.shardsByNamespace()
			}
			ours := shards[kns]
			put(ns, engine.NamespaceCap{Capped: true, CPUs: ours.cpus + room.cpus, MemMB: ours.mem + room.mem, Name: name})
		}
	}
	return out
}

// shardsByNamespace is what this scheduler's live pods hold in each Kubernetes namespace
// (their requests: the shard's and its part of its app executor's), the use the quota's
// `used` counts of ours, which the round counts as the namespaces' own (shards, and each
// app's executor once per node).
func (tt taskTable) shardsByNamespace() map[string]res {
	out := map[string]res{}
	for _, t := range tt {
		if t.ns == "" || t.deleted || (t.obj != nil && podTerminal(t.obj)) {
			continue
		}
		req := t.req
		if t.obj != nil {
			req = requestsOf(&t.obj.Spec)
		}
		out[t.ns] = out[t.ns].add(req)
	}
	return out
}

// quota resource names the engine reads: pods ask requests = limits, so each of the three
// names of CPU (and of memory) counts the same amount.
var (
	cpuNames = []corev1.ResourceName{corev1.ResourceRequestsCPU, corev1.ResourceCPU, corev1.ResourceLimitsCPU}
	memNames = []corev1.ResourceName{corev1.ResourceRequestsMemory, corev1.ResourceMemory, corev1.ResourceLimitsMemory}
)

// quotaRoom is what the ResourceQuotas of kns leave (hard less used, the least of them, on CPU
// and memory; a quota whose pods are used up leaves nothing), with the quota that binds in
// words with its figures. false when no quota of kns caps CPU, memory or pods. Quotas with scopes are not read.
func (e *namespaces) quotaRoom(kns string) (res, string, bool) {
	_, inf := e.informers()
	if inf == nil || !inf.HasSynced() {
		return res{}, "", false
	}
	objs, err := inf.GetIndexer().ByIndex(cache.NamespaceIndex, kns)
	if err != nil || len(objs) == 0 {
		return res{}, "", false
	}
	qs := make([]*corev1.ResourceQuota, 0, len(objs))
	for _, o := range objs {
		if q, ok := o.(*corev1.ResourceQuota); ok && len(q.Spec.Scopes) == 0 && q.Spec.ScopeSelector == nil {
			qs = append(qs, q)
		}
	}
	return roomOf(qs, kns)
}

// roomOf is what the unscoped quotas qs of Kubernetes namespace kns leave
// (the tightest of each), named with the figures that bind; false when no
// quota caps CPU, memory or pods.
func roomOf(qs []*corev1.ResourceQuota, kns string) (res, string, bool) {
	sort.Slice(qs, func(i, j int) bool { return qs[i].Name < qs[j].Name })
	room := res{cpus: math.Inf(1), mem: math.Inf(1)}
	var binding []string // the figures, each quota's named when there are several
	which := func(q *corev1.ResourceQuota) string {
		if len(qs) > 1 {
			return q.Name + " "
		}
		return ""
	}
	capped := false
	tighten := func(q *corev1.ResourceQuota, names []corev1.ResourceName, cur *float64, unit func(resource.Quantity) float64) {
		for _, n := range names {
			hard, ok := q.Spec.Hard[n]
			if !ok {
				continue
			}
			capped = true
			used := q.Status.Used[n]
			left := unit(hard) - unit(used)
			if left < *cur {
				*cur = max(left, 0)
			}
			binding = append(binding, fmt.Sprintf("%s%s %s used of %s", which(q), n, used.String(), hard.String()))
		}
	}
	cpu := func(q resource.Quantity) float64 { return float64(q.MilliValue()) / 1000 }
	mem := func(q resource.Quantity) float64 { return float64(q.Value()) / (1 << 20) }
	for _, q := range qs {
		tighten(q, cpuNames, &room.cpus, cpu)
		tighten(q, memNames, &room.mem, mem)
		if hard, ok := q.Spec.Hard[corev1.ResourcePods]; ok {
			capped = true
			used := q.Status.Used[corev1.ResourcePods]
			binding = append(binding, fmt.Sprintf("%spods %s used of %s", which(q), used.String(), hard.String()))
			if used.Value() >= hard.Value() {
				room = res{}
			}
		}
	}
	if !capped {
		return res{}, "", false
	}
	names := make([]string, 0, len(qs))
	for _, q := range qs {
		names = append(names, q.Name)
	}
	name := strings.Join(names, ", ") + " of Kubernetes namespace " + kns
	if len(binding) > 0 {
		name += " (" + strings.Join(binding, "; ") + ")"
	}
	if math.IsInf(room.cpus, 1) {
		room.cpus = 1 << 40
	}
	if math.IsInf(room.mem, 1) {
		room.mem = 1 << 40
	}
	return room, name, true
}

// parseShare reads the executor-share annotation (cpus=…,mem=…).
func parseShare(s string) res {
	var r res
	for _, kv := range strings.Split(s, ",") {
		k, v, _ := strings.Cut(kv, "=")
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			continue
		}
		switch k {
		case "cpus":
			r.cpus = f
		case "mem":
			r.mem = f
		}
	}
	return r
}

// seenNS is the Kubernetes namespace the task's pod was created or seen in ("": none, or no task).
func (t *task) seenNS() string {
	if t == nil {
		return ""
	}
	return t.ns
}
