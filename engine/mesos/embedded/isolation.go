package embedded

import (
	"fmt"
	"log/slog"
	"math"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/ejcloud/elasticjob/cgroups"
)

// Isolation modes of Config.Isolation.
const (
	IsolationAuto = "auto" // cgroup v2, else v1, else none (one warning)
	IsolationV1   = "v1"   // cgroup v1 or fail to start
	IsolationV2   = "v2"   // cgroup v2 or fail to start
	IsolationOff  = "off"  // count resources, enforce nothing
)

// destroyTimeout bounds killing and removing a container's cgroups.
const destroyTimeout = 10 * time.Second

// staleAfter is the age beyond which an empty cgroup of another agent id
// is removed at start: its agent was killed and never started again from
// its work directory (a live agent's containers hold its executors).
const staleAfter = time.Hour

// isolation confines executors in cgroups, or says why it cannot.
//
// Layout, below the hierarchy root (the same path in every v1 hierarchy):
//
//	<root>/<agentID>/                      every container of this agent
//	<root>/<agentID>/ns-<tenant>/          under Tenancy, a tenant's containers:
//	                                       its caps (NamespacePidsMax, NamespaceMemMB)
//	                                       (a tenant's containers are below it, not
//	                                       directly below the agent's group)
//	<root>/<agentID>/<containerID>/        an executor and its tasks: the
//	                                       executor's plus its live tasks' limits
//	<root>/<agentID>/<containerID>/executor   the executor process: its own limits
//	<root>/<agentID>/<containerID>/task-…     one per task, made by the agent
//	                                       before the executor hears of it
//
// The executor learns its container from ELASTICJOB_CGROUP. Containers are
// destroyed (processes killed, groups removed) when their executor ends,
// and at start those an earlier run of this agent left (the agent id is
// kept per work directory, so after a kill -9 they are found again); empty
// groups of other agent ids over staleAfter old are removed too.
type isolation struct {
	mode    cgroups.Mode // V1, V2 or Off
	reason  string       // why Off
	agent   *cgroups.Group
	pidsMax int64                              // per task and for the executor itself; 0: no limit
	capsOf  func(nsGroup string) NamespaceCaps // each tenant's group's: all its containers together
	quota   bool
	log     *slog.Logger
}

// startIsolation detects cgroups and prepares this agent's group, keeping
// the containers of the executors recovered from an earlier run (keep). A
// mode that was asked for explicitly and is not usable is an error; with
// auto, isolation is off and the reason logged once.
func startIsolation(cfg Config, agentID string, keep map[string]bool, log *slog.Logger) (*isolation, error) {
	iso := &isolation{mode: cgroups.Off, pidsMax: max(cfg.PidsMax, 0), quota: cfg.CPUQuota, log: log,
		capsOf: func(g string) NamespaceCaps { return capsOf(cfg, g) }}
	if cfg.Isolation == IsolationOff {
		iso.reason = "turned off by the isolation setting"
		log.Info("resource isolation off: cpus and mem are counted, not enforced", "reason", iso.reason)
		return iso, nil
	}
	h, err := cgroups.Detect(cgroups.Probe{Want: cgroups.Mode(cfg.Isolation), Root: cfg.CgroupsRoot, Mountinfo: cfg.mountinfo})
	if err == nil {
		iso.agent = h.Group(path.Join(cfg.CgroupsRoot, agentID))
		err = iso.reset(keep)
	}
	if err != nil {
		if cfg.Isolation == IsolationV1 || cfg.Isolation == IsolationV2 {
			return nil, fmt.Errorf("local: isolation %s: %w", cfg.Isolation, err)
		}
		iso.agent, iso.reason = nil, err.Error()
		log.Warn("resource isolation off: no writable cgroups, so cpus and mem are counted but not enforced", "reason", iso.reason)
		return iso, nil
	}
	iso.mode = h.Mode()
	log.Info("resource isolation with cgroups", "mode", iso.mode, "controllers", strings.Join(h.Controllers(), ","),
		"cgroup", iso.agent.Path(), "pids_max", iso.pidsMax, "cpu_quota", iso.quota)
	return iso, nil
}

