package round

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/estimate"
	"github.com/ejcloud/elasticjob/internal/datadriven"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/offers"
	"github.com/ejcloud/elasticjob/queue"
	"github.com/ejcloud/elasticjob/task"
)

var t0 = time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)

func at(s string) time.Time {
	if s == "" {
		return t0
	}
	n, err := strconv.ParseFloat(s, 64)
	if err != nil {
		panic(err)
	}
	return t0.Add(time.Duration(n * float64(time.Second)))
}

// TestScenarios reads testdata/*.txt: each case is a queue and a cluster
// in the lines before "----", and the plan Decide makes of them after it,
// up to a blank line (internal/datadriven; -rewrite writes the expected
// plans from what Decide returns).
func TestScenarios(t *testing.T) {
	datadriven.Glob(t, "testdata/*.txt", func(t *testing.T, c datadriven.Case) []string {
		return renderPlan(Decide(parseView(t, c.File, c.Line-1, c.Input)))
	})
}

// catalog is a Catalog over maps, for tests.
type catalog struct {
	jobs         map[string]jobs.Config
	apps         map[string]app.Config
	disabledJobs map[string]bool
	disabledApps map[string]bool
}

func newCatalog() *catalog {
	return &catalog{jobs: map[string]jobs.Config{}, apps: map[string]app.Config{}, disabledJobs: map[string]bool{}, disabledApps: map[string]bool{}}
}

func (c *catalog) Lookup(name string) (jobs.Config, app.Config, jobs.Runnability) {
	j, ok := c.jobs[name]
	if !ok {
		return j, app.Config{}, jobs.JobMissing
	}
	f := jobs.Facts{Job: &j, JobDisabled: c.disabledJobs[name], AppDisabled: c.disabledApps[j.AppName]}
	if a, ok := c.apps[j.AppName]; ok {
		f.App = &a
	}
	return j, jobs.AppOf(j, f.App), jobs.CanRun(f)
}

func (c *catalog) App(name string) (app.Config, bool) {
	a, ok := c.apps[name]
	return a, ok
}

func num(s string) float64 {
	if s == "" {
		return 0
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		panic(err)
	}
	return f
}

func res(m map[string]string) offers.Resources {
	return offers.Resources{CPU: offers.CPUs(num(m["cpus"])), MemMB: offers.MemMB(num(m["mem"]))}
}

