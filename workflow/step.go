package workflow

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/ejcloud/elasticjob/jobs"
	"github.com/ejcloud/elasticjob/task"
)

// Execution is what is known of a RUNNING node's execution of its job.
type Execution struct {
	// Done: every shard ended; Success: every one finished.
	Done, Success bool
	Shards        []Shard
	// Lost, when set, says why the execution can no longer end (it was
	// dropped from its job's queues: the job was updated, disabled or
	// deleted while it waited).
	Lost string
}

// Input is what Step decides on besides the run.
type Input struct {
	Now time.Time
	// Executions by node id, for RUNNING nodes whose execution ended (or
	// was lost); a RUNNING node absent here is still running.
	Executions map[string]Execution
	// Refused says, by job, why a node's job cannot take an execution now
	// (deleted, DAEMON, disabled, its queue full); a job absent may.
	Refused map[string]string
}

// ActionKind is what the engine must do for a node.
type ActionKind int

const (
	// Start queues the node's execution under Key with Parameter and Inputs.
	Start ActionKind = iota + 1
	// Kill kills the node's running tasks and drops its queued execution.
	Kill
)

// Action is one thing Step asks the engine to do, once the new run state
// is committed (Start's queueing is part of that commit).
type Action struct {
	Kind ActionKind
	Node string
	Job  string
	Key  string
	// Parameter is the node's jobParameter override (nil: the job's own).
	Parameter *string
	Inputs    jobs.Inputs
}

// Step advances an active run by what is known: it begins a QUEUED run
// when begin is true, copies ended executions into their nodes, starts
// the nodes whose rule is met, skips those whose rule can no longer be,
// applies a cancel or the timeout, and ends the run when no node is left
// to run. It is pure: the engine commits the run it returns together with
// the Start actions, then carries out the Kill actions.
func Step(r Run, begin bool, in Input) (Run, []Action) {
	if r.State.Final() {
		return r, nil
	}
	r.Nodes = append([]NodeRun(nil), r.Nodes...)
	now := in.Now.UTC()
	if r.State == RunQueued {
		if r.Cancel == nil && !begin {
			return r, nil
		}
		if r.Cancel == nil {
			r.State, r.StartedAt = RunRunning, now
		}
	}
	if r.Cancel == nil && r.TimeoutSeconds > 0 && !r.StartedAt.IsZero() &&
		!now.Before(r.StartedAt.Add(time.Duration(r.TimeoutSeconds)*time.Second)) {
		r.Cancel = &Cancel{At: now, Reason: fmt.Sprintf("the run timed out after %ds", r.TimeoutSeconds), TimedOut: true}
	}
	collect(&r, in)
	var acts []Action
	if r.Cancel != nil {
		acts = cancelNodes(&r, now)
	} else {
		acts = advance(&r, in)
	}
	finish(&r, now)
	return r, acts
}

// Deadline is when an active run times out (zero: never).
func (r Run) Deadline() time.Time {
	if r.TimeoutSeconds <= 0 || r.StartedAt.IsZero() || r.State.Final() {
		return time.Time{}
	}
	return r.StartedAt.Add(time.Duration(r.TimeoutSeconds) * time.Second)
}

// collect copies ended executions into their RUNNING nodes.
func collect(r *Run, in Input) {
	for i := range r.Nodes {
		n := &r.Nodes[i]
		ex, ok := in.Executions[n.ID]
		if n.State != NodeRunning || !ok || !(ex.Done || ex.Lost != "") {
			continue
		}
		n.EndedAt = in.Now.UTC()
		if ex.Lost != "" && r.Cancel != nil {
			n.State, n.Message = NodeCancelled, "cancelled before it ran: "+r.Cancel.Reason
			continue
		}
		if ex.Lost != "" {
			n.State, n.Message = NodeFailed, ex.Lost
			continue
		}
		n.Shards = append([]Shard(nil), ex.Shards...)
		sort.Slice(n.Shards, func(a, b int) bool { return n.Shards[a].Item < n.Shards[b].Item })
		n.Outputs = nil
		for _, sh := range n.Shards {
			if !sh.StartedAt.IsZero() && (n.StartedAt.IsZero() || sh.StartedAt.Before(n.StartedAt)) {
				n.StartedAt = sh.StartedAt
			}
			if !sh.EndedAt.IsZero() {
				n.EndedAt = sh.EndedAt
			}
			for k, v := range sh.Outputs {
				if n.Outputs == nil {
					n.Outputs = map[string]string{}
				}
				n.Outputs[k] = v
			}
		}
		if len(n.Shards) > 0 {
			n.EndedAt = latestEnd(n.Shards, n.EndedAt)
		}
		cancel := ""
		if r.Cancel != nil {
			cancel = r.Cancel.Reason
		}
		n.State, n.Message = outcome(*n, ex, cancel)
	}
}

