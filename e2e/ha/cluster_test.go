//go:build e2e

package ha

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/e2e/harness"
)

// cluster is a test's scheduler instances on one registry namespace and one
// mesos-local, with the directory its jobs write into.
type cluster struct {
	t       *testing.T
	dir     string
	zk      string // ZooKeeper connect string
	ns      string // zk_namespace
	session time.Duration
	lease   time.Duration // how long a leader acts after its last confirmation (timeline_test.go)
	etcd    *etcdShape    // set: the registry is etcd, a member in each instance (etcd_test.go)
	history bool          // the instances keep history (SQLite; replicated on etcd), not event_trace_rdb_driver=none
	mesos   *mesosLocal
	out     string // OUT of the chaos app: OUT/runs.log

	mu    sync.Mutex
	insts []*instance
}

// newCluster starts mesos-local; instances are added with add.
func newCluster(t *testing.T, zk string, session time.Duration) *cluster {
	t.Helper()
	dir := t.TempDir()
	c := &cluster{t: t, dir: dir, zk: zk, session: session, lease: session / 3,
		ns: fmt.Sprintf("ej-ha-%s-%d", strings.ToLower(t.Name()), time.Now().UnixNano()), out: filepath.Join(dir, "out")}
	if err := os.Mkdir(c.out, 0o755); err != nil {
		t.Fatal(err)
	}
	c.mesos = startMesosLocal(t, dir)
	t.Cleanup(func() {
		if keep := os.Getenv("EJ_HA_LOGS"); keep != "" {
			c.keepLogs(filepath.Join(keep, t.Name()))
		}
		if t.Failed() {
			if rs, err := os.ReadFile(filepath.Join(c.out, "runs.log")); err == nil {
				t.Logf("runs.log:\n%s", harness.Tail(string(rs), 200))
			}
			for _, in := range c.instances() {
				for i, l := range in.lives {
					t.Logf("%s life %d log (%s):\n%s", in.name, i, l.LogPath, harness.Tail(l.Log(), 80))
				}
			}
		}
	})
	return c
}

// keepLogs copies the processes' logs and runs.log to dir (EJ_HA_LOGS=DIR
// keeps them for every test, passed or failed).
func (c *cluster) keepLogs(dir string) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		c.t.Logf("keep logs: %v", err)
		return
	}
	files, _ := filepath.Glob(filepath.Join(c.dir, "*.log"))
	for _, f := range append(files, filepath.Join(c.out, "runs.log")) {
		if b, err := os.ReadFile(f); err == nil {
			_ = os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o644)
		}
	}
}

// instance is one scheduler of the cluster across its restarts (lives).
type instance struct {
	c       *cluster
	name    string
	port    int
	base    string
	dataDir string
	zk      string // what it connects to (the ensemble, or proxies)
	mesos   string
	lives   []*harness.Proc
	member  etcdPorts // registry=etcd: its member's ports
	join    string    // registry=etcd: set, the next life joins the running cluster with these etcd_peers (etcdops_test.go)
}

// instOpts overrides an instance's ZooKeeper and Mesos addresses (proxies).
type instOpts struct {
	zk, mesos string
}

// add starts one more scheduler and waits until it answers /healthz.
func (c *cluster) add(o instOpts) *instance {
	c.t.Helper()
	c.mu.Lock()
	n := len(c.insts) + 1
	c.mu.Unlock()
	in := &instance{c: c, name: "s" + strconv.Itoa(n), port: harness.FreePort(c.t), zk: c.zk, mesos: c.mesos.url}
	in.base = fmt.Sprintf("http://127.0.0.1:%d", in.port)
	in.dataDir = filepath.Join(c.dir, in.name)
	if o.zk != "" {
		in.zk = o.zk
	}
	if o.mesos != "" {
		in.mesos = o.mesos
	}
	c.mu.Lock()
	c.insts = append(c.insts, in)
	c.mu.Unlock()
	in.start()
	return in
}

func (c *cluster) instances() []*instance {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*instance(nil), c.insts...)
}

// start begins a new life of the instance (same port and data directory).
func (in *instance) start() {
	in.c.t.Helper()
	in.launch()
	in.awaitReady()
}

// launch starts the process of a new life without waiting for it.
func (in *instance) launch() {
	t := in.c.t
	t.Helper()
	args := []string{"--data-dir", in.dataDir, "--http-port", strconv.Itoa(in.port),
		"--mesos-url", in.mesos, "--allow-file-app-urls", "true", "--time-zone", "UTC", "--log-level", "info"}
	if !in.c.history {
		args = append(args, "--event-trace-rdb-driver", "none")
	}
	args = append(args, in.registryArgs()...)
	logPath := filepath.Join(in.c.dir, fmt.Sprintf("%s-%d.log", in.name, len(in.lives)))
	p := harness.Start(t, in.name, logPath, exec.Command(filepath.Join(binDir, "scheduler"), args...))
	in.lives = append(in.lives, p)
	t.Cleanup(func() { p.Stop(t) })
}

func (in *instance) registryArgs() []string {
	if in.c.etcd != nil {
		return in.etcdArgs()
	}
	return []string{"--zk-servers", in.zk, "--zk-namespace", in.c.ns, "--zk-session-timeout", in.c.session.String()}
}

