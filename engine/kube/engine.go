package kube

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/internal/recent"
)

// Config configures an Engine.
type Config struct {
	Client    kubernetes.Interface
	Namespace string // of the default namespace's task pods
	// NamespaceOf is the Kubernetes namespace of the pods of a scheduler namespace other than
	// default (nil: Namespace for every one); an error says why it has none.
	NamespaceOf func(ns string) (string, error)
	// WatchNamespaces are Kubernetes namespaces whose pod events are followed from the start
	// of a term besides Namespace (others from their first pod of the term on).
	WatchNamespaces []string
	// FrameworkID names this scheduler's pods (label elasticjob.io/framework): the id kept in
	// the registry, so a new leader finds the pods of the one before. "" makes a new one.
	FrameworkID   string
	ExecutorImage string
	PullPolicy    corev1.PullPolicy
	HostNetwork   bool
	// TemplateHostAccess lets a podTemplate reach the node (hostaccess.go).
	TemplateHostAccess bool
	NodeSelector       map[string]string
	Tolerations        []corev1.Toleration
	ServiceAccount     string
	// SchedulerAccount is the scheduler's own service account, "namespace/name"
	// (Clients.Account; "" when it runs as no service account): no task pod may run
	// as it, whatever its podTemplate or kube_service_account say (serviceaccount.go).
	SchedulerAccount string
	// Binding is BindingDirect ("" too) or BindingKubeScheduler (binding.go).
	Binding string
	// SchedulerURLs are where the executors in the pods report (any scheduler instance:
	// a standby forwards to the leader).
	SchedulerURLs []string
	ExecutorEnv   map[string]string
	KillGrace     time.Duration // SIGTERM → SIGKILL of a killed task (default 5s)
	// FinishedPodHold is how long the pod of a finished task may be kept while other pods of
	// this scheduler start on its node (release.go); 0 deletes it at once.
	FinishedPodHold time.Duration
	// TaskToken signs a task id: the executor in its pod proves with it that its reports
	// are about its own task (api: Auth.TaskToken).
	TaskToken func(taskID string) string
	// Tails keeps finished tasks' log tails after their pods are deleted; nil keeps none.
	Tails  *Tails
	Clock  clock.Clock
	Log    *slog.Logger
	Resync time.Duration // informer resync (default 0: none)
	// APIQPS is the client's sustained requests per second (kube_api_qps): a launch round
	// beside other clusters places at most as many pods here (Engine.Capabilities).
	APIQPS int
}

// Engine runs tasks as pods on a Kubernetes cluster: the scheduler's engine.Driver and
// engine.Inventory. Run feeds the scheduler (its engine.Handler): offers from the
// nodes' free resources, status updates from the executors' reports and the pods' phases.
// One Engine serves one leader term.
type Engine struct {
	cfg         Config
	log         *slog.Logger
	clock       clock.Clock
	frameworkID string

	mu         sync.Mutex
	h          engine.Handler // set by Run
	subscribed bool           // informers synced, Subscribed sent
	nodes      map[string]*nodeInfo
	names      []string            // the nodes' names, sorted (nil: to sort again, nodeNames)
	usage      map[string]podUsage // every pod bound to a node (all namespaces), by namespace/name
	tasks      taskTable           // this scheduler's tasks, by task id (tasks.go)
	finished   recent.Set          // tasks whose pods are gone after their end was committed (maxFinished)
	held       map[string]struct{} // tasks whose end was committed and whose pods wait to be deleted (release.go)
	ends       endMemory           // the ends of the last tasks in finished (adopt)
	offers     *offerBook          // offers.go
	calls      []call              // handler calls queued for the loop, in order
	kick       chan struct{}

	// The parts with state of their own, each under its own lock (taken after mu, never
	// before it), or none.
	pods   *podMaker   // pods of tasks, nodes without cluster DNS (pods.go, dns.go)
	ns     *namespaces // Kubernetes namespaces and ResourceQuotas (namespaces.go)
	events *podEvents  // the Warning events about pods (events.go)
	tails  tailKeeper  // finished tasks' log tails (tails.go)
}