func parseView(t *testing.T, file string, line int, in []string) View {
	t.Helper()
	cat := newCatalog()
	v := View{Now: at("1000"), Connected: true, Jobs: cat, Running: map[string]map[int]task.Entry{},
		Executors: map[offers.ExecutorKey]bool{}}
	unconfirmed := 0 // 1 + the unconfirmed tasks of jobs the view does not hold (reconciling)
	for n, l := range in {
		w := strings.Fields(l)
		if len(w) == 0 {
			continue
		}
		m := datadriven.KV(w[1:])
		arg := func(i int) string {
			if len(w) <= i {
				t.Fatalf("%s:%d: %q needs more words", file, line+n+1, l)
			}
			return w[i]
		}
		switch w[0] {
		case "now":
			v.Now = at(arg(1))
		case "disconnected":
			v.Connected = false
		case "unavailable": // unavailable until=T: the engine was found unavailable, launches wait until T
			v.Unavailable = at(m["until"])
		case "reconciling": // reconciling until=T: every running task is not confirmed yet (unconfirmed=N more elsewhere)
			v.ReconcileUntil, unconfirmed = at(m["until"]), int(num(m["unconfirmed"]))+1
		case "max":
			v.MaxTasks = int(num(arg(1)))
		case "agent":
			v.Agents = append(v.Agents, Agent{ID: arg(1), Total: res(m), Cluster: m["cluster"]})
		case "offer":
			v.Offers = append(v.Offers, offers.Offer{ID: arg(1), AgentID: m["agent"], Free: res(m), Cluster: m["cluster"]})
		case "cluster": // cluster NAME [drained=1] [max=N] [busy=1]: one of the scheduler's clusters, in order; max: its round's tasks; busy: its ACCEPTs in flight
			v.Clusters = append(v.Clusters, ClusterState{Name: arg(1), Drained: m["drained"] != "", MaxTasks: int(num(m["max"])), Busy: m["busy"] != ""})
		case "nsclusters": // nsclusters NS a,b: the namespace's clusters
			if v.NamespaceClusters == nil {
				v.NamespaceClusters = map[string][]string{}
			}
			v.NamespaceClusters[arg(1)] = strings.Split(arg(2), ",")
		case "executor":
			v.Executors[offers.ExecutorKey{App: arg(1), AgentID: arg(2)}] = true
		case "app":
			cat.apps[arg(1)] = app.Config{AppName: arg(1), CPUCount: num(m["cpus"]), MemoryMB: num(m["mem"])}
			cat.disabledApps[arg(1)] = m["disabled"] != ""
		case "job":
			j := jobs.Config{JobName: arg(1), AppName: m["app"], ShardingTotalCount: int(num(m["shards"])),
				CPUCount: num(m["cpu"]), MemoryMB: num(m["mem"]), JobExecutionType: jobs.Transient, TimeoutSeconds: int(num(m["timeout"]))}
			if m["daemon"] != "" {
				j.JobExecutionType = jobs.Daemon
			}
			if m["http"] != "" { // an HTTP job; without app=, it runs in its namespace's HTTP executor
				j.JobType = jobs.TypeHTTP
			}
			j.Preemptible = m["preemptible"] != ""
			if s := m["clusters"]; s != "" {
				j.Clusters = strings.Split(s, ",")
			}
			j.SpreadClusters = m["spread"] != ""
			cat.jobs[arg(1)] = j
			cat.disabledJobs[arg(1)] = m["disabled"] != ""
		case "ready":
			rd := &queue.Ready{Job: arg(1), Count: max(1, int(num(m["count"]))), Since: at(m["since"])}
			if s := m["notbefore"]; s != "" {
				rd.NotBefore = at(s)
			}
			if s := m["nominal"]; s != "" { // the instants the newest executions serve, oldest first (misfire=true)
				rd = nominalReady(rd, strings.Split(s, ","), at)
			}
			v.Ready = append(v.Ready, rd)
		case "failover":
			f := queue.Failover{Job: arg(1), Item: int(num(m["item"])), Since: at(m["since"]), Attempts: int(num(m["attempts"]))}
			if s := m["notbefore"]; s != "" {
				f.NotBefore = at(s)
			}
			v.Failover = append(v.Failover, f)
		case "running":
			if v.Running[arg(1)] == nil {
				v.Running[arg(1)] = map[int]task.Entry{}
			}
			item := int(num(m["item"]))
			st := task.Running
			if m["staging"] != "" { // launched, not confirmed running yet
				st = task.Staging
			}
			v.Running[arg(1)][item] = task.Entry{TaskID: fmt.Sprintf("%s-task-%d", arg(1), item), State: st, AgentID: m["agent"],
				LaunchedAt: at(m["since"]), KilledBy: m["killedby"]}
		case "retiring": // retiring JOB item=N agent=A since=T [until=T]: a DAEMON shard's old task, its move overlapping until its startBy
			if v.Retiring == nil {
				v.Retiring = map[string]map[int]Retiring{}
			}
			if v.Retiring[arg(1)] == nil {
				v.Retiring[arg(1)] = map[int]Retiring{}
			}
			item := int(num(m["item"]))
			r := Retiring{Entry: task.Entry{TaskID: fmt.Sprintf("%s-old-%d", arg(1), item), State: task.Running, AgentID: m["agent"],
				LaunchedAt: at(m["since"])}}
			if s := m["until"]; s != "" {
				r.Until = at(s)
			}
			v.Retiring[arg(1)][item] = r
		case "typical": // typical JOB runs=N p90=SECONDS: what the job's recent runs took
			if v.Typical == nil {
				v.Typical = map[string]estimate.Typical{}
			}
			p90 := time.Duration(num(m["p90"]) * float64(time.Second))
			n := int(num(m["runs"]))
			v.Typical[arg(1)] = estimate.Typical{Runs: n, P90: p90, Known: n >= estimate.MinRuns}
		case "namespace": // namespace NAME gcpus= gmem= lcpus= lmem= qcpus= qmem= weight=
			if v.Namespaces == nil {
				v.Namespaces = map[string]Capacity{}
			}
			c := Capacity{Guarantee: offers.Resources{CPU: offers.CPUs(num(m["gcpus"])), MemMB: offers.MemMB(num(m["gmem"]))}, Weight: num(m["weight"])}
			if m["lcpus"] != "" {
				c.Limit = &offers.Resources{CPU: offers.CPUs(num(m["lcpus"])), MemMB: offers.MemMB(num(m["lmem"]))}
			}
			if m["qcpus"] != "" {
				c.Quota, c.QuotaName = &offers.Resources{CPU: offers.CPUs(num(m["qcpus"])), MemMB: offers.MemMB(num(m["qmem"]))}, "team-quota"
			}
			if m["closed"] != "" { // closed=NAME: its Kubernetes namespace NAME is missing
				c.Closed = "its Kubernetes namespace " + m["closed"] + " does not exist"
			}
			v.Namespaces[arg(1)] = c
		case "nscluster": // nscluster NS CLUSTER gcpus= gmem= lcpus= lmem=: its capacity on one cluster
			c := v.Namespaces[arg(1)]
			if c.PerCluster == nil {
				c.PerCluster = map[string]ClusterCap{}
			}
			cc := ClusterCap{Guarantee: offers.Resources{CPU: offers.CPUs(num(m["gcpus"])), MemMB: offers.MemMB(num(m["gmem"]))}}
			if m["lcpus"] != "" {
				cc.Limit = &offers.Resources{CPU: offers.CPUs(num(m["lcpus"])), MemMB: offers.MemMB(num(m["lmem"]))}
			}
			c.PerCluster[arg(2)] = cc
			if v.Namespaces == nil {
				v.Namespaces = map[string]Capacity{}
			}
			v.Namespaces[arg(1)] = c
		case "fire": // fire JOB at=SECONDS: the job's next cron fire (its need from the catalog)
			j := cat.jobs[arg(1)]
			a := cat.apps[j.AppName]
			n := int64(j.ShardingTotalCount)
			need := offers.Resources{CPU: offers.CPUs(j.CPUCount)*offers.Milli(n) + offers.CPUs(a.CPUCount), MemMB: offers.MemMB(j.MemoryMB)*n + offers.MemMB(a.MemoryMB)}
			v.Fires = append(v.Fires, Fire{Job: arg(1), At: at(m["at"]), Need: need})
		case "horizon":
			v.Horizon = time.Duration(num(arg(1)) * float64(time.Second))
		case "reservation":
			v.Reservation = Reservation{Key: arg(1), Since: at(m["since"])}
		default:
			t.Fatalf("%s:%d: unknown line %q", file, line+n+1, l)
		}
	}
	if unconfirmed > 0 {
		v.Unconfirmed = map[string]bool{}
		for _, items := range v.Running {
			for _, e := range items {
				v.Unconfirmed[e.TaskID] = true
			}
		}
		for i := range unconfirmed - 1 { // tasks of jobs the view does not hold
			v.Unconfirmed[fmt.Sprintf("elsewhere-%d", i)] = true
		}
	}
	slices.SortFunc(v.Ready, queue.CompareReady)
	slices.SortFunc(v.Failover, func(a, b queue.Failover) int { return queue.CompareFailover(&a, &b) })
	return v
}

