package kube

import (
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/ejcloud/elasticjob/clock"
	tstate "github.com/ejcloud/elasticjob/task"
)

// The kubelet says by Warning events what a pod's status does not (a volume it cannot mount,
// a sandbox it cannot make: the pod just stays Pending) and says some of what the status
// does, sooner (an image that is not there, an admission rejection). The engine follows the
// Warning events about pods in the tasks' namespace and turns those about its own pods into
// wait reasons (while a task's pod waits) or failure causes.

// eventSelector is the field selector of the events informer: Warnings about pods.
const eventSelector = "involvedObject.kind=Pod,type=Warning"

// eventInformer is the informer of the Warning events about pods in ns.
func eventInformer(cs kubernetes.Interface, ns string, f *informers.SharedInformerFactory) cache.SharedIndexInformer {
	*f = informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(ns),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.FieldSelector = eventSelector }))
	return (*f).Core().V1().Events().Informer()
}

// listEvents reads the Warning events about pods in ns once (a standby's snapshot).
func listEvents(ctx context.Context, cs kubernetes.Interface, ns string) ([]corev1.Event, error) {
	l, err := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: eventSelector})
	if err != nil {
		return nil, fmt.Errorf("kube: list the events of namespace %s: %w", ns, err)
	}
	return l.Items, nil
}

// slimEvent drops what the engine never reads from the events the informer keeps.
func slimEvent(obj any) (any, error) {
	if ev, ok := obj.(*corev1.Event); ok {
		ev.ManagedFields = nil
	}
	return obj, nil
}

func (e *Engine) onEvent(obj any) {
	ev, ok := obj.(*corev1.Event)
	if !ok || ev.Type != corev1.EventTypeWarning || ev.InvolvedObject.Kind != "Pod" {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	t := e.tasks.ofPod(ev.Namespace, ev.InvolvedObject.Name)
	if ev.Reason == reasonNoClusterDNS { // the pod does not wait: its kubelet gave it the node's DNS (dns.go)
		if t != nil && t.node != "" {
			e.pods.noClusterDNS(t.node)
		}
		return
	}
	if t == nil || t.committed || t.running != nil || rank(t.sent) >= rank(tstate.Running) {
		return // not ours, or its pod ran: what the executor and the pod's phase say stands
	}
	if t.obj != nil && ev.InvolvedObject.UID != "" && ev.InvolvedObject.UID != t.obj.UID {
		return // about an earlier pod of the same name
	}
	if t.obj != nil && (t.obj.Status.Phase == corev1.PodRunning || podTerminal(t.obj)) {
		return
	}
	ps, fatal := eventStatus(ev, t)
	if fatal {
		if t.event == nil {
			t.event = &ps
			t.dirty = true
			e.wake()
		}
		return
	}
	if ps.message != t.waiting {
		t.waiting = ps.message
		t.dirty = true
		e.wake()
	}
}

// ofPod finds the task of a pod by the pod's name.
func (tt taskTable) ofPod(ns, name string) *task {
	for _, t := range tt {
		if t.pod == name && (t.ns == "" || t.ns == ns) {
			return t
		}
	}
	return nil
}

// containerRef matches an event's field path: spec.containers{task}, spec.initContainers{x}.
var containerRef = regexp.MustCompile(`^spec\.(?:init)?[cC]ontainers\{(.+)\}$`)

// quoted is the first double-quoted string of a message (the kubelet quotes image names).
var quoted = regexp.MustCompile(`"([^"]+)"`)

// eventStatus says what a Warning event about a task's pod means: fatal, the task's end
// (the same state and cause the pod's status gives for the same problem); else a wait
// reason, in ps.message.
func eventStatus(ev *corev1.Event, t *task) (ps phaseStatus, fatal bool) {
	node := t.node
	reason, msg := ev.Reason, oneLine(ev.Message)
	image := imageOf(ev, t)
	switch {
	case rejections[reason]:
		return rejected(node, reason, msg), true
	case reason == "ErrImageNeverPull" || reason == "InspectFailed":
		return imageStatus(image, node, reasonOfImageEvent(reason, msg), msg), true
	case reason == "Failed" && strings.HasPrefix(msg, "Failed to pull image"):
		return imageStatus(image, node, "ErrImagePull", msg), true
	case reason == "BackOff" && strings.HasPrefix(msg, "Back-off pulling image"):
		return imageStatus(image, node, "ImagePullBackOff", msg), true
	case reason == "Failed" && imageProblems[strings.TrimPrefix(msg, "Error: ")]: // the same problem once more, by its name
		return imageStatus(image, node, strings.TrimPrefix(msg, "Error: "), msg), true
	}
	return phaseStatus{message: fmt.Sprintf("its pod waits on node %s: %s: %s", node, reason, msg)}, false
}

func reasonOfImageEvent(reason, msg string) string {
	if reason == "InspectFailed" && strings.Contains(msg, "image name") {
		return "InvalidImageName"
	}
	return reason
}

// imageOf is the image an event is about: its container's in the pod, else the first name
// the message quotes.
func imageOf(ev *corev1.Event, t *task) string {
	if m := containerRef.FindStringSubmatch(ev.InvolvedObject.FieldPath); m != nil && t.images[m[1]] != "" {
		return t.images[m[1]]
	}
	if m := quoted.FindStringSubmatch(ev.Message); m != nil {
		return m[1]
	}
	return "?"
}

// imageStatus is a task's end when its pod's image cannot be had, said plainly.
func imageStatus(image, node, reason, msg string) phaseStatus {
	var s string
	switch reason {
	case "ErrImageNeverPull":
		s = fmt.Sprintf("image %s is not on node %s and imagePullPolicy is Never: import it there (ctr -n k8s.io images import), "+
			"or push it to a registry the node pulls from and set kube_image_pull_policy to IfNotPresent", image, node)
	case "InvalidImageName":
		s = fmt.Sprintf("image name %s is not valid (InvalidImageName): %s", image, msg)
	default:
		s = fmt.Sprintf("image %s cannot be pulled onto node %s (%s): %s", image, node, reason, msg)
	}
	return phaseStatus{state: tstate.Error, source: tstate.SourceAgent, reason: tstate.ReasonContainerLaunchFailed, message: s}
}

// rejected is a task's end when the kubelet refused its pod at admission (OutOfcpu, …).
func rejected(node, reason, msg string) phaseStatus {
	return phaseStatus{state: tstate.Dropped, source: tstate.SourceAgent, reason: tstate.ReasonInvalidOffers,
		message: fmt.Sprintf("the kubelet of node %s refused the pod (%s: %s): another pod took the room meanwhile; back to the queue",
			node, reason, msg)}
}

// imagesOf maps a pod's containers to their images.
func imagesOf(spec *corev1.PodSpec) map[string]string {
	m := make(map[string]string, len(spec.Containers)+len(spec.InitContainers))
	for _, cs := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for _, c := range cs {
			m[c.Name] = c.Image
		}
	}
	return m
}

