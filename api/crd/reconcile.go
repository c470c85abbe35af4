package crd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/ejcloud/elasticjob/api"
	"github.com/ejcloud/elasticjob/registry"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// Reconciler is the leader's loop that keeps the registry as the objects
// say: an object created or changed is registered (its generation once,
// retried while it fails), one deleted is deregistered (also when it was
// deleted while no scheduler led: every resync compares the owner records
// with the objects), and each object's status is written back when it
// changes (every Resync for the fire times and results).
type Reconciler struct {
	Dynamic  dynamic.Interface
	Defs     Definitions
	Registry *registry.Registry // the owner records
	// Namespaces maps an object's Kubernetes namespace onto its scheduler namespace.
	Namespaces NamespaceOf
	Resync     time.Duration // 0: 10 s
	Now        func() time.Time
	Log        *slog.Logger
	// Applied, when set, is told each generation registered (benchmarks).
	Applied func(kind, ns, name string, generation int64)
}

// key names one object.
type key struct {
	Kind      int // index in Kinds
	Namespace string
	Name      string
}

// Run reconciles until ctx ends.
func (r *Reconciler) Run(ctx context.Context) error {
	if r.Resync <= 0 {
		r.Resync = 10 * time.Second
	}
	if r.Now == nil {
		r.Now = time.Now
	}
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[key]())
	defer q.ShutDown()
	f := dynamicinformer.NewDynamicSharedInformerFactory(r.Dynamic, 0)
	informers, err := watchKinds(f, q)
	if err != nil {
		return err
	}
	f.Start(ctx.Done())
	defer f.Shutdown()
	for i, inf := range informers {
		if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
			return nil // ctx ended
		}
		r.Log.Info("crd: watching", "resource", Kinds[i].Resource)
	}
	w := worker{r: r, informers: informers, applied: map[types.UID]int64{}, written: map[types.UID]writtenStatus{}}
	go func() {
		t := time.NewTicker(r.Resync)
		defer t.Stop()
		for {
			w.resync(ctx, q)
			select {
			case <-ctx.Done():
				q.ShutDown()
				return
			case <-t.C:
			}
		}
	}()
	for {
		k, quit := q.Get()
		if quit {
			return nil
		}
		err := w.reconcile(ctx, k)
		if apierrors.IsConflict(err) { // a status written over a copy older than the object: again from the newer one
			q.AddRateLimited(k)
		} else if err != nil && ctx.Err() == nil {
			r.Log.Warn("crd: reconcile; retrying", "kind", Kinds[k.Kind].Name, "namespace", k.Namespace, "name", k.Name, "err", err)
			q.AddRateLimited(k)
		} else {
			q.Forget(k)
		}
		q.Done(k)
	}
}

// watchKinds makes an informer per kind that queues the key of every
// object added, deleted or given a new generation.
func watchKinds(f dynamicinformer.DynamicSharedInformerFactory, q workqueue.TypedRateLimitingInterface[key]) ([]cache.SharedIndexInformer, error) {
	informers := make([]cache.SharedIndexInformer, len(Kinds))
	for i, k := range Kinds {
		inf := f.ForResource(k.GVR()).Informer()
		enqueue := func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if u, ok := obj.(*unstructured.Unstructured); ok {
				q.Add(key{i, u.GetNamespace(), u.GetName()})
			}
		}
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc: enqueue, DeleteFunc: enqueue,
			UpdateFunc: func(old, cur any) {
				// A status write by this loop changes no generation: nothing to do.
				if o, ok := old.(*unstructured.Unstructured); ok && o.GetGeneration() == cur.(*unstructured.Unstructured).GetGeneration() {
					return
				}
				enqueue(cur)
			},
		}); err != nil {
			return nil, fmt.Errorf("crd: watch %s: %w", k.Resource, err)
		}
		informers[i] = inf
	}
	return informers, nil
}

// worker is the loop's state: the generation of each object registered
// in this term.
type worker struct {
	r         *Reconciler
	informers []cache.SharedIndexInformer
	applied   map[types.UID]int64 // only the worker goroutine touches these
	written   map[types.UID]writtenStatus
}

// writtenStatus is the status last written to an object, and the
// resourceVersion it was written over: while the informer still holds
// that version, the write is what the object holds.
type writtenStatus struct {
	over   string
	status Status
}

// resync queues every object (its status refresh; a failed one is retried)
// and every owned definition whose object is gone.
func (w *worker) resync(ctx context.Context, q workqueue.TypedRateLimitingInterface[key]) {
	for i, inf := range w.informers {
		for _, obj := range inf.GetStore().List() {
			u := obj.(*unstructured.Unstructured)
			q.Add(key{i, u.GetNamespace(), u.GetName()})
		}
		owned, err := w.r.Registry.Config().Owned(ctx, Kinds[i].Def)
		if err != nil {
			w.r.Log.Warn("crd: read owners", "err", err)
			continue
		}
		for _, o := range owned {
			if _, exists, _ := inf.GetStore().GetByKey(o.Namespace + "/" + o.Name); !exists && o.Kind == Kinds[i].Name {
				q.Add(key{i, o.Namespace, o.Name})
			}
		}
	}
}

