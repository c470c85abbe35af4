package clusters

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/task"
)

// Accept launches on the offers of one agent, so of one cluster: it is sent to that
// cluster with the offers' and the launches' agent ids as it knows them.
func (e *Engine) Accept(ctx context.Context, offerIDs []string, launches []engine.TaskLaunch, refuse time.Duration) error {
	m, local, err := e.splitOffers(offerIDs)
	if err != nil {
		return err
	}
	own := make([]engine.TaskLaunch, len(launches))
	for i, l := range launches {
		lm, agent, err := e.route(l.AgentID)
		if err != nil {
			return err
		}
		if lm != m {
			return fmt.Errorf("clusters: task %s is for agent %s, not of cluster %s of its offers: %w", l.TaskID, l.AgentID, m.Name, engine.ErrInvalid)
		}
		l.AgentID = agent
		own[i] = l
	}
	e.mu.Lock()
	for _, id := range offerIDs {
		delete(e.offers, id)
	}
	for _, l := range launches {
		e.tasks[l.TaskID] = placed{m: m, agent: l.AgentID}
	}
	e.mu.Unlock()
	return m.Term.Accept(ctx, local, own, refuse)
}

// splitOffers is the one cluster offer ids name, with the ids as it knows them.
func (e *Engine) splitOffers(offerIDs []string) (*member, []string, error) {
	var m *member
	local := make([]string, len(offerIDs))
	for i, id := range offerIDs {
		om, l, err := e.route(id)
		if err != nil {
			return nil, nil, err
		}
		if m != nil && om != m {
			return nil, nil, fmt.Errorf("clusters: offers of clusters %s and %s in one call: %w", m.Name, om.Name, engine.ErrInvalid)
		}
		m, local[i] = om, l
	}
	if m == nil {
		m = e.members[0]
	}
	return m, local, nil
}

// Decline gives each cluster back its offers.
func (e *Engine) Decline(ctx context.Context, offerIDs []string, refuse time.Duration) error {
	by := map[*member][]string{}
	e.mu.Lock()
	for _, id := range offerIDs {
		delete(e.offers, id)
	}
	e.mu.Unlock()
	var errs []error
	for _, id := range offerIDs {
		m, local, err := e.route(id)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		by[m] = append(by[m], local)
	}
	for _, m := range e.members {
		if ids := by[m]; len(ids) > 0 {
			errs = append(errs, wrap(m, m.Term.Decline(ctx, ids, refuse)))
		}
	}
	return errors.Join(errs...)
}

// Suppress and Revive go to every connected cluster; a disconnected one is told again
// when it subscribes (the scheduler revives after every subscription).
func (e *Engine) Suppress(ctx context.Context) error {
	return e.each(func(m *member) error { return m.Term.Suppress(ctx) })
}

func (e *Engine) Revive(ctx context.Context) error {
	return e.each(func(m *member) error { return m.Term.Revive(ctx) })
}

// each calls f on every connected cluster and joins their errors.
func (e *Engine) each(f func(m *member) error) error {
	var errs []error
	for _, m := range e.members {
		e.mu.Lock()
		up := m.connected
		e.mu.Unlock()
		if up {
			errs = append(errs, wrap(m, f(m)))
		}
	}
	return errors.Join(errs...)
}

func wrap(m *member, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("cluster %s: %w", m.Name, err)
}

// Kill goes to the task's cluster.
func (e *Engine) Kill(ctx context.Context, taskID, agentID string) error {
	m, agent, err := e.routeTask(taskID, agentID)
	if err != nil {
		return err
	}
	return wrap(m, m.Term.Kill(ctx, taskID, agent))
}

// Reconcile asks every cluster for its tasks (implicit), or each cluster for the tasks
// on its agents (explicit). A cluster that is disconnected cannot answer: its tasks are
// answered TASK_UNREACHABLE since it was lost, so the scheduler counts them lost once they
// stay so past task_unreachable_timeout and runs their shards elsewhere (docs/clusters.md).
func (e *Engine) Reconcile(ctx context.Context, tasks []engine.TaskRef) error {
	if len(tasks) == 0 {
		return e.each(func(m *member) error { return m.Term.Reconcile(ctx, nil) })
	}
	by := map[*member][]engine.TaskRef{}
	var errs []error
	var down []engine.Status
	for _, t := range tasks {
		m, agent, err := e.routeTask(t.TaskID, t.AgentID)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if st, ok := e.unreachable(m, t.TaskID, t.AgentID, task.ReasonReconciliation); ok {
			down = append(down, st)
			continue
		}
		by[m] = append(by[m], engine.TaskRef{TaskID: t.TaskID, AgentID: agent})
	}
	for _, m := range e.members {
		if refs := by[m]; len(refs) > 0 {
			errs = append(errs, wrap(m, m.Term.Reconcile(ctx, refs)))
		}
	}
	if len(down) > 0 {
		e.mu.Lock()
		out := e.out
		e.mu.Unlock()
		if out != nil {
			// Not on the caller's goroutine: the scheduler reconciles from its loop, which the
			// handler may be waiting on.
			go out.do(func(h engine.Handler) {
				for _, st := range down {
					h.UpdateAsync(ctx, st, func(bool) {})
				}
			})
		}
	}
	return errors.Join(errs...)
}

