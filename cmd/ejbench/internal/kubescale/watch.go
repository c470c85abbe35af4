package kubescale

import (
	"context"
	"fmt"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// podSeen is what the scenario's watch saw of one pod.
type podSeen struct {
	job      int       // ks index
	fire     time.Time // the fire it belongs to
	created  time.Time // first seen
	running  time.Time // first seen Running (zero: not yet)
	ended    bool
	exitCode int32
}

// podRecorder follows the pods of one namespace (a side) by a watch of its own and times
// each one's creation and Running as this process sees them.
type podRecorder struct {
	ns     string
	period int
	now    func() time.Time

	mu   sync.Mutex
	pods map[string]*podSeen
}

func newPodRecorder(ns string, period int) *podRecorder {
	return &podRecorder{ns: ns, period: period, now: time.Now, pods: map[string]*podSeen{}}
}

// run watches the namespace's pods until ctx ends; synced is closed once the first list is in.
func (r *podRecorder) run(ctx context.Context, cs kubernetes.Interface, synced chan<- struct{}) {
	f := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(r.ns))
	inf := f.Core().V1().Pods().Informer()
	_ = inf.SetTransform(func(obj any) (any, error) { // keep what observe reads
		if p, ok := obj.(*corev1.Pod); ok {
			p.ManagedFields, p.Spec = nil, corev1.PodSpec{}
		}
		return obj, nil
	})
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { r.observe(o) },
		UpdateFunc: func(_, o any) { r.observe(o) },
	})
	f.Start(ctx.Done())
	cache.WaitForCacheSync(ctx.Done(), inf.HasSynced)
	close(synced)
	<-ctx.Done()
	f.Shutdown()
}

// observe records a pod's first sighting and its first Running (or end, for a pod that
// ran and ended between two sightings).
func (r *podRecorder) observe(o any) {
	p, ok := o.(*corev1.Pod)
	if !ok {
		return
	}
	now := r.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.pods[p.Name]
	if s == nil {
		i := ksIndex(p.Labels["elasticjob.io/job"])
		if i < 0 {
			return
		}
		s = &podSeen{job: i, created: now}
		if v, err := strconv.ParseInt(p.Annotations[ksFireAnnotation], 10, 64); err == nil {
			s.fire = time.Unix(v, 0)
		} else {
			s.fire = ksFireBefore(now, ksOffset(i, r.period), r.period)
		}
		r.pods[p.Name] = s
	}
	switch p.Status.Phase {
	case corev1.PodRunning, corev1.PodSucceeded, corev1.PodFailed:
		if s.running.IsZero() {
			s.running = now
		}
	}
	if (p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed) && !s.ended {
		s.ended = true
		for _, c := range p.Status.ContainerStatuses {
			if t := c.State.Terminated; t != nil {
				s.exitCode = t.ExitCode
			}
		}
	}
}

// windowStats are one side's figures over a window [from, to).
type windowStats struct {
	created       int       // pods first seen in the window
	expected      int       // pods of the fires in the window
	fired         int       // of those, seen by the end
	toCreated     []float64 // fire → seen, seconds, one per expected pod (+Inf: never seen)
	toRunning     []float64 // fire → Running (+Inf: not by the end)
	ended, failed int       // pods of the window's fires that ended, with a non-zero exit
}

// stats computes the figures of a window for jobs [0, n).
func (r *podRecorder) stats(from, to time.Time, n int) windowStats {
	var w windowStats
	for t := from.Truncate(time.Second); t.Before(to); t = t.Add(time.Second) {
		if t.Before(from) {
			continue
		}
		for i := int(t.Unix() % int64(r.period)); i < n; i += r.period {
			w.expected += ksShards(i)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.pods {
		if !s.created.Before(from) && s.created.Before(to) {
			w.created++
		}
		if s.fire.Before(from) || !s.fire.Before(to) {
			continue
		}
		w.fired++
		w.toCreated = append(w.toCreated, s.created.Sub(s.fire).Seconds())
		run := math.Inf(1)
		if !s.running.IsZero() {
			run = s.running.Sub(s.fire).Seconds()
		}
		w.toRunning = append(w.toRunning, run)
		if s.ended {
			w.ended++
			if s.exitCode != 0 {
				w.failed++
			}
		}
	}
	for k := w.fired; k < w.expected; k++ {
		w.toCreated = append(w.toCreated, math.Inf(1))
		w.toRunning = append(w.toRunning, math.Inf(1))
	}
	return w
}

// count is the pods recorded.
func (r *podRecorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.pods)
}

// dump writes the pods of the window's fires, one line each (job index, fire, fire →
// created and → Running in ms; -1: not Running), sorted by fire, for reading the tail.
func (r *podRecorder) dump(path string, from, to time.Time) error {
	r.mu.Lock()
	var rows []*podSeen
	for _, s := range r.pods {
		if !s.fire.Before(from) && s.fire.Before(to) {
			c := *s
			rows = append(rows, &c)
		}
	}
	r.mu.Unlock()
	sort.Slice(rows, func(i, j int) bool {
		return rows[i].fire.Before(rows[j].fire) || (rows[i].fire.Equal(rows[j].fire) && rows[i].created.Before(rows[j].created))
	})
	var b strings.Builder
	b.WriteString("job,fire,created_ms,running_ms\n")
	for _, s := range rows {
		run := int64(-1)
		if !s.running.IsZero() {
			run = s.running.Sub(s.fire).Milliseconds()
		}
		fmt.Fprintf(&b, "%d,%s,%d,%d\n", s.job, s.fire.UTC().Format("15:04:05"), s.created.Sub(s.fire).Milliseconds(), run)
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}