// reconcile brings one object's definition and status up to date.
func (w *worker) reconcile(ctx context.Context, k key) error {
	kind := Kinds[k.Kind]
	ns, nsErr := w.r.Namespaces.of(k.Namespace)
	obj, exists, err := w.informers[k.Kind].GetStore().GetByKey(k.Namespace + "/" + k.Name)
	if err != nil {
		return err
	}
	if !exists && nsErr != nil {
		return nil // never registered: no scheduler namespace runs there
	}
	if !exists {
		return w.deregister(ctx, kind, ns, k)
	}
	u := obj.(*unstructured.Unstructured)
	out := outcome{Generation: u.GetGeneration(), Kind: kind.Def, Name: k.Name, Namespace: ns}
	if nsErr != nil {
		out.Err, out.Invalid = nsErr, true // refused: shown in its status
	} else if g, ok := w.applied[u.GetUID()]; !ok || g != out.Generation {
		w.apply(ctx, kind, k, u, &out)
	}
	if out.Err == nil {
		if out.Def, err = w.r.Defs.StatusOf(ctx, kind.Def, ns, k.Name); err != nil {
			if code, _ := api.ErrorMessage(err); code == http.StatusNotFound {
				// Deleted behind the object's back (its app's or its namespace's
				// deletion): registered again on the retry, or refused there.
				delete(w.applied, u.GetUID())
			}
			return fmt.Errorf("status: %w", err)
		}
	}
	raw, _, _ := unstructured.NestedMap(u.Object, "status")
	cur := statusOf(raw)
	if ws, ok := w.written[u.GetUID()]; ok && ws.over == u.GetResourceVersion() {
		cur = ws.status // the informer has not seen the last write yet
	}
	next, changed := nextStatus(cur, out, w.r.Now())
	if changed {
		if err := w.writeStatus(ctx, kind, u, next); err != nil {
			return err
		}
		w.written[u.GetUID()] = writtenStatus{over: u.GetResourceVersion(), status: next}
	}
	if out.Err != nil && !out.Invalid {
		return out.Err // a failure, not a refusal: retried
	}
	return nil
}

// deregister deletes the definition an object that is gone had registered
// (only if the object owned it).
func (w *worker) deregister(ctx context.Context, kind Kind, ns string, k key) error {
	o, owned, err := w.r.Registry.Config().OwnerOf(ctx, kind.Def, ns, k.Name)
	if err != nil || !owned || o.Kind != kind.Name || o.Namespace != k.Namespace || o.Name != k.Name {
		return err
	}
	if o.UID != "" {
		delete(w.applied, types.UID(o.UID))
		delete(w.written, types.UID(o.UID))
	}
	if err := w.r.Defs.DeleteDefinition(ctx, kind.Def, ns, k.Name); err != nil {
		return fmt.Errorf("deregister: %w", err)
	}
	w.r.Log.Info("crd: deregistered", "kind", kind.Name, "namespace", k.Namespace, "name", k.Name)
	return nil
}

// apply registers an object's spec at its generation, noting in out a
// refusal (Invalid: shown in its status, not retried) or a failure.
func (w *worker) apply(ctx context.Context, kind Kind, k key, u *unstructured.Unstructured, out *outcome) {
	gen := out.Generation
	spec, _ := json.Marshal(u.Object["spec"])
	owner := registry.Owner{Kind: kind.Name, Namespace: k.Namespace, Name: k.Name, UID: string(u.GetUID())}
	began := time.Now()
	_, out.Err = w.r.Defs.ApplyDefinition(ctx, kind.Def, out.Namespace, k.Name, spec, owner)
	if out.Err != nil {
		code, msg := api.ErrorMessage(out.Err)
		out.Invalid = code < http.StatusInternalServerError && code != http.StatusConflict
		out.Err = errors.New(msg)
		return
	}
	w.applied[u.GetUID()] = gen
	if w.r.Applied != nil {
		w.r.Applied(kind.Name, k.Namespace, k.Name, gen)
	}
	w.r.Log.Info("crd: registered", "kind", kind.Name, "namespace", k.Namespace, "name", k.Name, "generation", gen,
		"took", time.Since(began).Round(time.Millisecond))
}

// writeStatus writes an object's status subresource (a conflict is
// retried from the informer's newer copy).
func (w *worker) writeStatus(ctx context.Context, kind Kind, u *unstructured.Unstructured, st Status) error {
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	c := u.DeepCopy()
	c.Object["status"] = m
	_, err = w.r.Dynamic.Resource(kind.GVR()).Namespace(u.GetNamespace()).UpdateStatus(ctx, c, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil // deleted meanwhile: its delete event follows
	}
	if err != nil {
		return fmt.Errorf("write status of %s %s/%s: %w", kind.Name, u.GetNamespace(), u.GetName(), err)
	}
	return nil
}
