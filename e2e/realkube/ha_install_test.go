//go:build e2e

package realkube

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/ejcloud/elasticjob/e2e/harness"
	"github.com/ejcloud/elasticjob/engine/kube"
)

// haInstall is deploy/kubernetes/ha applied with kubectl apply -k through a test-only overlay:
// what this cluster needs (host networking, so each of the three pods takes its own ports, by its
// ordinal, from lists; the API server on 127.0.0.1; the etcd peers on 127.0.0.1, as there is no
// cluster DNS for the pods' stable names; exec probes on each pod's own port; the imported image).
type haInstall struct {
	dir                string
	http, client, peer [3]int
	password           string
	probe              string
}

func (in *haInstall) write(t *testing.T) {
	t.Helper()
	ha, err := filepath.Abs("../../deploy/kubernetes/ha")
	if err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(in.dir, ha)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	api, err := url.Parse(rc.Host)
	if err != nil {
		t.Fatal(err)
	}
	tag := executorImage[strings.LastIndex(executorImage, ":")+1:]
	list := func(p [3]int) string { return fmt.Sprintf("%d %d %d", p[0], p[1], p[2]) }
	var peers, urls []string
	for i := range 3 {
		peers = append(peers, fmt.Sprintf("elasticjob-scheduler-%d=http://127.0.0.1:%d", i, in.peer[i]))
		urls = append(urls, fmt.Sprintf("http://127.0.0.1:%d", in.http[i]))
	}
	// Each pod picks its ports by its ordinal; the probes the same way.
	pick := `i=${POD_NAME##*-}; nth() { shift $(( $1 + 1 )); echo $1; }; port=$(nth $i $EJ_HTTP_PORTS); `
	script := pick + `export ELASTICJOB_HTTP_PORT=$port ELASTICJOB_ADVERTISE_URL=http://127.0.0.1:$port ` +
		`ELASTICJOB_ETCD_CLIENT_URL=http://127.0.0.1:$(nth $i $EJ_CLIENT_PORTS); exec /elasticjob-scheduler`
	probe := pick + `wget -q -O /dev/null http://127.0.0.1:$port/healthz` // busybox wget -T segfaults; the probe has its timeout
	in.probe = probe
	k := fmt.Sprintf(`apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- %s
images:
- name: localhost/elasticjob-executor
  newTag: %s
patches:
- path: test-cluster.yaml
- target: {kind: StatefulSet, name: elasticjob-scheduler}
  patch: |-
    - op: remove
      path: /spec/template/spec/containers/0/ports
    - op: replace
      path: /spec/template/spec/containers/0/command
      value: [/bin/sh, -c, %q]
    - op: replace
      path: /spec/template/spec/containers/0/startupProbe
      value: {exec: {command: [/bin/sh, -c, %q]}, periodSeconds: 1, timeoutSeconds: 10, failureThreshold: 300}
    - op: replace
      path: /spec/template/spec/containers/0/readinessProbe
      value: {exec: {command: [/bin/sh, -c, %q]}, periodSeconds: 1, timeoutSeconds: 10}
    - op: replace
      path: /spec/template/spec/containers/0/livenessProbe
      value: {exec: {command: [/bin/sh, -c, %q]}, periodSeconds: 10, timeoutSeconds: 10, failureThreshold: 6}
`, rel, tag, script, probe, probe, probe)
	patch := fmt.Sprintf(`apiVersion: apps/v1
kind: StatefulSet
metadata: {name: elasticjob-scheduler, namespace: %s}
spec:
  template:
    spec:
      hostNetwork: true
      dnsPolicy: ClusterFirstWithHostNet
      containers:
      - name: scheduler
        imagePullPolicy: Never
        env:
        - {name: KUBERNETES_SERVICE_HOST, value: %q}
        - {name: KUBERNETES_SERVICE_PORT, value: %q}
        - {name: EJ_HTTP_PORTS, value: %q}
        - {name: EJ_CLIENT_PORTS, value: %q}
        - {name: ELASTICJOB_HTTP_ADDRESS, value: 127.0.0.1}
        - {name: ELASTICJOB_ETCD_PEERS, value: %q}
        - {name: ELASTICJOB_KUBE_SCHEDULER_URL, value: %q}
        - {name: ELASTICJOB_KUBE_HOST_NETWORK, value: "true"}
        - {name: ELASTICJOB_KUBE_IMAGE_PULL_POLICY, value: Never}
        - {name: ELASTICJOB_KUBE_CRDS, value: "false"}
        - {name: ELASTICJOB_KUBE_WEBHOOK_URL, value: ""}
        - {name: ELASTICJOB_OFFER_REFUSE_SECONDS, value: 1s}
        - {name: ELASTICJOB_RECONCILE_WAIT, value: 5s}
`, installNS, api.Hostname(), api.Port(), list(in.http), list(in.client), strings.Join(peers, ","), strings.Join(urls, ","))
	for name, body := range map[string]string{"kustomization.yaml": k, "test-cluster.yaml": patch} {
		if err := os.WriteFile(filepath.Join(in.dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// member is pod i's API as the admin.
func (in *haInstall) member(t *testing.T, i int) *scheduler {
	return &scheduler{t: t, base: fmt.Sprintf("http://127.0.0.1:%d", in.http[i]), ns: installNS,
		auth: func(r *http.Request) { r.SetBasicAuth("admin", in.password) }}
}

// leader is the ordinal of the member every answering member names as leading, -1 while none.
func (in *haInstall) leader(t *testing.T, skip int) int {
	found := -1
	for i := range 3 {
		if i == skip {
			continue
		}
		code, _ := in.member(t, i).api().Do(http.MethodGet, "/healthz", nil)
		if code != http.StatusOK {
			continue
		}
		if in.member(t, i).api().Role() == "leader" {
			found = i
		}
	}
	return found
}

func (in *haInstall) describe(t *testing.T) string {
	out, _ := kubectl(t, "", "-n", installNS, "describe", "pods")
	for i := range 3 {
		l, _ := kubectl(t, "", "-n", installNS, "logs", fmt.Sprintf("elasticjob-scheduler-%d", i), "--tail=80")
		out += fmt.Sprintf("\n--- elasticjob-scheduler-%d's log:\n%s", i, l)
	}
	return out
}

// schedulerPid is the process of the pod's scheduler on this machine (found by its environment).
func schedulerPid(t *testing.T, pod string) int {
	t.Helper()
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, c := range procs {
		cmd, err := os.ReadFile(c)
		if err != nil || !bytes.HasPrefix(cmd, []byte("/elasticjob-scheduler\x00")) {
			continue
		}
		env, err := os.ReadFile(filepath.Join(filepath.Dir(c), "environ"))
		if err != nil || !slices.Contains(strings.Split(string(env), "\x00"), "POD_NAME="+pod) {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(c)))
		return pid
	}
	t.Fatalf("no scheduler process of pod %s", pod)
	return 0
}

// podAdds watches the task pods of the namespace and keeps when each job's pods were first seen.
type podAdds struct {
	mu   sync.Mutex
	seen map[string][]time.Time // job → when its pods were added
}

func watchPodAdds(t *testing.T) *podAdds {
	t.Helper()
	w, err := admin.CoreV1().Pods(installNS).Watch(context.Background(), metav1.ListOptions{LabelSelector: kube.LabelManagedBy + "=" + kube.ManagedBy})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	a := &podAdds{seen: map[string][]time.Time{}}
	go func() {
		for ev := range w.ResultChan() {
			if p, ok := ev.Object.(*corev1.Pod); ok && ev.Type == watch.Added {
				a.mu.Lock()
				a.seen[p.Labels[kube.LabelJob]] = append(a.seen[p.Labels[kube.LabelJob]], time.Now())
				a.mu.Unlock()
			}
		}
	}()
	return a
}

// firstAfter is when the job's first pod after at was seen (zero: none yet).
func (a *podAdds) firstAfter(job string, at time.Time) time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, s := range a.seen[job] {
		if s.After(at) {
			return s
		}
	}
	return time.Time{}
}

// TestInstalledHA: deploy/kubernetes/ha, three schedulers and nothing else, applied with
// kubectl apply -k (through a test-only overlay, see haInstall) on three claims the test's
// hostPath volumes back: the StatefulSet's three pods start together, their etcd members form
// one cluster and one scheduler leads. A cron job fires every 2 s; the leader's scheduler is
// killed with SIGKILL; another member leads, launches a trigger sent to the survivors and the
// cron job keeps firing, each of its tasks run once and no more runs than fire times; the killed
// member's container restarts and rejoins (three pods ready again). It logs the takeover: the
// kill → the new leader's first launch (a pod created).
func TestInstalledHA(t *testing.T) {
	requireK8s(t)
	startControllers(t)
	awaitNoCRDs(t)
	ctx := context.Background()
	in := &haInstall{dir: t.TempDir(), password: "ha-install-" + strconv.FormatInt(time.Now().UnixNano(), 36)}
	// Nine distinct ports: a port just freed may be handed out again.
	taken := map[int]bool{}
	distinct := func() int {
		for {
			if p := harness.FreePort(t); !taken[p] {
				taken[p] = true
				return p
			}
		}
	}
	for i := range 3 {
		in.http[i], in.client[i], in.peer[i] = distinct(), distinct(), distinct()
		hostPathVolume(t, fmt.Sprintf("ej-ha-data-%d", i), installNS, fmt.Sprintf("data-elasticjob-scheduler-%d", i))
	}
	in.write(t)
	t.Cleanup(func() { uninstall(t, &installation{dir: in.dir}) })
	// The Secret first, as the docs say: every replica shares the admin password.
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: installNS}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CoreV1().Secrets(installNS).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "elasticjob-scheduler"},
		StringData: map[string]string{"auth_password": in.password}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the install:\n%s", in.describe(t))
		}
	})
	start := time.Now()
	if out, err := kubectl(t, "", "apply", "-k", in.dir); err != nil {
		t.Fatalf("kubectl apply -k: %v\n%s", err, out)
	}
	if out, err := kubectl(t, "", "-n", installNS, "rollout", "status", "statefulset/elasticjob-scheduler", "--timeout=240s"); err != nil {
		t0 := time.Now()
		probe, perr := kubectl(t, "", "-n", installNS, "exec", "elasticjob-scheduler-0", "--", "/bin/sh", "-c", in.probe+"; echo rc=$?")
		events, _ := kubectl(t, "", "-n", installNS, "get", "events")
		t.Fatalf("the StatefulSet's rollout: %v\n%s\nthe probe by hand (%v): %v %s\nevents:\n%s", err, out, time.Since(t0), perr, probe, events)
	}
	t.Logf("kubectl apply -k -> 3 scheduler pods Ready: %v", time.Since(start).Round(100*time.Millisecond))
	var lead int
	eventually(t, waitLong, func() bool { lead = in.leader(t, -1); return lead >= 0 }, "one of the three to lead")
	t.Logf("kubectl apply -k -> a leader: %v (elasticjob-scheduler-%d)", time.Since(start).Round(100*time.Millisecond), lead)
	for i := range 3 { // the standbys know it too
		if i != lead {
			if r := in.member(t, i).api().Role(); r != "standby" {
				t.Errorf("elasticjob-scheduler-%d says %q, want standby", i, r)
			}
		}
	}
	s := in.member(t, lead)
	// Job names of this run's own: the recorder outlives a test (-count=2 runs it again).
	suffix := strconv.FormatInt(time.Now().UnixNano()%1e9, 36)
	tickJob, probeJob := "tick-"+suffix, "probe-"+suffix
	adds := watchPodAdds(t)
	s.publishApp("rec", false)
	tick := transient(tickJob, "rec", 1, "sleep 0")
	tick["cron"] = "0/2 * * * * ?"
	s.register(tick)
	s.register(transient(probeJob, "rec", 1, "sleep 0"))
	eventually(t, waitLong, func() bool { return rec.count(tickJob, "end") >= 2 }, "the cron job to run twice")

	// EJ_TEST_HA_KILLS=20 repeats the kill (each once the killed member serves again as a
	// standby) and logs the takeovers' p50, p99 and max.
	kills := 1
	if v, err := strconv.Atoi(os.Getenv("EJ_TEST_HA_KILLS")); err == nil && v > 1 {
		kills = v
	}
	var tooks []time.Duration
	newLead := lead
	for k := range kills {
		lead = newLead
		if k > 0 {
			eventually(t, waitLong, func() bool { lead = in.leader(t, -1); return lead >= 0 }, "a leader before kill %d", k+1)
		}
		survivor := (lead + 1) % 3
		pid := schedulerPid(t, fmt.Sprintf("elasticjob-scheduler-%d", lead))
		killed := time.Now()
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		// A trigger sent to a survivor every 100 ms until one is taken: it reaches a leader once
		// there is one (a standby forwards it), and the new leader launches it.
		eventually(t, waitLong, func() bool {
			code, _ := in.member(t, survivor).api().Do(http.MethodPost, "/api/job/trigger", probeJob)
			return code/100 == 2
		}, "a trigger to be taken after the kill")
		eventually(t, waitLong, func() bool { return !adds.firstAfter(probeJob, killed).IsZero() }, "the new leader to launch the trigger")
		took := adds.firstAfter(probeJob, killed).Sub(killed)
		tooks = append(tooks, took)
		eventually(t, waitLong, func() bool { newLead = in.leader(t, lead); return newLead >= 0 }, "a new leader")
		if newLead == lead {
			t.Errorf("elasticjob-scheduler-%d leads again", lead)
		}
		eventually(t, waitLong, func() bool { return !adds.firstAfter(tickJob, killed).IsZero() }, "the cron job's first launch after the kill")
		cronTook := adds.firstAfter(tickJob, killed).Sub(killed)
		t.Logf("takeover on Kubernetes (3 pods, etcd lease 1 s): kill -9 of elasticjob-scheduler-%d's scheduler -> first launch by elasticjob-scheduler-%d: %v (a trigger retried every 100 ms); the cron job's next pod (every 2 s): %v",
			lead, newLead, took.Round(time.Millisecond), cronTook.Round(time.Millisecond))
		before := rec.count(tickJob, "end")
		eventually(t, waitLong, func() bool { return rec.count(tickJob, "end") >= before+3 }, "the cron job to keep firing under the new leader")
		// The kubelet restarts a container killed again and again later each time
		// (CrashLoopBackOff, up to 5 minutes): repeated kills wait that long.
		back := "180s"
		if kills > 1 {
			back = "420s"
		}
		if out, err := kubectl(t, "", "-n", installNS, "rollout", "status", "statefulset/elasticjob-scheduler", "--timeout="+back); err != nil {
			t.Errorf("the killed member does not come back: %v\n%s", err, out)
		}
		eventually(t, waitLong, func() bool { return harness.Healthy(httpClient, in.member(t, lead).base)() }, "the killed member to serve again")
		eventually(t, waitLong, func() bool { return in.member(t, lead).api().Role() == "standby" }, "the restarted elasticjob-scheduler-%d to be a standby", lead)
	}
	if kills > 1 {
		slices.Sort(tooks)
		q := func(p float64) time.Duration { return tooks[min(len(tooks)-1, int(p*float64(len(tooks))))] }
		t.Logf("takeovers on Kubernetes over %d kills: p50 %v, p99 %v, max %v", kills, q(0.5).Round(time.Millisecond),
			q(0.99).Round(time.Millisecond), tooks[len(tooks)-1].Round(time.Millisecond))
	}

	// Nothing ran twice: each task started once, and no more runs than the cron's fire times
	// between the first start and now (one every 2 s).
	evs := rec.events(tickJob)
	for task, e := range evs {
		if n := strings.Count(strings.Join(e, ","), "start"); n != 1 {
			t.Errorf("task %s started %d times: %v", task, n, e)
		}
	}
	first := adds.firstAfter(tickJob, start)
	if fires := int(time.Since(first)/(2*time.Second)) + 1; len(evs) > fires {
		t.Errorf("%d runs of the cron job in %v: more than its %d fire times", len(evs), time.Since(first).Round(time.Second), fires)
	}
	eventually(t, waitLong, func() bool { return rec.count(probeJob, "end") >= 1 }, "the trigger's run to end")
	eventually(t, waitLong, func() bool { return rec.count(probeJob, "end") >= kills }, "every kill's trigger run to end")
	if n := rec.count(probeJob, "start"); n != kills {
		t.Errorf("the triggers after the %d kills ran %d times, want %d", kills, n, kills)
	}
	t.Logf("the cron job: %d runs, each once; the new leader's history shows %d ended", len(evs), len(in.member(t, newLead).ended(tickJob)))
}