func latestEnd(shards []Shard, fallback time.Time) time.Time {
	var t time.Time
	for _, sh := range shards {
		if sh.EndedAt.After(t) {
			t = sh.EndedAt
		}
	}
	if t.IsZero() {
		return fallback
	}
	return t
}

// outcome is a finished execution's node state and message.
func outcome(n NodeRun, ex Execution, cancel string) (NodeState, string) {
	if ex.Success {
		return NodeSucceeded, ""
	}
	for _, sh := range n.Shards {
		if sh.State == task.Killed && cancel != "" {
			return NodeCancelled, "killed: " + cancel
		}
	}
	for _, sh := range n.Shards {
		if sh.State != task.Finished {
			msg := string(sh.State)
			if sh.Message != "" {
				msg += ": " + sh.Message
			}
			return NodeFailed, fmt.Sprintf("shard %d ended %s", sh.Item, msg)
		}
	}
	return NodeFailed, "the execution ended without a successful shard"
}

// cancelNodes skips pending nodes and asks to kill running ones.
func cancelNodes(r *Run, now time.Time) []Action {
	var acts []Action
	for i := range r.Nodes {
		n := &r.Nodes[i]
		switch n.State {
		case NodePending:
			n.State, n.SkipReason, n.EndedAt = NodeSkipped, r.Cancel.Reason, now
		case NodeRunning:
			acts = append(acts, Action{Kind: Kill, Node: n.ID, Job: n.Job, Key: n.RunKey})
		}
	}
	return acts
}

// advance starts and skips pending nodes until nothing changes (a skip
// may decide the nodes after it).
func advance(r *Run, in Input) []Action {
	var acts []Action
	for changed := true; changed; {
		changed = false
		for i := range r.Nodes {
			n := &r.Nodes[i]
			if n.State != NodePending {
				continue
			}
			start, skip := evaluate(r, *n)
			switch {
			case skip != "":
				n.State, n.SkipReason, n.EndedAt = NodeSkipped, skip, in.Now.UTC()
				changed = true
			case start:
				if a, ok := startNode(r, n, in); ok {
					acts = append(acts, a)
				}
				changed = true
			}
		}
	}
	return acts
}

// startNode marks n RUNNING and returns its Start action, or fails it when
// it cannot start (its job, or its inputs are too large).
func startNode(r *Run, n *NodeRun, in Input) (Action, bool) {
	now := in.Now.UTC()
	if why, ok := in.Refused[n.Job]; ok {
		n.State, n.Message, n.EndedAt = NodeFailed, "could not start: "+why, now
		return Action{}, false
	}
	inputs := inputsOf(r, *n)
	if size := inputs.Size(); size > jobs.MaxInputBytes {
		n.State, n.EndedAt = NodeFailed, now
		n.Message = fmt.Sprintf("could not start: its inputs (the outputs of %s) hold %d bytes, more than the %d bytes allowed",
			strings.Join(n.DependsOn, ", "), size, jobs.MaxInputBytes)
		return Action{}, false
	}
	param := n.JobParameter
	if param == nil {
		param = r.Parameter
	}
	n.State, n.QueuedAt, n.Parameter = NodeRunning, now, param
	n.RunKey = NodeKey(r.Workflow, r.ID, n.ID, n.Attempt)
	return Action{Kind: Start, Node: n.ID, Job: n.Job, Key: n.RunKey, Parameter: param, Inputs: inputs}, true
}