// reset destroys the containers an earlier run left, but those of the
// executors recovered (keep), and (re)creates the agent's group.
func (i *isolation) reset(keep map[string]bool) error {
	n := 0
	var containers []*cgroups.Group
	for _, name := range i.agent.Children() {
		if !strings.HasPrefix(name, nsPrefix) {
			containers = append(containers, i.agent.Child(name))
			continue
		}
		ns := i.agent.Child(name)
		for _, c := range ns.Children() {
			containers = append(containers, ns.Child(c))
		}
	}
	for _, g := range containers {
		if keep[path.Base(g.Path())] {
			continue
		}
		killed, err := g.Kill(destroyTimeout)
		n += killed
		if err == nil {
			err = g.Remove(destroyTimeout)
		}
		if err != nil {
			return fmt.Errorf("remove cgroup %s left by an earlier run: %w", g.Path(), err)
		}
	}
	if n > 0 {
		i.log.Warn("killed processes left in cgroups by an earlier run", "processes", n)
	}
	if n := i.agent.Hierarchy().Group(path.Dir(i.agent.Path())).RemoveStale(time.Now().Add(-staleAfter)); n > 0 {
		i.log.Info("removed empty cgroups of agents gone for over an hour", "cgroups", n)
	}
	if err := i.agent.Create(); err != nil {
		return err
	}
	// The groups' names are the tenants' (ns-NAME), their containers' and
	// their tasks' (task-pay~nightly@-@…): /sys/fs/cgroup is every user's
	// to read, and the API names no other namespace's job or task.
	return i.agent.Unlisted()
}

func (i *isolation) on() bool { return i != nil && i.agent != nil }

// isolators is the agent's isolation flag as a Mesos agent reports it.
func (i *isolation) isolators() string {
	if !i.on() {
		return "posix/cpu,posix/mem"
	}
	s := "cgroups/cpu,cgroups/mem"
	if i.agent.Hierarchy().Has(cgroups.Pids) {
		s += ",cgroups/pids"
	}
	return s
}

// prepare creates e's container and executor groups with the executor's
// limits (tasks are added by resize). On failure the executor runs
// without cgroups (logged).
func (i *isolation) prepare(e *executor) {
	if !i.on() {
		return
	}
	g, err := i.containerOf(e)
	if err == nil {
		err = g.Child("executor").Create()
	}
	if err == nil {
		err = g.Unlisted() // its tasks' groups are named by their ids
	}
	if err == nil {
		container, leaf := e.limits(i.pidsMax, i.quota)
		err = g.SetLimits(container)
		if err == nil {
			err = g.Child("executor").SetLimits(leaf)
		}
	}
	if err != nil {
		i.log.Warn("executor runs without cgroups", "executor_id", e.id, "err", err)
		_ = g.Destroy(destroyTimeout)
		return
	}
	e.cgroup = g
}

// attach gives a recovered executor its container back, if it has one:
// its tasks keep running in their cgroups with their limits.
func (i *isolation) attach(e *executor) {
	if !i.on() {
		return
	}
	if e.nsGroup != "" {
		if g := i.agent.Child(e.nsGroup).Child(e.containerID); g.Exists() {
			e.cgroup = g
			i.resize(e)
			return
		}
	}
	if g := i.agent.Child(e.containerID); g.Exists() { // no tenant, or made before namespaces had groups
		e.cgroup = g
		i.resize(e)
	}
}

// resize sets e's container limits to the executor's plus its live tasks'.
// Lowering memory below what is in use fails in v1; the next resize tries
// again.
func (i *isolation) resize(e *executor) {
	if e.cgroup == nil || e.state == execTerminated || e.containerGone {
		return
	}
	container, _ := e.limits(i.pidsMax, i.quota)
	if err := e.cgroup.SetLimits(container); err != nil {
		i.log.Debug("container limits not changed", "executor_id", e.id, "err", err)
	}
	i.syncTasks(e)
}

// The least an executor is given, as a Mesos agent gives a container
// (MIN_MEMORY, MIN_CPUS): a Go executor needs about 15 MB.
const (
	minExecutorMemMB = 32
	minExecutorCPUs  = 0.01
)

