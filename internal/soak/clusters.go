package soak

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ejcloud/elasticjob/internal/loopback"
)

// ShapeClusters is the many-cluster shape's name (-shape); ShapeClustersReal
// its variant on real engines (Clusters.KubeHome).
const (
	ShapeClusters     = "clusters"
	ShapeClustersReal = "clusters-real"
)

// The clusters shape's cluster names, the home one first.
const (
	ClusterLocal  = "local"  // the scheduler's embedded engine
	ClusterRemote = "remote" // a Mesos master of its own (mesos-local)
	ClusterReal   = "real"   // a real Mesos 1.11 master and agent (Clusters.MesosHome)
	ClusterKube   = "kube"   // a real single-node Kubernetes 1.37 (Clusters.KubeHome)
	ClusterKwok   = "kwok"   // a second Kubernetes control plane whose nodes kwok plays
)

// The clusters shape's own fault kinds. Losing the remote cluster is the
// other shapes' agents-killed (mesos-local, its master and agents, killed
// and restarted), and cutting the scheduler from it their
// leader-cut-from-master: the checker reads those as it always has.
const (
	ClusterDrained = "cluster-drained" // a cluster drained, then undrained
	NamespaceMoved = "namespace-moved" // the namespace's clusters changed, then set back
)

// clustersUnreachable is the shape's task_unreachable_timeout. The remote
// cluster is lost for up to half as long again, so some losses end before
// it (the cluster back, its tasks reconciled) and some after (its tasks
// counted lost, the shards failed over to the other cluster). A cut
// (maxCut) always heals in time for the scheduler to subscribe again and
// reconcile within it: a run that finished while the scheduler was cut
// from its cluster is heard of as finished once the link is back, where
// one counted lost first would be failed in history although it ran.
const clustersUnreachable = 10 * time.Second

// maxCut is the longest cut from a Mesos cluster. The cut is not the
// scheduler's outage: the client subscribes again only at its next
// retry after the heal (resubscribedBy), 6.3 s at the latest after a cut
// of up to 3.15 s, but up to 12.7 s, past clustersUnreachable, after one
// of 6 s. The rest of the bound is the reconciliation's.
const maxCut = 3 * time.Second

// resubscribedBy is the latest the Mesos client subscribes again after
// its stream was cut for hold (every attempt meanwhile refused at once):
// it retries after jittered waits in [d/2, d], d doubling from lo up to hi
// (engine/mesos), so its k-th retry comes between the sums of the first k
// halves and of the first k d's, and the first retry whose earliest time
// is past the heal comes by its latest.
func resubscribedBy(hold, lo, hi time.Duration) time.Duration {
	var earliest, latest time.Duration
	for d := max(lo, time.Millisecond); ; d = min(2*d, hi) {
		earliest, latest = earliest+d/2, latest+d
		if earliest >= hold {
			return latest
		}
	}
}

// kubeLostAfter is the Kubernetes clusters' lost_after. Their losses are
// their API servers' (stopped, or cut from the scheduler): the pods go on
// running and report their ends once it is back, so no loss may count
// their tasks lost, and a stopped API server's restart (start.sh, on a
// loaded machine) may take longer than a hold.
const kubeLostAfter = time.Minute

// realLostAfter is the real Mesos cluster's lost_after. Its loss is its
// master's (killed, then restarted): the agent and its executors go on,
// and the master's restart followed by the client's next retry
// (resubscribedBy) may outlast task_unreachable_timeout, which would
// count lost a run that ended meanwhile.
const realLostAfter = time.Minute

