package agents

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path"
	"strings"
	"time"

	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/engine/mesos"
	"github.com/ejcloud/elasticjob/engine/mesos/detector"
	"github.com/ejcloud/elasticjob/internal/safeopen"
	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/namespace"
)

// Engine is the Mesos engine (the embedded master and agent, or a real cluster) as the API
// reads it on any scheduler instance, leading or not: task logs and sandboxes from the
// agents' files, the agents for the cluster page and for the registration fit check, all
// through the leading master.
type Engine struct {
	Client *Client
	// URL is the master's address as the settings give it (mesos_url; a zk:// one is
	// redacted when shown), Embedded whether it is this scheduler's own master.
	URL      string
	Embedded bool
	// Checkpoint: the framework asks its agents to checkpoint its executors and tasks
	// (mesos_checkpoint), so that they survive a restart of the scheduler or an agent.
	Checkpoint bool
	// ExecutorApp names the app whose executor runs a job's tasks (ok false: the job is not
	// known); nil, or not known: every executor of the task's namespace is searched.
	ExecutorApp func(ctx context.Context, job string) (app string, ok bool)
}

var (
	_ engine.Declarer    = (*Engine)(nil)
	_ engine.Logs        = (*Engine)(nil)
	_ engine.Sandboxes   = (*Engine)(nil)
	_ engine.ClusterView = (*Engine)(nil)
	_ engine.Inventory   = (*Engine)(nil)
)

// Capabilities: every one; executors are shared by the tasks of an app on an agent, and
// tasks survive restarts when the framework checkpoints.
func (e *Engine) Capabilities() engine.Capabilities {
	return mesos.Capabilities(e.Checkpoint)
}

// Agents lists the active agents with their total resources (the master's list, reused for
// Client.MaxAge).
func (e *Engine) Agents(ctx context.Context) ([]engine.Agent, error) {
	ags, err := e.Client.Agents(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]engine.Agent, 0, len(ags))
	for _, a := range ags {
		if !a.Active {
			continue
		}
		cpus, _ := a.Resources["cpus"].(float64)
		mem, _ := a.Resources["mem"].(float64)
		out = append(out, engine.Agent{ID: a.ID, Hostname: a.Hostname, CPUs: cpus, MemMB: mem})
	}
	return out, nil
}

// Sandboxes lists the sandboxes of the app's live executors on every agent.
func (e *Engine) Sandboxes(ctx context.Context, app string) ([]engine.Sandbox, error) {
	all, err := e.Client.Agents(ctx)
	if err != nil {
		return nil, err
	}
	out := []engine.Sandbox{}
	for _, a := range all {
		execs, err := e.Client.Executors(ctx, a.ID, jobs.ExecutorID(app, ""))
		if err != nil {
			return nil, notFound(err)
		}
		for _, x := range execs {
			if !x.Completed {
				out = append(out, engine.Sandbox{Hostname: x.Hostname, AgentID: x.AgentID, ExecutorID: x.ID, Path: x.Directory})
			}
		}
	}
	return out, nil
}

// TaskLog finds the task's executor sandbox and reads tasks/{taskId}/{stream} there, newest
// executor run first. The job names the app; an id of an older version names the agent, a
// fire's id (jobs.FireTaskID) does not, and then every agent is looked at. stream is
// "stdout", "stderr" or any clean relative path in the task's directory (a download).
func (e *Engine) TaskLog(ctx context.Context, taskID, stream string, offset, length int64) (engine.LogChunk, error) {
	if err := safeopen.Valid(stream); err != nil || stream == "." {
		return engine.LogChunk{}, fmt.Errorf("%w: %q is not a clean relative path", engine.ErrInvalid, stream)
	}
	var c engine.LogChunk
	err := e.eachRun(ctx, taskID, stream, func(agentID, dir string) (bool, error) {
		p := path.Join(dir, "tasks", taskID, stream)
		if !e.Embedded { // the embedded agent opens what it serves without links, non-blocking
			found, err := e.Client.checkRegular(ctx, agentID, p)
			if err != nil {
				return true, refused(err)
			}
			if !found {
				return false, nil
			}
		}
		data, start, size, err := e.Client.Read(ctx, agentID, p, offset, length)
		if errors.Is(err, ErrNotFound) {
			return false, nil
		}
		c = engine.LogChunk{Offset: start, Size: size, Data: data}
		return true, err
	})
	return c, err
}

var _ engine.TaskFiles = (*Engine)(nil)

// TaskFiles lists the directory dir ("" for the task's own) of the task's directory in its
// executor's sandbox, found as TaskLog finds it: the agent's /files/browse, which lists
// links as links and follows none.
func (e *Engine) TaskFiles(ctx context.Context, taskID, dir string) ([]engine.TaskFile, error) {
	if dir == "" {
		dir = "."
	}
	if err := safeopen.Valid(dir); err != nil {
		return nil, fmt.Errorf("%w: %q is not a clean relative path", engine.ErrInvalid, dir)
	}
	var out []engine.TaskFile
	err := e.eachRun(ctx, taskID, "directory "+dir, func(agentID, sandbox string) (bool, error) {
		top := path.Join(sandbox, "tasks", taskID)
		entries, err := e.Client.Browse(ctx, agentID, path.Join(top, dir))
		if errors.Is(err, ErrNotFound) {
			return false, nil
		}
		out = make([]engine.TaskFile, 0, len(entries))
		for _, en := range entries {
			rel := strings.TrimPrefix(strings.TrimPrefix(en.Path, top), "/")
			sec, frac := math.Modf(en.MTime)
			out = append(out, engine.TaskFile{Path: rel, Size: en.Size, Mode: en.Mode,
				MTime: time.Unix(int64(sec), int64(frac*1e9)).UTC()})
		}
		return true, err
	})
	return out, err
}

