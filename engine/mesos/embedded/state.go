package embedded

import (
	"encoding/json"
	"net/http"
	"sort"
	"strconv"
	"strings"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
)

// Resources is a compact view of a resource pool.
type Resources struct {
	CPUs   float64 `json:"cpus"`
	MemMB  float64 `json:"mem"`
	DiskMB float64 `json:"disk"`
	Ports  string  `json:"ports,omitempty"`
}

// State is a point-in-time view of the cluster for a console page.
type State struct {
	AgentID    string          `json:"agent_id"`
	Hostname   string          `json:"hostname"`
	URL        string          `json:"url"`
	Total      Resources       `json:"total"`
	Free       Resources       `json:"free"`
	Frameworks []FrameworkView `json:"frameworks"`
	Executors  []ExecutorView  `json:"executors"`
	Tasks      []TaskView      `json:"tasks"`
	Isolation  IsolationView   `json:"isolation"`
}

// FrameworkView describes a registered framework.
type FrameworkView struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Connected bool   `json:"connected"`
}

// ExecutorView describes a running executor.
type ExecutorView struct {
	ID          string `json:"id"`
	FrameworkID string `json:"framework_id"`
	PID         int    `json:"pid"`
	Directory   string `json:"directory"`
	State       string `json:"state"`
}

// TaskView describes a task the agent still tracks.
type TaskView struct {
	ID          string `json:"id"`
	FrameworkID string `json:"framework_id"`
	ExecutorID  string `json:"executor_id"`
	State       string `json:"state"`
}

// Snapshot returns the current state.
func (c *Cluster) Snapshot() State {
	c.mu.Lock()
	defer c.mu.Unlock()
	total := c.totalResources()
	s := State{
		AgentID:   c.AgentID(),
		Hostname:  c.agents[0].hostname,
		URL:       "http://" + c.hostPort,
		Total:     summary(total),
		Free:      summary(total.Minus(c.used()...)),
		Isolation: c.isolationView(),
	}
	for _, fw := range c.sortedFrameworks() {
		s.Frameworks = append(s.Frameworks, FrameworkView{ID: fw.id, Name: fw.info.Name, Connected: fw.sub != nil})
		for _, e := range sortedExecutors(fw.executors) {
			s.Executors = append(s.Executors, ExecutorView{ID: e.id, FrameworkID: fw.id, PID: e.pid, Directory: e.dir, State: e.state.String()})
		}
		for _, t := range sortedTasks(fw.tasks) {
			v := TaskView{ID: t.info.TaskID.Value, FrameworkID: fw.id, State: t.state.String()}
			if t.exec != nil {
				v.ExecutorID = t.exec.id
			}
			s.Tasks = append(s.Tasks, v)
		}
	}
	return s
}

// sortedExecutors lists executors by id, then agent order.
func sortedExecutors(m map[execKey]*executor) []*executor {
	out := make([]*executor, 0, len(m))
	for _, e := range m {
		out = append(out, e)
	}
	sortExecutors(out)
	return out
}

// liveExecutors lists the executors of a that have not terminated, by id.
func (a *agent) liveExecutors() []*executor {
	out := make([]*executor, 0, len(a.live))
	for e := range a.live {
		out = append(out, e)
	}
	sortExecutors(out)
	return out
}

func sortExecutors(es []*executor) {
	sort.Slice(es, func(i, j int) bool {
		if es[i].id != es[j].id {
			return es[i].id < es[j].id
		}
		return es[i].agent.index < es[j].agent.index
	})
}

// handleState serves an agent-like /state (plus a master-like "slaves"
// list) so a scheduler finds sandboxes as it would on a real cluster.
func (o *operatorAPI) handleState(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		writeError(w, errorf(http.StatusMethodNotAllowed, "Expecting 'GET', received '%s'", r.Method))
		return
	}
	o.c.mu.Lock()
	body := o.stateJSON()
	o.c.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(body)
}

// handleSlaves serves the master's /slaves: the agents only, much cheaper
// than /state on a large (simulated) cluster.
func (o *operatorAPI) handleSlaves(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		writeError(w, errorf(http.StatusMethodNotAllowed, "Expecting 'GET', received '%s'", r.Method))
		return
	}
	o.c.mu.Lock()
	body := jsonObj{"slaves": o.slavesJSON(), "recovered_slaves": []jsonObj{}}
	o.c.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(body)
}

type jsonObj = map[string]any

// slavesJSON lists the agents as a master's /state and /slaves do.
func (o *operatorAPI) slavesJSON() []jsonObj {
	pid := "slave(1)@" + o.c.hostPort
	out := make([]jsonObj, 0, len(o.c.agents))
	for _, a := range o.c.agents {
		out = append(out, jsonObj{"id": a.id, "hostname": a.hostname, "pid": pid, "port": o.c.port(),
			"resources": summary(a.total), "used_resources": summary(a.usedResources()), "active": true})
	}
	return out
}

