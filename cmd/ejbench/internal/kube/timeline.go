package kube

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/ejcloud/elasticjob/cmd/ejbench/internal/bench"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// The kube scenario's timeline part (-kube-parts timeline): where the time to all
// pods Running goes, pod by pod, for an Indexed Job whose pods do our executor's work, the
// same pods by hand at once under the Job's DNS policy and under ours
// (ClusterFirstWithHostNet), and ours (direct and kube-scheduler), timelineShards at once.
// Every moment is when the harness's watch saw it (ms since the trigger or the create): the
// pod added, bound (spec.nodeName), its sandbox up (PodReadyToStartContainers), Running,
// ended, and its deletion begun. The Kubernetes timestamps have a resolution of one second;
// the watch's is the API server's fan-out, the same for both sides. Each round also logs the
// CPU seconds the cluster's parts, the pods and our scheduler took to its last Running
// (kubecpu.go), which the machine's load inflates far less than wall time.

const timelineShards = 20

// stages of a pod's timeline, in order.
var stages = []string{"added", "bound", "sandbox", "running", "ended", "deleting"}

// podTimes are one pod's stage moments (0: not seen).
type podTimes map[string]time.Duration

// timeline collects the moments of one round's pods.
type timeline struct {
	mu   sync.Mutex
	pods map[string]podTimes
	// n pods; ours is our scheduler's pid (0: none); cpu, the CPU by part from the round's
	// start (start) to its last pod Running (cpu.go).
	n       int
	ours    int
	start   cpuShot
	cpu     string
	running int
}

func newTimeline(n, ours int) *timeline {
	return &timeline{pods: map[string]podTimes{}, n: n, ours: ours, start: takeCPU(ours)}
}

func (tl *timeline) see(p *corev1.Pod, typ watch.EventType, at time.Duration) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	t := tl.pods[p.Name]
	if t == nil {
		t = podTimes{}
		tl.pods[p.Name] = t
	}
	mark := func(stage string, ok bool) {
		if ok && t[stage] == 0 {
			t[stage] = max(at, time.Microsecond)
		}
	}
	mark("added", true)
	mark("bound", p.Spec.NodeName != "")
	for _, c := range p.Status.Conditions {
		mark("sandbox", c.Type == corev1.PodReadyToStartContainers && c.Status == corev1.ConditionTrue)
	}
	ph := p.Status.Phase
	if ph == corev1.PodRunning || ph == corev1.PodSucceeded || ph == corev1.PodFailed {
		if t["running"] == 0 {
			if tl.running++; tl.running == tl.n {
				tl.cpu = takeCPU(tl.ours).since(tl.start)
			}
		}
		mark("running", true)
	}
	mark("ended", ph == corev1.PodSucceeded || ph == corev1.PodFailed)
	mark("deleting", p.DeletionTimestamp != nil || typ == watch.Deleted)
}

// summary is one line per stage: the median and last pod's moment, and the median gap from
// the stage before; then how many pods had ended / were being deleted when the last one
// became Running, and the Running moments in order.
func (tl *timeline) summary() string {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	var b strings.Builder
	var lastRun time.Duration
	var runs []time.Duration
	for _, t := range tl.pods {
		lastRun = max(lastRun, t["running"])
		runs = append(runs, t["running"])
	}
	for i, s := range stages {
		var at, gap []time.Duration
		for _, t := range tl.pods {
			if t[s] == 0 {
				continue
			}
			at = append(at, t[s])
			if i > 0 && t[stages[i-1]] != 0 {
				gap = append(gap, t[s]-t[stages[i-1]])
			}
		}
		sort.Slice(at, func(i, j int) bool { return at[i] < at[j] })
		if len(at) == 0 {
			continue
		}
		fmt.Fprintf(&b, "  %-8s n=%2d  median %6d ms  last %6d ms", s, len(at), median(at).Milliseconds(), at[len(at)-1].Milliseconds())
		if len(gap) > 0 {
			fmt.Fprintf(&b, "  from %s: median %5d ms, max %5d ms", stages[i-1], median(gap).Milliseconds(), longest(gap).Milliseconds())
		}
		b.WriteByte('\n')
	}
	ended, deleting := 0, 0
	for _, t := range tl.pods {
		if t["ended"] != 0 && t["ended"] < lastRun {
			ended++
		}
		if t["deleting"] != 0 && t["deleting"] < lastRun {
			deleting++
		}
	}
	sort.Slice(runs, func(i, j int) bool { return runs[i] < runs[j] })
	ms := make([]string, len(runs))
	for i, r := range runs {
		ms[i] = fmt.Sprint(r.Milliseconds())
	}
	fmt.Fprintf(&b, "  before the last Running: %d ended, %d being deleted; Running at %s ms\n", ended, deleting, strings.Join(ms, " "))
	fmt.Fprintf(&b, "  CPU seconds to the last Running: %s\n", tl.cpu)
	return b.String()
}