// Clusters is the many-cluster shape: one scheduler (its embedded store
// and history) on two clusters at once, its embedded engine (local, whose
// executors run the soak's script as real processes: recordScript) and a
// Mesos master of its own (remote: mesos-local's simulated agents, which
// record their runs themselves), reached through a proxy as a real Mesos
// cluster is through mesos_url. The jobs name no cluster, so they run
// where their namespace says (home: either, remote first); the
// workload moves some of its changers between the clusters
// (Workload.Clusters). Its faults: the remote cluster lost (mesos-local
// killed, restarted), the scheduler cut from it (the proxy), a cluster
// drained then undrained, the namespace moved to one cluster or to all
// in the other order, then back.
//
// With MesosHome, a third cluster (real): a real Mesos 1.11 master and one
// agent of that build, reached through a proxy of its own, whose
// executors (the project's, fetched from the scheduler) run each shard as
// a real process of the soak app; one more fault, its master killed and
// restarted (master-killed).
//
// With KubeHome as well (the clusters-real shape), two Kubernetes
// clusters more: kube, the build's real single-node Kubernetes (root,
// one per machine: run it under the machine's lock), whose task pods run
// the executor image and the soak app's script, and kwok, a second
// control plane of that build (etcd and an API server on ports of their
// own, no kubelet) whose two nodes kwok plays (kwokCluster). Every real
// run, on any cluster, posts its start and end to a recorder in the
// soak's process (httpRecorder), which serves the app; kwok's runs are
// recorded from a watch of its pods. Each Kubernetes cluster is reached
// through a proxy of its own. More faults: an API server stopped, then
// started again (apiserver-stopped), and the scheduler cut from one
// (leader-cut-from-apiserver); the drains and moves reach them as they
// reach the others.
type Clusters struct {
	Bin    string
	Dir    string
	RunLog string
	Seed   uint64
	Log    *slog.Logger
	// MesosHome is a Mesos 1.11 build (bin/mesos-master, bin/mesos-agent,
	// libexec/mesos) for the real cluster ("": none).
	MesosHome string
	// KubeHome is a Kubernetes build (scripts/start.sh, stop.sh, bin.sh,
	// certs.sh) for the kube and kwok clusters ("": none), KwokBin the
	// kwok binary playing the kwok cluster's nodes.
	KubeHome, KwokBin string

	mesos   *proc
	toMesos *proxy
	s       *sched
	data    string

	master *proc       // the real cluster's (nil: none)
	agent  *mesosAgent // its agent
	toReal *proxy
	realAt string // its master's URL

	rec    *httpRecorder
	kube   *Kube // the real Kubernetes (its cluster only: no schedulers of its own)
	toKube *proxy
	kwok   *kwokCluster
	toKwok *proxy
}

var _ Shape = (*Clusters)(nil)

func (c *Clusters) Name() string {
	if c.KubeHome != "" {
		return ShapeClustersReal
	}
	return ShapeClusters
}

// Names are the clusters, the home one first (Workload.Clusters).
func (c *Clusters) Names() []string {
	out := []string{ClusterLocal, ClusterRemote}
	if c.MesosHome != "" {
		out = append(out, ClusterReal)
	}
	if c.KubeHome != "" {
		out = append(out, ClusterKube, ClusterKwok)
	}
	return out
}

// home is the default namespace's clusters between moves: the remote
// cluster first, so that most runs are mesos-local's simulated ones and
// the real processes on this machine are the fewer, and the others take
// the work whenever remote is lost, cut off or drained.
//
// kwok, whose runs are as cheap, comes next; the clusters of real
// processes after it.
func (c *Clusters) home() []string {
	out := []string{ClusterRemote}
	if c.KubeHome != "" {
		out = append(out, ClusterKwok)
	}
	if c.MesosHome != "" {
		out = append(out, ClusterReal)
	}
	if c.KubeHome != "" {
		out = append(out, ClusterKube)
	}
	return append(out, ClusterLocal)
}

// destinations are where namespace-moved sends the namespace: each
// cluster alone, or all of them in the order opposite to home.
func (c *Clusters) destinations() [][]string {
	var out [][]string
	for _, n := range c.Names() {
		out = append(out, []string{n})
	}
	all := slices.Clone(c.home())
	slices.Reverse(all)
	return append(out, all)
}