// limits are e's container limits (executor plus live tasks) and those of
// the executor itself (at least minExecutorMemMB and minExecutorCPUs). An
// executor declaring no cpus or mem leaves that resource unlimited.
func (e *executor) limits(pidsMax int64, quota bool) (container, leaf cgroups.Limits) {
	own := Resources{CPUs: scalarSum(e.resources, "cpus"), MemMB: scalarSum(e.resources, "mem")}
	if own.MemMB > 0 {
		own.MemMB = max(own.MemMB, minExecutorMemMB)
	}
	if own.CPUs > 0 {
		own.CPUs = max(own.CPUs, minExecutorCPUs)
	}
	leaf = cgroups.Limits{MemoryBytes: mib(own.MemMB), CPUs: own.CPUs, CPUQuota: quota, Pids: pidsMax}
	container = leaf
	n := int64(1)
	for _, t := range e.tasks {
		if t.released {
			continue
		}
		container.CPUs += scalarSum(t.resources, "cpus")
		container.MemoryBytes += mib(scalarSum(t.resources, "mem"))
		n++
	}
	if leaf.CPUs == 0 {
		container.CPUs = 0
	}
	if leaf.MemoryBytes == 0 {
		container.MemoryBytes = 0
	}
	// Exactly what the executor and its tasks declare: v1 lets a process
	// move into a group over its pids.max (only fork is refused), so the
	// container's limit is the one that binds what all of them hold.
	container.Pids = pidsMax * n
	// The container is an envelope around per-task groups that carry each
	// task's exact memory and CPUs: rounded up, those are rewritten only
	// every few tasks rather than at each launch and end.
	container.MemoryBytes = roundUp(container.MemoryBytes, containerMemStep)
	container.CPUs = math.Round(math.Ceil(container.CPUs/containerCPUStep-1e-9)*containerCPUStep*1000) / 1000
	return container, leaf
}

// Steps the container limits are rounded up to.
const (
	containerMemStep = 64 << 20
	containerCPUStep = 0.1
)

func roundUp(v, step int64) int64 {
	if v <= 0 || step <= 0 {
		return v
	}
	return (v + step - 1) / step * step
}

func mib(mb float64) int64 { return int64(mb * (1 << 20)) }

// argv wraps the executor's command so that it starts in its group.
func (i *isolation) argv(e *executor, argv []string) []string {
	if e.cgroup == nil {
		return argv
	}
	return e.cgroup.Child("executor").Argv(argv)
}

// env tells the executor its container group.
func (i *isolation) env(e *executor) []string {
	if e.cgroup == nil {
		return nil
	}
	return []string{
		"ELASTICJOB_CGROUP=" + e.cgroup.Spec(),
		"ELASTICJOB_CGROUP_PIDS_MAX=" + strconv.FormatInt(i.pidsMax, 10),
		"ELASTICJOB_CGROUP_CPU_QUOTA=" + strconv.FormatBool(i.quota),
	}
}

// oomMessage says whether the executor itself was killed for its memory
// limit.
func (i *isolation) oomMessage(e *executor) string {
	if e.cgroup == nil {
		return ""
	}
	if st := e.cgroup.Child("executor").Stats(); st.OOMKills > 0 {
		return fmt.Sprintf("memory limit of %d MB exceeded", st.MemoryLimit>>20)
	}
	return ""
}

// destroy kills whatever is left in e's container and removes it.
func (i *isolation) destroy(e *executor) {
	if e.cgroup == nil {
		return
	}
	if err := e.cgroup.Destroy(destroyTimeout); err != nil {
		i.log.Warn("executor cgroup not fully removed", "executor_id", e.id, "err", err)
	}
}

// close removes the agent's group once every executor is gone; with
// executors left running (for the agent's next run to recover) it stays.
func (i *isolation) close(running int) {
	if !i.on() || running > 0 {
		return
	}
	if err := i.agent.Destroy(destroyTimeout); err != nil {
		i.log.Warn("agent cgroup not removed", "cgroup", i.agent.Path(), "err", err)
	}
}

// view is the isolation part of /state and Snapshot.
func (i *isolation) view() IsolationView {
	v := IsolationView{Mode: string(i.mode), Isolators: i.isolators(), Reason: i.reason, Enforced: i.on()}
	if i.on() {
		v.Cgroup = i.agent.Path()
		v.Controllers = i.agent.Hierarchy().Controllers()
		v.PidsMax, v.CPUQuota = i.pidsMax, i.quota
	}
	return v
}

// IsolationView says how the agent enforces resources.
type IsolationView struct {
	Mode        string   `json:"mode"`      // v1, v2 or off
	Isolators   string   `json:"isolation"` // as the agent's flags.isolation
	Enforced    bool     `json:"enforced"`
	Reason      string   `json:"reason,omitempty"` // why off
	Cgroup      string   `json:"cgroup,omitempty"` // the agent's group
	Controllers []string `json:"controllers,omitempty"`
	PidsMax     int64    `json:"pids_max,omitempty"`
	CPUQuota    bool     `json:"cpu_quota,omitempty"`
}