// eachRun calls f with the sandbox of each executor run that may have run the task, newest
// first, until f finds what it looks for (what, in the error when nothing does).
func (e *Engine) eachRun(ctx context.Context, taskID, what string, f func(agentID, dir string) (bool, error)) error {
	tid, err := jobs.ParseTaskID(taskID)
	if err != nil {
		return fmt.Errorf("%w: %v", engine.ErrInvalid, err)
	}
	app, named := "", false
	if e.ExecutorApp != nil {
		app, named = e.ExecutorApp(ctx, tid.JobName)
	}
	// Only the task's namespace's executors are searched, whether the job
	// is known or not (deleted since its run, say): every sandbox of the
	// agent is a team's to write, and another team could plant
	// tasks/<this task's id>/stdout in its own, served as this task's log.
	ns := namespace.Of(tid.JobName)
	ours := func(appKey string) bool { return namespace.Of(appKey) == ns }
	lookups := func(string) []lookup { return []lookup{{"", ours}} }
	if named {
		lookups = func(agentID string) []lookup {
			l := []lookup{{jobs.ExecutorID(app, agentID), ours}}
			if shared := jobs.HTTPApp(namespace.Default); jobs.IsHTTPApp(app) && app != shared {
				// Before each namespace had an HTTP executor of its own, every
				// namespace's HTTP jobs ran in the default namespace's, which
				// runs no code of a team's: their logs stay there until its
				// sandbox is collected.
				l = append(l, lookup{jobs.ExecutorID(shared, agentID), func(a string) bool { return a == shared }})
			}
			return l
		}
	}
	agentIDs := []string{tid.AgentID}
	if tid.AgentID == "" {
		all, err := e.Client.Agents(ctx)
		if err != nil {
			return notFound(err)
		}
		agentIDs = agentIDs[:0]
		for _, a := range all {
			agentIDs = append(agentIDs, a.ID)
		}
	}
	for _, agentID := range agentIDs {
		for _, l := range lookups(agentID) {
			found, err := e.onAgent(ctx, agentID, l, f)
			if found || (err != nil && tid.AgentID != "") {
				return err
			}
		}
	}
	where := "on agent " + tid.AgentID
	if tid.AgentID == "" {
		where = "on any agent"
	}
	return fmt.Errorf("%w: no %s for task %s %s (the sandbox may have been removed)",
		engine.ErrNotFound, what, taskID, where)
}

// lookup names the executor runs of an agent that may hold a task's directory: those whose
// ids start with prefix, of an app keep takes.
type lookup struct {
	prefix string
	keep   func(appKey string) bool
}

// onAgent tries f on the executor runs of one agent that l names (found false: not there).
func (e *Engine) onAgent(ctx context.Context, agentID string, l lookup, f func(agentID, dir string) (bool, error)) (bool, error) {
	execs, err := e.Client.Executors(ctx, agentID, l.prefix)
	if err != nil {
		return false, notFound(err)
	}
	for i := len(execs) - 1; i >= 0; i-- { // newest runs last
		if app, _, err := jobs.ParseExecutorID(execs[i].ID); err != nil || !l.keep(app) {
			continue
		}
		if found, err := f(agentID, execs[i].Directory); found || err != nil {
			return true, err
		}
	}
	return false, nil
}

// refused marks a log the agent must not be asked for as not found, saying why.
func refused(err error) error {
	if errors.Is(err, ErrNotRegular) {
		return fmt.Errorf("%w: %v: refused (a task's log must be a regular file)", engine.ErrNotFound, err)
	}
	return notFound(err)
}

// notFound marks a missing agent, executor or file as the engine's ErrNotFound.
func notFound(err error) error {
	if errors.Is(err, ErrNotFound) {
		return fmt.Errorf("%w: %v", engine.ErrNotFound, err)
	}
	return err
}

// MasterView is the Mesos part of the cluster page.
type MasterView struct {
	URL      string `json:"url"`
	Embedded bool   `json:"embedded"`
	Master   string `json:"master"` // the leading master read through now (redacted)
}

// ClusterView describes the master and its agents, each with how it enforces resources
// (cgroups, or not); when the master cannot be reached, the error instead of the agents.
func (e *Engine) ClusterView(ctx context.Context) engine.View {
	v := engine.View{Name: "mesos", Detail: MasterView{URL: detector.Redact(e.URL), Embedded: e.Embedded,
		Master: detector.Redact(e.Client.Leader())}}
	ags, err := e.Client.Agents(ctx)
	if err != nil {
		v.Agents, v.AgentsError = []Agent{}, err.Error()
		return v
	}
	e.Client.FillIsolation(ctx, ags)
	v.Agents = ags
	return v
}
