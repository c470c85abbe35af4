package mesos

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
)

// Running executors keep the ExecutorInfo they were started with, and Mesos refuses a task
// whose ExecutorInfo differs from its running executor's (TASK_ERROR "ExecutorInfo is not
// compatible with existing ExecutorInfo"). An executor started by another scheduler instance —
// the previous leader, or this one before a restart — may carry a different ExecutorInfo (its
// own artifact URL for the executor binary, other settings), so the client keeps, per agent,
// the ExecutorInfo of every running executor of the framework: those it launched itself, and
// for running executors it does not know (an offer lists the framework's executors running on
// its agent) those the master reports through its operator API (GET_EXECUTORS). A task for a
// running executor carries that executor's ExecutorInfo; what an offer no longer lists is
// forgotten.

type executorKey struct{ agent, id string }

// adoptRunning gives each task for an executor already running on the offers' agent the
// ExecutorInfo that executor runs with.
func (c *Client) adoptRunning(ctx context.Context, sess *session, frameworkID string, offers []*mesos.Offer, tasks []mesos.TaskInfo) {
	if len(offers) == 0 {
		return
	}
	agent := offers[0].AgentID.Value
	running := map[string]bool{}
	for _, o := range offers {
		for _, id := range o.ExecutorIDs {
			running[id.Value] = true
		}
	}
	c.pruneExecutors(agent, running)
	loaded := false
	for i := range tasks {
		ei := tasks[i].Executor
		if ei == nil || !running[ei.ExecutorID.Value] {
			continue
		}
		key := executorKey{agent, ei.ExecutorID.Value}
		known, ok := c.knownExecutor(key)
		if !ok && !loaded {
			loaded = true
			if err := c.loadExecutors(ctx, sess, frameworkID); err != nil {
				c.log.Warn("cannot read the running executors from the master; launching with this scheduler's ExecutorInfo",
					"executor_id", key.id, "agent_id", agent, "err", err)
			}
			known, ok = c.knownExecutor(key)
		}
		if !ok {
			c.rememberUnknown(key)
			continue
		}
		if known != nil && !known.Equal(ei) {
			if c.firstJoin(key) { // once per executor: after a takeover every task of the old leader's executors joins one
				c.log.Info("a task joins a running executor started with another ExecutorInfo (by another scheduler instance or an earlier run); its tasks reuse that executor's",
					"task_id", tasks[i].TaskID.Value, "executor_id", key.id, "agent_id", agent)
			}
			cp := *known
			tasks[i].Executor = &cp
		}
	}
}

// rememberExecutors records the ExecutorInfo of launched tasks' executors.
func (c *Client) rememberExecutors(tasks []mesos.TaskInfo) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range tasks {
		if ei := tasks[i].Executor; ei != nil {
			key := executorKey{tasks[i].AgentID.Value, ei.ExecutorID.Value}
			if c.execOf(key) == nil {
				cp := *ei
				c.setExec(key, &cp)
			}
		}
	}
}

// execOf and setExec read and set one entry of c.execs (under c.mu).
func (c *Client) execOf(key executorKey) *mesos.ExecutorInfo { return c.execs[key.agent][key.id] }

func (c *Client) setExec(key executorKey, ei *mesos.ExecutorInfo) {
	m := c.execs[key.agent]
	if m == nil {
		m = map[string]*mesos.ExecutorInfo{}
		c.execs[key.agent] = m
	}
	m[key.id] = ei
}

func (c *Client) knownExecutor(key executorKey) (*mesos.ExecutorInfo, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ei, ok := c.execs[key.agent][key.id]
	return ei, ok
}

// rememberUnknown marks a running executor the master did not report, so it is not asked for
// again while it runs (nil: launch with this scheduler's own ExecutorInfo).
func (c *Client) rememberUnknown(key executorKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.execs[key.agent][key.id]; !ok {
		c.setExec(key, nil)
	}
}

// pruneExecutors forgets the executors of agent that are no longer running there.
func (c *Client) pruneExecutors(agent string, running map[string]bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	prune(c.execs, agent, running) // the agent's own entries only: an ACCEPT does this, a round sends hundreds
	prune(c.joined, agent, running)
}

// prune forgets agent's entries of m (agent → executor id) whose executor
// is not running.
func prune[V any](m map[string]map[string]V, agent string, running map[string]bool) {
	for id := range m[agent] {
		if !running[id] {
			delete(m[agent], id)
		}
	}
	if len(m[agent]) == 0 {
		delete(m, agent)
	}
}

// firstJoin reports whether key's executor is joined with its own
// ExecutorInfo for the first time while it runs (logged once).
func (c *Client) firstJoin(key executorKey) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.joined[key.agent][key.id] {
		return false
	}
	if c.joined == nil {
		c.joined = map[string]map[string]bool{}
	}
	m := c.joined[key.agent]
	if m == nil {
		m = map[string]bool{}
		c.joined[key.agent] = m
	}
	m[key.id] = true
	return true
}

// loadExecutors asks the master (operator API GET_EXECUTORS) for the framework's executors and
// records their ExecutorInfo. Other frameworks' entries are skipped undecoded.
func (c *Client) loadExecutors(ctx context.Context, sess *session, frameworkID string) error {
	u := *sess.endpoint
	u.Path, u.RawQuery = "/api/v1", ""
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewBufferString(`{"type":"GET_EXECUTORS"}`))
	if err != nil {
		return fmt.Errorf("GET_EXECUTORS: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("GET_EXECUTORS: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("GET_EXECUTORS: %s: %s", resp.Status, bytes.TrimSpace(b))
	}
	var body struct {
		GetExecutors struct {
			Executors []struct {
				AgentID      mesos.AgentID   `json:"agent_id"`
				ExecutorInfo json.RawMessage `json:"executor_info"`
			} `json:"executors"`
		} `json:"get_executors"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&body); err != nil {
		return fmt.Errorf("GET_EXECUTORS: decode: %w", err)
	}
	found := map[executorKey]*mesos.ExecutorInfo{}
	for _, e := range body.GetExecutors.Executors {
		var owner struct {
			FrameworkID mesos.FrameworkID `json:"framework_id"`
		}
		if json.Unmarshal(e.ExecutorInfo, &owner) != nil || owner.FrameworkID.Value != frameworkID {
			continue
		}
		var ei mesos.ExecutorInfo
		if err := json.Unmarshal(e.ExecutorInfo, &ei); err != nil {
			return fmt.Errorf("GET_EXECUTORS: decode executor of agent %s: %w", e.AgentID.Value, err)
		}
		found[executorKey{e.AgentID.Value, ei.ExecutorID.Value}] = &ei
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, ei := range found {
		c.setExec(k, ei)
	}
	return nil
}