func longest(ds []time.Duration) time.Duration {
	var m time.Duration
	for _, d := range ds {
		m = max(m, d)
	}
	return m
}

// timelines runs each side twice with the timeline watching and logs the summaries.
func (kb *kubeBench) timelines(ctx context.Context, o options, kubeconfig, tmp string) error {
	defer func() { kb.seen, kb.limits, kb.command = nil, nil, "" }()
	n := timelineShards
	trace := func(name string, ours int, f func(tl *timeline) (time.Duration, error)) {
		for i := range 2 {
			tl := newTimeline(n, ours)
			kb.seen = tl.see
			run, err := f(tl)
			kb.seen = nil
			if err != nil {
				bench.Logf("kube timeline %s round %d: %v", name, i, err)
				continue
			}
			bench.Logf("kube timeline %s round %d: all Running %s\n%s", name, i, bench.Secs(run), tl.summary())
		}
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(benchApp()) }))
	defer srv.Close()
	kb.limits = shardRes(n)
	kb.command = fmt.Sprintf("cd /tmp && mkdir -p app$$ && cd app$$ && wget -q -O app.tgz %s/b.tgz && tar xzf app.tgz && ELASTICJOB_JOB_PARAMETER=1 sh bin/run.sh", srv.URL)
	trace("indexed-job-same-work", 0, func(*timeline) (time.Duration, error) {
		run, _, err := kb.indexedJobOf(ctx, fmt.Sprintf("tlj-%d", time.Now().UnixNano()%1e6), n)
		return run, err
	})
	// The same pods by hand at once, with the Job's DNS policy and with ours (host network:
	// ClusterFirstWithHostNet; a kubelet without a cluster DNS warns of it for each pod).
	for _, dns := range []corev1.DNSPolicy{"", corev1.DNSClusterFirstWithHostNet} {
		kb.dnsPolicy = dns
		trace("hand-same-work-dns-"+string(cmp.Or(dns, corev1.DNSClusterFirst)), 0, func(*timeline) (time.Duration, error) {
			run, _, err := kb.handPodsOf(ctx, fmt.Sprintf("tlh-%d", time.Now().UnixNano()%1e6), n)
			return run, err
		})
	}
	kb.command, kb.dnsPolicy = "", ""
	// direct and kube-scheduler, finished pods held (the default).
	for _, side := range []struct{ mode, hold string }{{"direct", "30s"}, {"kube-scheduler", "30s"}} {
		name := side.mode + "-hold-" + side.hold
		err := kb.withScheduler(o, kubeconfig, tmp, "tl-"+name, []string{"--kube-binding", side.mode, "--kube-finished-pod-hold", side.hold}, func(api *bench.Client, sp *bench.Scheduler) error {
			job := "tl20"
			if err := api.PostJSON("/api/job/register", fmt.Sprintf(`{"jobName":%q,"appName":"b","jobExecutionType":"TRANSIENT","shardingTotalCount":%d,"jobParameter":"1","cpuCount":0.05,"memoryMB":32}`, job, n)); err != nil {
				return err
			}
			trace("ours-"+name, sp.PID(), func(*timeline) (time.Duration, error) {
				run, _, err := kb.ourRound(ctx, api, job, n, endedRows(api, job)+n)
				return run, err
			})
			return nil
		})
		if err != nil {
			return fmt.Errorf("timeline %s: %w", name, err)
		}
	}
	return nil
}
