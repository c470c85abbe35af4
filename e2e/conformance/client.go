package conformance

import (
	"encoding/json"
	"net/http"
	"net/url"
	"testing"

	"github.com/ejcloud/elasticjob/e2e/harness"
)

// api is a scheduler's HTTP API for one case.
func (s *Scheduler) api(t testing.TB) harness.API {
	c := s.Client
	if c == nil {
		c = http.DefaultClient
	}
	return harness.API{T: t, Base: s.Base, Client: c}
}

func (s *Scheduler) must(t testing.TB, method, path string, body any) []byte {
	t.Helper()
	return s.api(t).Must(method, path, body)
}

func (s *Scheduler) getJSON(t testing.TB, path string, v any) {
	t.Helper()
	if err := json.Unmarshal(s.must(t, http.MethodGet, path, nil), v); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
}

// job is a job registration (the API's field names).
type job map[string]any

// transient is a TRANSIENT job of the suite's app, shards shards running param.
func transient(name string, shards int, param string) job {
	return job{"jobName": name, "appName": appName, "jobExecutionType": "TRANSIENT", "shardingTotalCount": shards,
		"jobParameter": param, "cpuCount": 0.05, "memoryMB": 32}
}

// appName is the suite's app, publishApp publishes it.
const appName = "conformance"

func (s *Scheduler) publishApp(t testing.TB, r *recorder) {
	t.Helper()
	s.must(t, http.MethodPost, "/api/app", map[string]any{"appName": appName, "appURL": r.appURL(),
		"bootstrapScript": "bin/run.sh", "cpuCount": 0.05, "memoryMB": 64, "appCacheEnable": true})
}

func (s *Scheduler) register(t testing.TB, j job) {
	t.Helper()
	s.must(t, http.MethodPost, "/api/job/register", map[string]any(j))
}

func (s *Scheduler) trigger(t testing.TB, name string) {
	t.Helper()
	s.must(t, http.MethodPost, "/api/job/trigger", name)
}

// execution is one row of the execution history.
type execution struct {
	TaskID       string  `json:"taskId"`
	ShardingItem int     `json:"shardingItem"`
	Success      bool    `json:"success"`
	CompleteTime string  `json:"completeTime"`
	FailureCause *string `json:"failureCause"`
}

func (e execution) cause() string {
	if e.FailureCause == nil {
		return ""
	}
	return *e.FailureCause
}

// ended lists the job's executions that have ended.
func (s *Scheduler) ended(t testing.TB, name string) []execution {
	t.Helper()
	var page struct {
		Rows []execution `json:"rows"`
	}
	s.getJSON(t, "/api/job/events/executions?per_page=500&jobName="+url.QueryEscape(name), &page)
	var out []execution
	for _, e := range page.Rows {
		if e.CompleteTime != "" {
			out = append(out, e)
		}
	}
	return out
}

// trace is one status trace row.
type trace struct {
	TaskID  string `json:"taskId"`
	State   string `json:"state"`
	Message string `json:"message"`
}

func (s *Scheduler) traces(t testing.TB, name string) []trace {
	t.Helper()
	var page struct {
		Rows []trace `json:"rows"`
	}
	s.getJSON(t, "/api/job/events/statusTraces?per_page=500&jobName="+url.QueryEscape(name), &page)
	return page.Rows
}

// states is the set of states the traces hold for a task.
func (s *Scheduler) states(t testing.TB, name, task string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, tr := range s.traces(t, name) {
		if tr.TaskID == task {
			out[tr.State] = true
		}
	}
	return out
}

// running lists the job's running task ids.
func (s *Scheduler) running(t testing.TB, name string) []string {
	t.Helper()
	var rows []struct {
		JobName string `json:"jobName"`
		TaskID  string `json:"taskId"`
	}
	s.getJSON(t, "/api/job/tasks/running", &rows)
	var out []string
	for _, r := range rows {
		if r.JobName == name {
			out = append(out, r.TaskID)
		}
	}
	return out
}

// AgentOf is the agent (or node) the running task runs on, as the
// scheduler's running tasks name it ("": not running).
func (s *Scheduler) AgentOf(t testing.TB, task string) string {
	t.Helper()
	var rows []struct {
		TaskID  string `json:"taskId"`
		AgentID string `json:"agentId"`
	}
	s.getJSON(t, "/api/job/tasks/running", &rows)
	for _, r := range rows {
		if r.TaskID == task {
			return r.AgentID
		}
	}
	return ""
}

// failover counts the job's shards waiting to run again.
func (s *Scheduler) failover(t testing.TB, name string) int {
	t.Helper()
	var rows []struct {
		JobName string `json:"jobName"`
	}
	s.getJSON(t, "/api/job/tasks/failover", &rows)
	n := 0
	for _, r := range rows {
		if r.JobName == name {
			n++
		}
	}
	return n
}

// wait is why the job's pending execution waits (nil when none is queued or it has no
// reason yet).
type wait struct {
	Reason  string `json:"reason"`
	Message string `json:"message"`
	Summary string `json:"summary"`
}

func (s *Scheduler) waiting(t testing.TB, name string) *wait {
	t.Helper()
	var rows []struct {
		JobName string `json:"jobName"`
		Waiting *wait  `json:"waiting"`
	}
	s.getJSON(t, "/api/job/tasks/ready", &rows)
	for _, r := range rows {
		if r.JobName == name && r.Waiting != nil && r.Waiting.Reason != "" {
			return r.Waiting
		}
	}
	return nil
}

// log reads a task's stream ("stdout", "stderr"); code is the answer's status.
func (s *Scheduler) log(t testing.TB, task, stream string) (int, string) {
	t.Helper()
	code, body := s.api(t).Do(http.MethodGet, "/api/job/logs/"+url.PathEscape(task)+"?format=json&stream="+stream, nil)
	var chunk struct {
		Data string `json:"data"`
	}
	_ = json.Unmarshal(body, &chunk)
	return code, chunk.Data
}

// clusterPage is GET /api/operate/cluster: the engine's name and declared capabilities,
// and the page as text (every engine names its agents or nodes in it).
func (s *Scheduler) clusterPage(t testing.TB) (engine string, caps map[string]bool, page string) {
	t.Helper()
	body := s.must(t, http.MethodGet, "/api/operate/cluster", nil)
	var p struct {
		Engine struct {
			Name         string          `json:"name"`
			Capabilities map[string]bool `json:"capabilities"`
		} `json:"engine"`
	}
	if err := json.Unmarshal(body, &p); err != nil {
		t.Fatalf("GET /api/operate/cluster: %v", err)
	}
	return p.Engine.Name, p.Engine.Capabilities, string(body)
}

// sandbox is one of GET /api/operate/sandbox.
type sandbox struct {
	AgentID    string `json:"agentId"`
	ExecutorID string `json:"executorId"`
	Path       string `json:"path"`
}

func (s *Scheduler) sandboxes(t testing.TB, app string) []sandbox {
	t.Helper()
	var out []sandbox
	s.getJSON(t, "/api/operate/sandbox?appName="+url.QueryEscape(app), &out)
	return out
}