func (c *Clusters) Start(ctx context.Context) error {
	c.data = filepath.Join(c.Dir, "data")
	if err := os.MkdirAll(c.data, 0o755); err != nil {
		return err
	}
	var mesosURL string
	var err error
	if c.mesos, mesosURL, err = startSimMesos(ctx, c.Bin, c.Dir, c.RunLog, "", c.Seed); err != nil {
		return err
	}
	host, path, _ := strings.Cut(strings.TrimPrefix(mesosURL, "http://"), "/")
	if c.toMesos, err = newProxy(host); err != nil {
		return err
	}
	url := "http://" + c.toMesos.addr()
	if path != "" {
		url += "/" + path
	}
	list := filepath.Join(c.Dir, "clusters.yaml")
	doc := fmt.Sprintf("clusters:\n  - {name: %s, engine: embedded}\n  - {name: %s, engine: mesos, mesos_url: %q}\n", ClusterLocal, ClusterRemote, url)
	if c.MesosHome != "" {
		if err := c.startReal(ctx); err != nil {
			return err
		}
		doc += fmt.Sprintf("  - {name: %s, engine: mesos, mesos_url: %q, lost_after: %s}\n", ClusterReal, "http://"+c.toReal.addr(), realLostAfter)
	}
	var kubeArgs []string
	if c.KubeHome != "" {
		entries, err := c.startKube(ctx)
		if err != nil {
			return err
		}
		doc += entries
		kubeArgs = []string{"--kube-host-network", "true", "--kube-image-pull-policy", "Never", "--kube-executor-image", c.kube.imageRef,
			"--reconcile-wait", "5s"}
	}
	if err := os.WriteFile(list, []byte(doc), 0o600); err != nil {
		return err
	}
	port, err := loopback.Port()
	if err != nil {
		return err
	}
	c.s = &sched{base: fmt.Sprintf("http://127.0.0.1:%d", port), mesos: c.toMesos}
	// Real processes on the embedded agent: no cgroups and no tenant users
	// (the script appends to the run log outside its sandbox), a small
	// agent, and an unreachable task lost within a fault's hold.
	c.s.p = &proc{name: "scheduler", bin: filepath.Join(c.Bin, "scheduler"), log: filepath.Join(c.Dir, "scheduler.log"),
		args: []string{"--data-dir", c.data, "--http-port", strconv.Itoa(port), "--clusters-file", list,
			"--allow-file-app-urls", "true", "--time-zone", "UTC", "--log-level", "info",
			"--embedded-cpus", "2", "--embedded-mem-mb", "4096", "--isolation", "off", "--tenant-isolation", "off",
			"--offer-refuse-seconds", "1s", "--task-unreachable-timeout", clustersUnreachable.String()}}
	if kubeArgs != nil { // the task pods reach the scheduler on the host's network
		c.s.p.args = append(c.s.p.args, append(kubeArgs, "--kube-scheduler-url", c.s.base)...)
	}
	if err := c.s.p.start(); err != nil {
		return err
	}
	if err := (&ZK{}).await(ctx, c.s); err != nil {
		return err
	}
	if err := c.awaitClusters(ctx, time.Minute); err != nil {
		return err
	}
	return c.moveNamespace(ctx, c.home()...)
}

// startReal starts the real cluster: a master keeping its registry in the
// replicated log (a restarted master knows its agent) that marks a silent
// agent unreachable after 3 × 2 s pings, and one agent.
func (c *Clusters) startReal(ctx context.Context) error {
	for _, b := range []string{"bin/mesos-master", "bin/mesos-agent", "libexec/mesos"} {
		if _, err := os.Stat(filepath.Join(c.MesosHome, b)); err != nil {
			return fmt.Errorf("soak: clusters: no Mesos build at %s (-mesos-home): %w", c.MesosHome, err)
		}
	}
	mport, err := loopback.Port()
	if err != nil {
		return err
	}
	c.master = &proc{name: "mesos-master", bin: filepath.Join(c.MesosHome, "bin/mesos-master"), log: filepath.Join(c.Dir, "mesos-master.log"),
		args: []string{"--ip=127.0.0.1", "--hostname=127.0.0.1", "--port=" + strconv.Itoa(mport),
			"--work_dir=" + filepath.Join(c.Dir, "mesos-master"), "--registry=replicated_log", "--quorum=1",
			"--agent_ping_timeout=2secs", "--max_agent_ping_timeouts=3"}}
	if err := c.master.start(); err != nil {
		return err
	}
	c.realAt = "http://127.0.0.1:" + strconv.Itoa(mport)
	aport, err := loopback.Port()
	if err != nil {
		return err
	}
	c.agent = &mesosAgent{name: "mesos-agent1", port: aport, home: c.MesosHome, dir: c.Dir, res: "cpus:2;mem:4096;disk:10240;ports:[31000-31999]", mport: mport}
	if err := c.agent.start(true); err != nil {
		return err
	}
	if c.toReal, err = newProxy("127.0.0.1:" + strconv.Itoa(mport)); err != nil {
		return err
	}
	return c.awaitReal(ctx, 2*time.Minute)
}