var (
	_ engine.Driver    = (*Engine)(nil)
	_ engine.Inventory = (*Engine)(nil)
)

// ErrNotRunning is returned by calls that need Run.
var ErrNotRunning = errors.New("kube: the engine is not running")

// New checks cfg and returns an Engine; Run starts it.
func New(cfg Config) (*Engine, error) {
	if cfg.Client == nil {
		return nil, errors.New("kube: no Kubernetes client")
	}
	if cfg.Namespace == "" || cfg.ExecutorImage == "" || len(cfg.SchedulerURLs) == 0 || cfg.TaskToken == nil {
		return nil, errors.New("kube: Namespace, ExecutorImage, SchedulerURLs and TaskToken are required")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.PullPolicy == "" {
		cfg.PullPolicy = corev1.PullIfNotPresent
	}
	id := cfg.FrameworkID
	if id == "" {
		id = "kube-" + randomHex(8)
	}
	return newEngine(cfg, id, randomHex(4)), nil
}

// newEngine composes an Engine of its parts; cfg has its defaults.
func newEngine(cfg Config, frameworkID, offerPrefix string) *Engine {
	e := &Engine{
		cfg: cfg, log: cfg.Log.With("subsystem", "kube"), clock: cfg.Clock, frameworkID: frameworkID,
		nodes: map[string]*nodeInfo{}, usage: map[string]podUsage{}, tasks: taskTable{},
		offers: &offerBook{prefix: offerPrefix, byNode: map[string]*nodeOffer{}}, kick: make(chan struct{}, 1), finished: recent.Set{Max: maxFinished},
	}
	e.pods = &podMaker{cfg: &e.cfg, frameworkID: frameworkID, clock: cfg.Clock}
	e.ns = &namespaces{cfg: &e.cfg, log: e.log, wake: e.wake}
	e.events = &podEvents{cfg: &e.cfg, clock: cfg.Clock, log: e.log, handle: e.onEvent}
	e.tails = tailKeeper{cfg: &e.cfg, clock: cfg.Clock, log: e.log, forget: func(id string) {
		e.mu.Lock()
		defer e.mu.Unlock()
		t := e.tasks[id]
		if t != nil && !t.committed {
			return // launched again meanwhile (adopt): still to be told
		}
		if t != nil && t.endTold != nil {
			e.ends.put(*t.endTold)
		}
		delete(e.tasks, id)
		e.finished.Add(id)
	}}
	return e
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// FrameworkID is the id this engine labels its pods with.
func (e *Engine) FrameworkID() string { return e.frameworkID }

func (e *podMaker) killGrace() time.Duration {
	if e.cfg.KillGrace > 0 {
		return e.cfg.KillGrace
	}
	return 5 * time.Second
}

// Run starts the node and pod informers, tells h Subscribed once they have synced, and
// then feeds h until ctx ends (nil).
func (e *Engine) Run(ctx context.Context, h engine.Handler) error {
	e.mu.Lock()
	e.h = h
	e.mu.Unlock()
	factory := informers.NewSharedInformerFactoryWithOptions(e.cfg.Client, e.cfg.Resync)
	nodes := factory.Core().V1().Nodes().Informer()
	pods := factory.Core().V1().Pods().Informer() // every namespace: others' pods take room on the nodes too
	if err := pods.SetTransform(slimPod); err != nil {
		return fmt.Errorf("kube: pod informer: %w", err)
	}
	if _, err := nodes.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: e.onNode, UpdateFunc: func(_, n any) { e.onNode(n) }, DeleteFunc: e.onNodeDeleted,
	}); err != nil {
		return fmt.Errorf("kube: node informer: %w", err)
	}
	if _, err := pods.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: e.onPod, UpdateFunc: func(_, p any) { e.onPod(p) }, DeleteFunc: e.onPodDeleted,
	}); err != nil {
		return fmt.Errorf("kube: pod informer: %w", err)
	}
	nsFactory := informers.NewSharedInformerFactoryWithOptions(e.cfg.Client, e.cfg.Resync)
	e.ns.start(nsFactory)
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	nsFactory.Start(ctx.Done())
	defer nsFactory.Shutdown()
	e.events.begin(ctx.Done())
	defer e.events.stop()
	if !cache.WaitForCacheSync(ctx.Done(), nodes.HasSynced, pods.HasSynced) {
		return nil // ctx ended first
	}
	e.mu.Lock()
	for _, kns := range append([]string{e.cfg.Namespace}, e.cfg.WatchNamespaces...) {
		e.events.watch(kns)
	}
	for _, t := range e.tasks { // the namespaces of the pods adopted
		if t.ns != "" {
			e.events.watch(t.ns)
		}
	}
	e.mu.Unlock()
	e.events.await(ctx)
	e.ns.await(ctx)
	e.mu.Lock()
	e.subscribed = true
	n, t := len(e.nodes), len(e.tasks)
	e.mu.Unlock()
	e.log.Info("subscribed", "framework_id", e.frameworkID, "namespace", e.cfg.Namespace, "nodes", n, "pods", t)
	h.Subscribed(ctx, e.frameworkID)
	return e.loop(ctx, h)
}

