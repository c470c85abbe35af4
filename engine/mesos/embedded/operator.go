package embedded

import (
	"encoding/json"
	"io"
	"net/http"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
)

// operatorAPI serves the operator and read-only endpoints of the master
// and the agent: the v1 operator call, /state, /slaves, /metrics/snapshot
// and /files/read (state.go, files.go). It keeps no state of its own: it
// reads the cluster's under Cluster.mu.
type operatorAPI struct{ c *Cluster }

// handleOperator serves the one call of the v1 operator API (POST /api/v1) the scheduler uses:
// GET_EXECUTORS, the ExecutorInfo of every executor on the agent, as a real master answers it.
// A scheduler instance that takes over from another reads it to send tasks for a running
// executor with that executor's ExecutorInfo (see the mesos package).
func (o *operatorAPI) handleOperator(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		writeError(w, errorf(http.StatusMethodNotAllowed, "Expecting 'POST', received '%s'", r.Method))
		return
	}
	var call struct {
		Type string `json:"type"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&call); err != nil {
		writeError(w, errorf(http.StatusBadRequest, "Failed to parse body into Call: %v", err))
		return
	}
	if call.Type != "GET_EXECUTORS" {
		writeError(w, errorf(http.StatusBadRequest, "operator call %q is not supported by the embedded master (only GET_EXECUTORS)", call.Type))
		return
	}
	type entry struct {
		AgentID      mesos.AgentID       `json:"agent_id"`
		ExecutorInfo *mesos.ExecutorInfo `json:"executor_info"`
	}
	executors := []entry{}
	o.c.mu.Lock()
	for _, fw := range o.c.sortedFrameworks() {
		for _, e := range sortedExecutors(fw.executors) {
			info := e.info
			executors = append(executors, entry{AgentID: mesos.AgentID{Value: e.agent.id}, ExecutorInfo: &info})
		}
	}
	o.c.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"type": "GET_EXECUTORS",
		"get_executors": map[string]any{"executors": executors}})
}