// awaitReal waits until the real master has its agent registered.
func (c *Clusters) awaitReal(ctx context.Context, bound time.Duration) error {
	deadline := time.Now().Add(bound)
	for time.Now().Before(deadline) {
		var st masterState
		if getJSON(ctx, c.realAt+"/state", &st) == nil && st.ActivatedSlaves >= 1 {
			return nil
		}
		if !sleep(ctx, 200*time.Millisecond) {
			return ctx.Err()
		}
	}
	b, _ := os.ReadFile(c.master.log)
	return fmt.Errorf("soak: clusters: the real master's agent not registered within %s: %s", bound, tail(b, 600))
}

// clusterView is the part of GET /api/operate/clusters the shape reads.
type clusterView struct {
	Name      string `json:"name"`
	Connected *bool  `json:"connected"`
	Agents    int    `json:"agents"`
}

// awaitClusters waits until every cluster is connected with an agent:
// the first fires have somewhere to run on each.
func (c *Clusters) awaitClusters(ctx context.Context, bound time.Duration) error {
	deadline := time.Now().Add(bound)
	var last []clusterView
	n := len(c.Names())
	for time.Now().Before(deadline) {
		last = nil
		if getJSON(ctx, c.s.base+"/api/operate/clusters", &last) == nil && len(last) == n {
			up := 0
			for _, v := range last {
				if v.Agents > 0 && (v.Connected == nil || *v.Connected) {
					up++
				}
			}
			if up == n {
				return nil
			}
		}
		if !sleep(ctx, 200*time.Millisecond) {
			return ctx.Err()
		}
	}
	return fmt.Errorf("soak: clusters: the %d clusters not all connected with an agent within %s (last: %+v)", n, bound, last)
}

func (c *Clusters) APIs() []string { return []string{c.s.base} }

// HistoryAPI: the embedded history, read through the scheduler.
func (c *Clusters) HistoryAPI() string { return c.s.base }

func (c *Clusters) Faults() []FaultKind {
	kinds := []FaultKind{
		{Name: "agents-killed", MinHold: 2 * time.Second, MaxHold: clustersUnreachable * 3 / 2, Inject: func(ctx context.Context, _ *rand.Rand) (func(context.Context) error, string, error) {
			c.mesos.kill()
			return func(ctx context.Context) error {
				if err := c.mesos.start(); err != nil {
					return err
				}
				return c.awaitClusters(ctx, time.Minute)
			}, "cluster " + ClusterRemote + " (mesos-local)", nil
		}},
		{Name: "leader-cut-from-master", MinHold: time.Second, MaxHold: maxCut, Inject: func(ctx context.Context, _ *rand.Rand) (func(context.Context) error, string, error) {
			c.toMesos.set(true, 0)
			return func(context.Context) error { c.toMesos.set(false, 0); return nil }, "cluster " + ClusterRemote, nil
		}},
		{Name: ClusterDrained, MinHold: 3 * time.Second, MaxHold: 10 * time.Second, Inject: func(ctx context.Context, rng *rand.Rand) (func(context.Context) error, string, error) {
			names := c.Names()
			name := names[rng.IntN(len(names))]
			if err := c.call(ctx, http.MethodPut, "/api/operate/clusters/"+name+"/drain", nil); err != nil {
				return nil, "", err
			}
			return func(ctx context.Context) error {
				return c.call(ctx, http.MethodDelete, "/api/operate/clusters/"+name+"/drain", nil)
			}, name, nil
		}},
		{Name: NamespaceMoved, MinHold: 3 * time.Second, MaxHold: 10 * time.Second, Inject: func(ctx context.Context, rng *rand.Rand) (func(context.Context) error, string, error) {
			dest := c.destinations()
			to := dest[rng.IntN(len(dest))]
			if err := c.moveNamespace(ctx, to...); err != nil {
				return nil, "", err
			}
			return func(ctx context.Context) error { return c.moveNamespace(ctx, c.home()...) },
				"default to " + strings.Join(to, ","), nil
		}},
	}
	if c.MesosHome != "" {
		kinds = append(kinds, FaultKind{Name: MasterKilled, MinHold: time.Second, MaxHold: 6 * time.Second, Inject: func(ctx context.Context, _ *rand.Rand) (func(context.Context) error, string, error) {
			c.master.kill()
			return func(ctx context.Context) error {
				if err := c.master.start(); err != nil {
					return err
				}
				return c.awaitReal(ctx, time.Minute)
			}, "cluster " + ClusterReal + " (mesos-master)", nil
		}})
	}
	if c.KubeHome != "" {
		kinds = append(kinds, c.kubeFaults()...)
	}
	return kinds
}