// unreachable is the update a task on m gets while m is disconnected (ok false: m is
// connected). agent is the task's agent, qualified, as the caller knows it.
func (e *Engine) unreachable(m *member, taskID, agent string, reason task.Reason) (engine.Status, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if m.connected {
		return engine.Status{}, false
	}
	if agent == "" {
		agent = e.tasks[taskID].agent
	}
	return engine.Status{TaskID: taskID, AgentID: agent, State: task.Unreachable, Reason: reason, Source: task.SourceMaster,
		UnreachableSince: m.since, Timestamp: e.clock.Now(), LostCluster: m.Name,
		Message: fmt.Sprintf("cluster %s is unreachable: %s", m.Name, cmpOr(m.lastErr, "not connected"))}, true
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// Shutdown goes to the executor's agent's cluster.
func (e *Engine) Shutdown(ctx context.Context, executorID, agentID string) error {
	m, agent, err := e.route(agentID)
	if err != nil {
		return err
	}
	return wrap(m, m.Term.Shutdown(ctx, executorID, agent))
}

// Capabilities are what every cluster can do: an executor is taken as shared only when
// every cluster shares them (the round then never counts an executor as kept where it is
// not), and a round's ACCEPTs in flight are the fewest any cluster takes, for a launcher
// that does not read the lanes (Lane: each cluster's own).
func (e *Engine) Capabilities() engine.Capabilities {
	caps := make([]engine.Capabilities, len(e.members))
	for i, m := range e.members {
		caps[i] = m.Term.Capabilities()
	}
	return Combined(caps...)
}

// Lane is the cluster of an agent and the ACCEPTs its engine takes in flight together
// (engine.Lanes): each cluster's ACCEPTs go beside the others', so that one slow to launch
// (a Kubernetes API server creating pods at its client's rate) does not hold the others'.
// An agent id that names no configured cluster is in a lane of its own, of one ACCEPT at a
// time: its ACCEPT fails at once (Accept).
func (e *Engine) Lane(agentID string) (string, int) {
	m, _, err := e.route(agentID)
	if err != nil {
		return "?" + agentID, 1
	}
	return m.Name, m.Term.Capabilities().InFlight()
}

// RoundTasks is a cluster's own bound on a launch round's tasks (engine.ClusterRounds:
// Capabilities.RoundTasks); 0 for one not configured.
func (e *Engine) RoundTasks(cluster string) int {
	m := e.byName[cluster]
	if m == nil {
		return 0
	}
	return m.Term.Capabilities().RoundTasks
}

var (
	_ engine.Lanes         = (*Engine)(nil)
	_ engine.ClusterRounds = (*Engine)(nil)
)

// Combined is what clusters of these capabilities can do together (Engine.Capabilities):
// the API's reads of several clusters declare the same.
func Combined(caps ...engine.Capabilities) engine.Capabilities {
	var c engine.Capabilities
	for i, mc := range caps {
		if i == 0 {
			c = mc
			continue
		}
		c.Checkpointing = c.Checkpointing && mc.Checkpointing
		c.ExecutorSharing = c.ExecutorSharing && mc.ExecutorSharing
		c.Logs, c.Sandboxes = c.Logs || mc.Logs, c.Sandboxes || mc.Sandboxes
		c.ClusterView, c.Capacity = c.ClusterView || mc.ClusterView, c.Capacity || mc.Capacity
		c.Accepts = min(c.InFlight(), mc.InFlight())
		c.RoundTasks = 0 // each cluster's own (RoundTasks)
	}
	return c
}

// NamespaceCaps caps a namespace only where every cluster caps it, at the sum of their
// caps: a cluster that caps nothing (Mesos) leaves its namespaces free to use it, and the
// round's caps bound a namespace's work on every cluster together (per-cluster caps are
// not built yet: docs/clusters.md). A namespace is closed only when closed everywhere.
func (e *Engine) NamespaceCaps(namespaces []string) map[string]engine.NamespaceCap {
	var out map[string]engine.NamespaceCap
	for i, m := range e.members {
		caps := m.Term.NamespaceCaps(namespaces)
		if i == 0 {
			out = caps
			continue
		}
		merged := map[string]engine.NamespaceCap{}
		for ns, a := range out {
			b, ok := caps[ns]
			if !ok {
				continue
			}
			merged[ns] = mergeCap(a, b, m.Name)
		}
		out = merged
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func mergeCap(a, b engine.NamespaceCap, cluster string) engine.NamespaceCap {
	out := engine.NamespaceCap{Capped: a.Capped && b.Capped, CPUs: a.CPUs + b.CPUs, MemMB: a.MemMB + b.MemMB,
		Name: a.Name + "; cluster " + cluster + ": " + b.Name}
	if a.Closed != "" && b.Closed != "" {
		out.Closed = a.Closed + "; cluster " + cluster + ": " + b.Closed
	}
	return out
}