func (o *operatorAPI) stateJSON() jsonObj {
	pid := "slave(1)@" + o.c.hostPort
	first := o.c.agents[0]
	var fws []jsonObj
	for _, fw := range o.c.sortedFrameworks() {
		var execs []jsonObj
		for _, e := range sortedExecutors(fw.executors) {
			execs = append(execs, executorJSON(e))
		}
		fws = append(fws, jsonObj{"id": fw.id, "name": fw.info.Name, "user": fw.info.User,
			"active": fw.sub != nil, "executors": orEmpty(execs), "completed_executors": o.c.completedJSON(fw.id, fw.completed)})
	}
	return jsonObj{
		"flags": o.c.flags(), "isolation": o.c.isolationView(),
		"id": first.id, "hostname": first.hostname, "pid": pid, "version": "1.11.0",
		"resources": summary(first.total), "unreserved_resources": summary(first.total),
		"frameworks": orEmpty(fws), "completed_frameworks": o.completedFrameworksJSON(),
		"slaves": o.slavesJSON(), "master_id": o.c.masterID,
	}
}

func executorJSON(e *executor) jsonObj {
	var queued, running, done []jsonObj
	for _, t := range sortedTasks(e.tasks) {
		if t.launched {
			running = append(running, taskJSON(e, t))
		} else {
			queued = append(queued, taskJSON(e, t))
		}
	}
	for _, t := range e.finished {
		done = append(done, taskJSON(e, t))
	}
	return jsonObj{"id": e.id, "name": e.info.GetName(), "source": e.info.GetSource(),
		"framework_id": e.fw.id, "container": e.containerID, "directory": e.dir, "pid": e.pid,
		"state": e.state.String(), "resources": summary(e.resources),
		"tasks": orEmpty(running), "queued_tasks": orEmpty(queued), "completed_tasks": orEmpty(done)}
}

func taskJSON(e *executor, t *task) jsonObj {
	return jsonObj{"id": t.info.TaskID.Value, "name": t.info.Name, "framework_id": e.fw.id,
		"executor_id": e.id, "slave_id": e.agent.id, "state": t.state.String(),
		"resources": summary(t.resources), "statuses": []mesos.TaskStatus{t.status}}
}

func orEmpty(v []jsonObj) []jsonObj {
	if v == nil {
		return []jsonObj{}
	}
	return v
}

func (h *host) isolationView() IsolationView {
	if h.iso == nil {
		return IsolationView{Mode: "off", Isolators: "posix/cpu,posix/mem", Reason: "agent not started"}
	}
	return h.iso.view()
}

// flags are the agent's settings as a Mesos agent's /state reports them
// (a subset; all values strings).
func (h *host) flags() map[string]string {
	iso := h.isolationView()
	return map[string]string{
		"isolation":                       iso.Isolators,
		"cgroups_root":                    h.cfg.CgroupsRoot,
		"cgroups_enable_cfs":              strconv.FormatBool(h.cfg.CPUQuota),
		"work_dir":                        h.cfg.WorkDir,
		"executor_registration_timeout":   mesosDuration(h.cfg.ExecutorRegistrationTimeout),
		"executor_shutdown_grace_period":  mesosDuration(h.cfg.ExecutorShutdownGrace),
		"recover":                         h.cfg.Recover,
		"recovery_timeout":                mesosDuration(h.cfg.RecoveryTimeout),
		"executor_reregistration_timeout": mesosDuration(h.cfg.ExecutorReregistrationTimeout),
	}
}

// handleMetrics serves /metrics/snapshot as a Mesos master does, with a few
// of its gauges, plus three of this master's own: status updates waiting
// for the framework's acknowledgement, events queued on frameworks'
// streams (a scheduler that cannot keep up shows here) and the tasks
// accepted for launch since it started (a counter).
func (o *operatorAPI) handleMetrics(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		writeError(w, errorf(http.StatusMethodNotAllowed, "Expecting 'GET', received '%s'", r.Method))
		return
	}
	o.c.mu.Lock()
	m := map[string]float64{"master/slaves_active": float64(len(o.c.agents)), "master/outstanding_offers": float64(len(o.c.offers)),
		"master/tasks_staging": 0, "master/tasks_starting": 0, "master/tasks_running": 0, "embedded/tasks_launched": o.c.launched}
	for _, fw := range o.c.frameworks {
		if fw.sub != nil {
			m["master/frameworks_active"]++
			m["embedded/queued_events"] += float64(fw.sub.queued())
		}
		for _, t := range fw.tasks {
			switch t.state {
			case mesos.TASK_STAGING, mesos.TASK_STARTING, mesos.TASK_RUNNING:
				m["master/tasks_"+strings.ToLower(strings.TrimPrefix(t.state.String(), "TASK_"))]++
			}
			m["embedded/unacknowledged_updates"] += float64(len(t.pending))
		}
	}
	o.c.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(m)
}
