//go:build e2e

package realkube

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ejcloud/elasticjob/e2e/harness"
	"github.com/ejcloud/elasticjob/engine/kube"
)

// Generous deadlines for real pods on a busy 2-core machine; nothing asserts on how long
// anything took.
const (
	waitLong  = 2 * time.Minute
	pollEvery = 100 * time.Millisecond
)

var (
	httpClient = &http.Client{Timeout: 10 * time.Second}
	getOpts    = metav1.GetOptions{}
)

func eventually(t testing.TB, timeout time.Duration, cond func() bool, what string, args ...any) {
	t.Helper()
	harness.Eventually(t, timeout, pollEvery, cond, what, args...)
}

// recorder counts what the recorder app's runs did: each run posts "start TASKID" when it
// begins and "end TASKID" when it ends (and "at=INSTANT TASKID" when it is handed a backfill's
// instant); it also serves the app's package.
type recorder struct {
	srv  *http.Server
	url  string
	mu   sync.Mutex
	runs map[string][]string // task id → events
}

func startRecorder() *recorder {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	r := &recorder{url: "http://" + ln.Addr().String(), runs: map[string][]string{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /event", func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(io.LimitReader(req.Body, 4096))
		ev, task, _ := strings.Cut(strings.TrimSpace(string(b)), " ")
		r.mu.Lock()
		r.runs[task] = append(r.runs[task], ev)
		r.mu.Unlock()
	})
	mux.HandleFunc("GET /app.tgz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(r.app()) })
	r.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = r.srv.Serve(ln) }()
	return r
}

func (r *recorder) close() { _ = r.srv.Close() }

// app is the recorder app: bin/run.sh reports its start and end to the recorder and does
// what the job's parameter says ("sleep N", "fail", "oom").
func (r *recorder) app() []byte {
	script := `#!/bin/sh
rec() { wget -q -O /dev/null --post-data "$1 $ELASTICJOB_TASK_ID" ` + r.url + `/event || echo "recorder unreachable" >&2; }
rec start
if [ -n "$ELASTICJOB_SCHEDULED_TIME" ]; then rec "at=$ELASTICJOB_SCHEDULED_TIME"; fi
echo "shard $ELASTICJOB_SHARDING_ITEM of $ELASTICJOB_JOB_NAME runs"
echo "a line on stderr" >&2
set -- $ELASTICJOB_JOB_PARAMETER
case "$1" in
oom) exec dd if=/dev/zero of=/dev/null bs=512M count=1 ;;
fail) echo "failing on purpose" >&2; rec end; exit 3 ;;
sleep) sleep "$2" ;;
esac
rec end
`
	b, err := harness.TarGz(harness.Scripts(map[string]string{"bin/run.sh": script})...)
	if err != nil {
		panic(err)
	}
	return b
}

// events returns what the runs of a job reported, by task id.
func (r *recorder) events(job string) map[string][]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string][]string{}
	for task, evs := range r.runs {
		if strings.HasPrefix(task, job+"@-@") {
			out[task] = append([]string(nil), evs...)
		}
	}
	return out
}

// count counts the runs of a job that reported ev.
func (r *recorder) count(job, ev string) int {
	n := 0
	for _, evs := range r.events(job) {
		for _, e := range evs {
			if e == ev {
				n++
			}
		}
	}
	return n
}

// scheduler is one scheduler process with the Kubernetes engine.
type scheduler struct {
	*harness.Proc
	t    *testing.T
	base string
	ns   string
	auth func(*http.Request) // the admin's credentials (nil: an open scheduler)
}

// schedOpts shape a scheduler.
type schedOpts struct {
	ns         string
	kubeconfig string   // default: the admin's
	extra      []string // more flags
	port       int      // 0: a free one
	urls       string   // kube_scheduler_url (default: its own)
}

func startScheduler(t *testing.T, name string, o schedOpts) *scheduler {
	t.Helper()
	if o.port == 0 {
		o.port = harness.FreePort(t)
	}
	if o.kubeconfig == "" {
		o.kubeconfig = kubeconfig
	}
	args := append([]string{"--data-dir", filepath.Join(t.TempDir(), "data"), "--http-port", strconv.Itoa(o.port),
		"--kube-config", o.kubeconfig, "--kube-namespace", o.ns, "--kube-host-network", "true", "--kube-image-pull-policy", "Never",
		"--kube-executor-image", executorImage, "--offer-refuse-seconds", "1s", "--reconcile-wait", "5s"}, o.extra...)
	if o.urls != "" {
		args = append(args, "--kube-scheduler-url", o.urls)
	}
	dir := t.TempDir()
	s := &scheduler{Proc: harness.Start(t, name, filepath.Join(dir, name+".log"), exec.Command(schedulerBin, args...)), t: t,
		base: "http://127.0.0.1:" + strconv.Itoa(o.port), ns: o.ns}
	t.Cleanup(func() {
		s.Stop(t)
		if t.Failed() {
			t.Logf("%s log (%s):\n%s", name, s.LogPath, harness.Tail(s.Log(), 150))
		}
	})
	s.AwaitReady(t, waitLong, pollEvery, harness.Healthy(httpClient, s.base), "%s to answer /healthz", name)
	return s
}