// podEvents follows, per Kubernetes namespace, the Warning events about pods during a
// term, under its own lock; handle gets each event (the engine's onEvent).
type podEvents struct {
	cfg    *Config
	clock  clock.Clock
	log    *slog.Logger
	handle func(obj any)

	mu      sync.Mutex
	runDone <-chan struct{}      // the term's end (Run's ctx), for informers started later
	byNS    map[string]*nsEvents // by Kubernetes namespace
}

// nsEvents is the events informer of one Kubernetes namespace.
type nsEvents struct {
	factory  informers.SharedInformerFactory
	informer cache.SharedIndexInformer
	since    time.Time
}

// begin starts the term: informers started from now on run until done.
func (e *podEvents) begin(done <-chan struct{}) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.runDone = done
}

// watch follows the Warning events about pods in Kubernetes namespace kns from now on
// (once per namespace and term).
func (e *podEvents) watch(kns string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.runDone == nil || e.byNS[kns] != nil {
		return
	}
	var f informers.SharedInformerFactory
	inf := eventInformer(e.cfg.Client, kns, &f)
	if err := inf.SetTransform(slimEvent); err != nil {
		e.log.Warn("event informer", "namespace", kns, "err", err)
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: e.handle, UpdateFunc: func(_, ev any) { e.handle(ev) },
	}); err != nil {
		e.log.Warn("event informer", "namespace", kns, "err", err)
	}
	if e.byNS == nil {
		e.byNS = map[string]*nsEvents{}
	}
	e.byNS[kns] = &nsEvents{factory: f, informer: inf, since: e.clock.Now()}
	f.Start(e.runDone)
}

// eventsSyncWait bounds the wait for the events informer at the start of a term: without
// the right to list events (an older Role) the scheduler runs on, without wait reasons.
const eventsSyncWait = 30 * time.Second

// await waits a bounded time for the events informers started so far to be read.
func (e *podEvents) await(ctx context.Context) {
	wctx, cancel := context.WithTimeout(ctx, eventsSyncWait)
	defer cancel()
	e.mu.Lock()
	var synced []cache.InformerSynced
	var names []string
	for kns, ev := range e.byNS {
		synced, names = append(synced, ev.informer.HasSynced), append(names, kns)
	}
	e.mu.Unlock()
	if !cache.WaitForCacheSync(wctx.Done(), synced...) && ctx.Err() == nil {
		e.log.Error("the events of the task pods cannot be read (the Role needs events list and watch in the namespace): "+
			"wait reasons and image causes come from the pods' status alone until they can", "namespaces", names)
	}
}

// stop stops the events informers of the term.
func (e *podEvents) stop() {
	e.mu.Lock()
	evs := e.byNS
	e.byNS, e.runDone = map[string]*nsEvents{}, nil
	e.mu.Unlock()
	for _, ev := range evs {
		ev.factory.Shutdown()
	}
}