// awaitReady waits for the current life to answer /healthz.
func (in *instance) awaitReady() {
	in.c.t.Helper()
	in.life().AwaitReady(in.c.t, waitLong, pollEvery, in.healthy, "%s to answer /healthz", in.name)
}

// life is the current (last started) process of the instance.
func (in *instance) life() *harness.Proc { return in.lives[len(in.lives)-1] }

func (in *instance) healthy() bool {
	code, _, _, err := in.request(http.MethodGet, "/healthz", nil)
	return err == nil && code == http.StatusOK
}

var httpClient = &http.Client{Timeout: 30 * time.Second}

// request sends a request; body is raw for string and []byte, else JSON.
// Transport errors are returned (a test may expect them).
func (in *instance) request(method, path string, body any) (int, []byte, http.Header, error) {
	req, err := harness.NewRequest(method, in.base+path, body)
	if err != nil {
		return 0, nil, nil, err
	}
	return harness.Send(httpClient, req)
}

// must sends a request, retrying while the cluster answers 503 (no leader
// for a moment) within waitLong, and fails the test on anything but 2xx.
func (in *instance) must(method, path string, body any) []byte {
	t := in.c.t
	t.Helper()
	var code int
	var out []byte
	var err error
	ok := poll(waitLong, func() bool {
		code, out, _, err = in.request(method, path, body)
		return err == nil && code != http.StatusServiceUnavailable
	})
	if !ok || code/100 != 2 {
		t.Fatalf("%s %s on %s: %d %s %v", method, path, in.name, code, out, err)
	}
	return out
}

func (in *instance) getJSON(path string, v any) {
	in.c.t.Helper()
	if err := json.Unmarshal(in.must(http.MethodGet, path, nil), v); err != nil {
		in.c.t.Fatalf("GET %s: %v", path, err)
	}
}

// clusterView is GET /api/operate/cluster.
type clusterView struct {
	Role   string `json:"role"`
	Leader *struct {
		URL string `json:"url"`
	} `json:"leader"`
	Standbys []struct {
		URL string `json:"url"`
	} `json:"standbys"`
}

func (in *instance) view() (clusterView, error) {
	var v clusterView
	code, out, _, err := in.request(http.MethodGet, "/api/operate/cluster", nil)
	if err != nil {
		return v, err
	}
	if code != http.StatusOK {
		return v, fmt.Errorf("GET /api/operate/cluster: %d %s", code, out)
	}
	return v, json.Unmarshal(out, &v)
}

// job is the API's job body, for the chaos app.
type job struct {
	JobName            string  `json:"jobName"`
	AppName            string  `json:"appName"`
	JobExecutionType   string  `json:"jobExecutionType"`
	Cron               string  `json:"cron,omitempty"`
	ShardingTotalCount int     `json:"shardingTotalCount"`
	JobParameter       string  `json:"jobParameter"`
	CPUCount           float64 `json:"cpuCount"`
	MemoryMB           float64 `json:"memoryMB"`
	Failover           bool    `json:"failover"`
	Misfire            bool    `json:"misfire"`
}

// publish publishes the chaos app as "chaos".
func (c *cluster) publish(via *instance) {
	c.t.Helper()
	via.must(http.MethodPost, "/api/app", map[string]any{"appName": "chaos", "appURL": appURL,
		"bootstrapScript": "bin/chaos.sh", "cpuCount": 0.1, "memoryMB": 64, "appCacheEnable": true})
}

// newJob is a transient job of the chaos app sleeping sleep seconds per run.
func (c *cluster) newJob(name, cron string, shards int, sleep float64, misfire bool) job {
	return job{JobName: name, AppName: "chaos", JobExecutionType: "TRANSIENT", Cron: cron, ShardingTotalCount: shards,
		JobParameter: fmt.Sprintf("%s %g", c.out, sleep), CPUCount: 0.05, MemoryMB: 16, Misfire: misfire}
}

func (c *cluster) register(via *instance, j job) {
	c.t.Helper()
	via.must(http.MethodPost, "/api/job/register", j)
}

// idle reports whether no job has anything running, ready or failing over,
// as in reads them (in the order work moves through them).
func (in *instance) idle() bool {
	var ready, failover, running []json.RawMessage
	for _, q := range []struct {
		path string
		v    *[]json.RawMessage
	}{{"/api/job/tasks/ready", &ready}, {"/api/job/tasks/failover", &failover}, {"/api/job/tasks/running", &running}} {
		code, out, _, err := in.request(http.MethodGet, q.path, nil)
		if err != nil || code != http.StatusOK || json.Unmarshal(out, q.v) != nil {
			return false
		}
	}
	return len(ready)+len(failover)+len(running) == 0
}

// drain waits until the cluster's queues are empty after `after` (when the
// last fire of every job has passed) as the leader sees them.
func (c *cluster) drain(after time.Time) {
	c.t.Helper()
	sleepUntil(after)
	eventually(c.t, 2*waitLong, func() bool {
		l := c.leader()
		return l != nil && l.idle()
	}, "the cluster to be idle (no ready, failover or running work)")
}