func (s *scheduler) api() harness.API {
	return harness.API{T: s.t, Base: s.base, Client: httpClient, Auth: s.auth}
}

func (s *scheduler) must(method, path string, body any) []byte {
	s.t.Helper()
	return s.api().Must(method, path, body)
}

// subscribed reports whether the scheduler's engine has synced its informers.
func (s *scheduler) subscribed() bool { return strings.Contains(s.Log(), "msg=subscribed") }

// publishApp publishes the recorder app, uploaded as a hosted package when hosted, else at
// the recorder's URL.
func (s *scheduler) publishApp(name string, hosted bool) {
	s.t.Helper()
	a := map[string]any{"appName": name, "bootstrapScript": "bin/run.sh", "cpuCount": 0.05, "memoryMB": 64}
	if !hosted {
		a["appURL"] = rec.url + "/app.tgz"
	}
	s.must(http.MethodPost, "/api/app", a)
	if hosted {
		req, err := http.NewRequest(http.MethodPut, s.base+"/api/app/"+name+"/package?filename=app.tgz", strings.NewReader(string(rec.app())))
		if err != nil {
			s.t.Fatal(err)
		}
		if s.auth != nil {
			s.auth(req)
		}
		code, body, _, err := harness.Send(httpClient, req)
		if err != nil || code/100 != 2 {
			s.t.Fatalf("upload the package: %d %s %v", code, body, err)
		}
	}
}

// job is a job registration.
type job map[string]any

// transient returns a TRANSIENT job of app with shards shards running param.
func transient(name, app string, shards int, param string) job {
	return job{"jobName": name, "appName": app, "jobExecutionType": "TRANSIENT", "shardingTotalCount": shards,
		"jobParameter": param, "cpuCount": 0.05, "memoryMB": 32}
}

func (s *scheduler) register(j job) {
	s.t.Helper()
	s.must(http.MethodPost, "/api/job/register", map[string]any(j))
}

func (s *scheduler) trigger(name string) {
	s.t.Helper()
	s.must(http.MethodPost, "/api/job/trigger", name)
}

// execution is one row of the execution history.
type execution struct {
	TaskID       string  `json:"taskId"`
	ShardingItem int     `json:"shardingItem"`
	Success      bool    `json:"success"`
	CompleteTime string  `json:"completeTime"`
	FailureCause *string `json:"failureCause"`
}

func (s *scheduler) executions(name string) []execution {
	s.t.Helper()
	var page struct {
		Rows []execution `json:"rows"`
	}
	if err := json.Unmarshal(s.must(http.MethodGet, "/api/job/events/executions?per_page=500&jobName="+name, nil), &page); err != nil {
		s.t.Fatal(err)
	}
	return page.Rows
}

// ended returns the job's executions that have ended.
func (s *scheduler) ended(name string) []execution {
	var out []execution
	for _, e := range s.executions(name) {
		if e.CompleteTime != "" {
			out = append(out, e)
		}
	}
	return out
}

// trace is one status trace row.
type trace struct {
	TaskID       string    `json:"taskId"`
	State        string    `json:"state"`
	Message      string    `json:"message"`
	CreationTime time.Time `json:"creationTime"`
}

func (s *scheduler) traces(name string) []trace {
	s.t.Helper()
	var page struct {
		Rows []trace `json:"rows"`
	}
	if err := json.Unmarshal(s.must(http.MethodGet, "/api/job/events/statusTraces?per_page=500&jobName="+name, nil), &page); err != nil {
		s.t.Fatal(err)
	}
	return page.Rows
}

// waiting returns the waiting reason of the job's ready execution ("" when none is queued).
func (s *scheduler) waiting(name string) (queued bool, why string) {
	s.t.Helper()
	var rows []struct {
		JobName string         `json:"jobName"`
		Waiting map[string]any `json:"waiting"`
	}
	if err := json.Unmarshal(s.must(http.MethodGet, "/api/job/tasks/ready", nil), &rows); err != nil {
		s.t.Fatal(err)
	}
	for _, r := range rows {
		if r.JobName == name {
			b, _ := json.Marshal(r.Waiting)
			return true, string(b)
		}
	}
	return false, ""
}

// namespace makes a namespace for one test's pods and deletes it (and waits for its pods
// to be gone) at cleanup.
func namespace(t *testing.T) string {
	t.Helper()
	name := "ej-" + strings.Trim(regexp.MustCompile(`[^a-z0-9]+`).ReplaceAllString(strings.ToLower(t.Name()), "-"), "-")
	if len(name) > 50 {
		name = name[:50]
	}
	return kubeNamespace(t, name)
}

// pods lists the task pods of a job ("": all) in ns.
func pods(t testing.TB, ns, job string) []corev1.Pod {
	t.Helper()
	sel := kube.LabelManagedBy + "=" + kube.ManagedBy
	if job != "" {
		sel += "," + kube.LabelJob + "=" + job
	}
	l, err := admin.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		t.Fatal(err)
	}
	return l.Items
}

func deletePod(t *testing.T, ns, name string) {
	t.Helper()
	zero := int64(1)
	if err := admin.CoreV1().Pods(ns).Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
}

func decode(t testing.TB, b []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
}