// inputsOf is the union of the outputs of the nodes n depends on.
func inputsOf(r *Run, n NodeRun) jobs.Inputs {
	var in jobs.Inputs
	for _, d := range n.DependsOn {
		up := r.Node(d)
		if up == nil || len(up.Outputs) == 0 {
			continue
		}
		if in == nil {
			in = jobs.Inputs{}
		}
		in[d] = up.Outputs
	}
	return in
}

// tally counts a node's upstream nodes by outcome, naming the first of each.
type tally struct {
	all, succeeded, failed, done              int
	firstSucceeded, firstFailed, firstSkipped string
}

func tallyOf(r *Run, n NodeRun) (tally, string) {
	t := tally{all: len(n.DependsOn)}
	for _, d := range n.DependsOn {
		up := r.Node(d)
		if up == nil {
			return t, fmt.Sprintf("upstream node '%s' is not in this run", d)
		}
		switch up.State {
		case NodeSucceeded:
			t.succeeded++
			t.firstSucceeded = orFirst(t.firstSucceeded, d)
		case NodeFailed, NodeCancelled:
			t.failed++
			t.firstFailed = orFirst(t.firstFailed, d)
		case NodeSkipped:
			t.firstSkipped = orFirst(t.firstSkipped, d)
		}
		if up.State.Final() {
			t.done++
		}
	}
	return t, ""
}

// evaluate applies n's rule to its upstream nodes: start, or skip with
// why, or neither (wait). Upstream nodes count as succeeded, failed
// (FAILED or CANCELLED) or skipped (neither).
func evaluate(r *Run, n NodeRun) (bool, string) {
	if len(n.DependsOn) == 0 {
		return true, ""
	}
	t, bad := tallyOf(r, n)
	if bad != "" {
		return false, bad
	}
	switch n.Trigger {
	case AllFailed:
		return allFailed(t)
	case AllDone:
		return t.done == t.all, ""
	case OneSucceeded:
		return one(t.succeeded, t.done == t.all, "trigger oneSucceeded: no upstream node succeeded")
	case OneFailed:
		return one(t.failed, t.done == t.all, "trigger oneFailed: no upstream node failed")
	}
	return allSucceeded(t)
}

func allSucceeded(t tally) (bool, string) {
	switch {
	case t.firstFailed != "":
		return false, fmt.Sprintf("upstream '%s' failed", t.firstFailed)
	case t.firstSkipped != "":
		return false, fmt.Sprintf("upstream '%s' was skipped", t.firstSkipped)
	}
	return t.succeeded == t.all, ""
}

func allFailed(t tally) (bool, string) {
	switch {
	case t.firstSucceeded != "":
		return false, fmt.Sprintf("trigger allFailed: upstream '%s' succeeded", t.firstSucceeded)
	case t.firstSkipped != "":
		return false, fmt.Sprintf("trigger allFailed: upstream '%s' was skipped", t.firstSkipped)
	}
	return t.failed == t.all, ""
}

// one starts at the first upstream node counted, and skips when all ended
// without one.
func one(count int, allDone bool, skip string) (bool, string) {
	switch {
	case count > 0:
		return true, ""
	case allDone:
		return false, skip
	}
	return false, ""
}

func orFirst(cur, v string) string {
	if cur == "" {
		return v
	}
	return cur
}

// finish ends the run when no node is pending or running.
func finish(r *Run, now time.Time) {
	for _, n := range r.Nodes {
		if !n.State.Final() {
			return
		}
	}
	r.EndedAt = now
	switch {
	case r.Cancel != nil && r.Cancel.TimedOut:
		r.State, r.Reason = RunFailed, r.Cancel.Reason
	case r.Cancel != nil:
		r.State, r.Reason = RunCancelled, r.Cancel.Reason
	case r.failedNodes() != "":
		r.State, r.Reason = RunFailed, "failed: "+r.failedNodes()
	default:
		r.State = RunSucceeded
	}
}