// stepGap is the least time between the starts of two steps while events keep coming: a
// step looks at every node (offers), and the informers wake the loop at every pod event,
// hundreds a second at 1,000 nodes; the events of a gap are decided on in one step
// (docs/benchmarks.md). It bounds CPU, so it runs on the wall clock, not the injected one.
const stepGap = 10 * time.Millisecond

// loop makes the handler calls the informers, the executors' reports and the driver's
// calls lead to, from one goroutine, in order.
func (e *Engine) loop(ctx context.Context, h engine.Handler) error {
	timer := e.clock.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		start := time.Now()
		calls, next := e.step()
		for _, c := range calls {
			c(ctx, h)
		}
		if !next.IsZero() {
			timer.Reset(max(next.Sub(e.clock.Now()), time.Millisecond))
		}
		select {
		case <-ctx.Done():
			return nil
		case <-e.kick:
			if !sleepUntil(ctx, start.Add(stepGap)) {
				return nil
			}
		case <-timer.C():
		}
	}
}

// sleepUntil waits for the wall clock to reach t; false if ctx ended first.
func sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	w := time.NewTimer(d)
	defer w.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-w.C:
		return true
	}
}

// wake makes the loop take a step.
func (e *Engine) wake() {
	select {
	case e.kick <- struct{}{}:
	default:
	}
}

// call is a call of the handler, made by the loop.
type call = func(ctx context.Context, h engine.Handler)

// post queues a handler call for the loop. Called with e.mu held.
func (e *Engine) post(c call) { e.calls = append(e.calls, c) }

// step decides, under the lock, what to tell the handler: queued calls, the tasks' new
// states, offers. next is when a step is due again (zero: only on a kick).
func (e *Engine) step() (calls []call, next time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.subscribed {
		return nil, time.Time{}
	}
	now := e.clock.Now()
	calls, e.calls = e.calls, nil
	ids := make([]string, 0, len(e.tasks))
	for id, t := range e.tasks {
		if t.dirty || (!t.retryAt.IsZero() && !now.Before(t.retryAt)) {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	for _, id := range ids {
		calls = append(calls, e.updatesOf(e.tasks[id], now)...)
	}
	for _, t := range e.tasks {
		if !t.retryAt.IsZero() && (next.IsZero() || t.retryAt.Before(next)) {
			next = t.retryAt
		}
	}
	if gcNext := e.collectPods(now); !gcNext.IsZero() && (next.IsZero() || gcNext.Before(next)) {
		next = gcNext
	}
	if releaseNext := e.releaseHeld(now); !releaseNext.IsZero() && (next.IsZero() || releaseNext.Before(next)) {
		next = releaseNext
	}
	if probeNext := e.probeUnseen(now); !probeNext.IsZero() && (next.IsZero() || probeNext.Before(next)) {
		next = probeNext
	}
	offerCalls, offerNext := e.offers.reoffer(now, e.nodes, e.nodeNames(), e.frees())
	calls = append(calls, offerCalls...)
	if !offerNext.IsZero() && (next.IsZero() || offerNext.Before(next)) {
		next = offerNext
	}
	return calls, next
}