func sec(t time.Time) string { return strconv.FormatFloat(t.Sub(t0).Seconds(), 'f', -1, 64) }

func renderPlan(p Plan) []string {
	var out []string
	for _, l := range p.Launches {
		s := fmt.Sprintf("launch %s/%d %s on %s (%s)", l.Request.Job, l.Request.Shard, strings.ToLower(l.Request.Kind.String()), l.OfferID, l.AgentID)
		if l.ChargesExecutor {
			s += " +executor"
		}
		out = append(out, s)
	}
	var flags []string
	for _, f := range []struct {
		on   bool
		name string
	}{{p.Idle, "idle"}, {p.Busy, "busy"}, {p.More, "more"}, {p.Chunked, "chunked"}} {
		if f.on {
			flags = append(flags, f.name)
		}
	}
	if len(flags) > 0 {
		out = append(out, "flags "+strings.Join(flags, " "))
	}
	if p.Decline != nil {
		out = append(out, "decline "+strings.Join(p.Decline, " "))
	}
	if r := p.Reservation; r.Key != "" {
		out = append(out, fmt.Sprintf("reservation %s since=%s need=%s held=%s", r.Key, sec(r.Since), fmtRes(r.Need), fmtRes(r.Held)))
	}
	keys := make([]string, 0, len(p.Waiting))
	for k := range p.Waiting {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		w := p.Waiting[k]
		reason := w.Reason
		if ns, rule := w.HeldBy(); rule != "" {
			reason += " [" + ns + ": " + rule + "]"
		}
		s := fmt.Sprintf("wait %s %s: %s", k, reason, w.Message)
		if !w.Until.IsZero() {
			s += " (until " + sec(w.Until) + ")"
		}
		out = append(out, s)
		if sum := Summary(w, at("1005")); sum != "" {
			out = append(out, "summary at 1005: "+sum)
		}
	}
	for _, pr := range p.Preempt {
		out = append(out, fmt.Sprintf("preempt %s (namespace %s) tasks %s for %s (namespace %s)", pr.Job, pr.Namespace, strings.Join(pr.Tasks, ","), pr.For, pr.ForNamespace))
	}
	for _, s := range p.Drop {
		out = append(out, fmt.Sprintf("drop %s", staleName(s)))
	}
	for _, s := range p.Remove {
		out = append(out, fmt.Sprintf("remove %s", staleName(s)))
	}
	if !p.WakeAt.IsZero() {
		out = append(out, "wake "+sec(p.WakeAt))
	}
	return out
}

func staleName(s Stale) string {
	if s.Fail {
		return fmt.Sprintf("failover/%s/%d", s.Job, s.Item)
	}
	return "ready/" + s.Job
}

// nominalReady is rd with its newest executions serving the instants
// given, oldest first, added as a misfire=true job's fires are.
func nominalReady(rd *queue.Ready, instants []string, at func(string) time.Time) *queue.Ready {
	plain := rd.Count - len(instants)
	next := queue.Ready{Job: rd.Job, Count: plain, Since: rd.Since, NotBefore: rd.NotBefore}
	for _, s := range instants {
		next, _ = queue.Add(&next, queue.Trigger{Misfire: true, At: at(s), Nominal: at(s)}, 0)
	}
	next.Job = rd.Job
	return &next
}