// moveNamespace sets the default namespace's clusters.
func (c *Clusters) moveNamespace(ctx context.Context, to ...string) error {
	return c.call(ctx, http.MethodPut, "/api/namespaces/default", map[string]any{"clusters": append([]string{}, to...)})
}

// call sends one request to the scheduler, again for up to 30 s while it
// answers neither 2xx nor a 4xx but 429 (an undrain of a cluster not drained
// succeeds: Heal undrains both).
func (c *Clusters) call(ctx context.Context, method, path string, body any) error {
	var b []byte
	if body != nil {
		var err error
		if b, err = json.Marshal(body); err != nil {
			return err
		}
	}
	var last error
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		done, err := send(ctx, method, c.s.base+path, b)
		if done {
			return err
		}
		last = err
		if !sleep(ctx, 300*time.Millisecond) {
			return ctx.Err()
		}
	}
	return fmt.Errorf("soak: clusters: %w", last)
}

func (c *Clusters) Heal(ctx context.Context) error {
	var errs []error
	c.toMesos.set(false, 0)
	_ = c.s.p.signal(syscall.SIGCONT)
	if !c.mesos.running() {
		if err := c.mesos.start(); err != nil {
			return err
		}
		errs = append(errs, c.awaitClusters(ctx, time.Minute))
	}
	for _, name := range c.Names() {
		errs = append(errs, c.call(ctx, http.MethodDelete, "/api/operate/clusters/"+name+"/drain", nil))
	}
	if c.master != nil && !c.master.running() {
		errs = append(errs, c.master.start(), c.awaitReal(ctx, time.Minute))
	}
	if c.agent != nil && c.agent.p != nil && !c.agent.p.running() {
		errs = append(errs, c.agent.start(false))
	}
	errs = append(errs, c.healKube(ctx), c.moveNamespace(ctx, c.home()...))
	return errors.Join(errs...)
}

// Stop stops the scheduler, then the executors its embedded agent keeps
// running for the next start (--recover=cleanup, and any process left in
// its sandboxes), mesos-local, the real Mesos cluster and the
// Kubernetes ones.
func (c *Clusters) Stop() error {
	var err error
	if c.s != nil && c.s.p != nil {
		c.s.p.stop(10 * time.Second)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		out, cerr := exec.CommandContext(ctx, c.s.p.bin, append(c.s.p.args, "--recover=cleanup")...).CombinedOutput()
		cancel()
		if cerr != nil {
			err = fmt.Errorf("soak: clusters: scheduler --recover=cleanup: %w: %s", cerr, tail(out, 600))
		}
		killUnder(filepath.Join(c.data, "mesos"))
		c.s = nil
	}
	if c.mesos != nil {
		c.mesos.stop(10 * time.Second)
		c.mesos = nil
	}
	if c.toMesos != nil {
		c.toMesos.close()
		c.toMesos = nil
	}
	if c.agent != nil {
		if c.agent.p != nil {
			c.agent.p.stop(10 * time.Second)
		}
		c.agent.killSandboxes()
		c.agent = nil
	}
	if c.master != nil {
		c.master.stop(10 * time.Second)
		c.master = nil
	}
	if c.toReal != nil {
		c.toReal.close()
		c.toReal = nil
	}
	return errors.Join(err, c.stopKube())
}

// killUnder kills every process whose working directory is under dir
// (the embedded agent's sandboxes).
func killUnder(dir string) int {
	n := 0
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		cwd, err := os.Readlink(p + "/cwd")
		if err != nil || !strings.HasPrefix(cwd, dir+"/") {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(p)); err == nil && syscall.Kill(pid, syscall.SIGKILL) == nil {
			n++
		}
	}
	return n
}
