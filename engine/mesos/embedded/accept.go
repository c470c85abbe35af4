package embedded

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"unicode"

	mesos "github.com/mesos/mesos-go/api/v1/lib"
	"github.com/mesos/mesos-go/api/v1/lib/scheduler"
)

// launch is one LAUNCH task or one LAUNCH_GROUP being validated.
type launch struct {
	exec  mesos.ExecutorInfo
	tasks []mesos.TaskInfo
	group bool
}

// accept applies ACCEPT: offers are consumed, valid tasks launched, invalid
// ones reported (TASK_ERROR, or TASK_DROPPED/TASK_LOST for invalid offers)
// and the unused remainder declined with the call's filters.
func (c *Cluster) accept(fw *framework, a *scheduler.Call_Accept) {
	var launches []launch
	for _, op := range a.Operations {
		switch {
		case op.Type == mesos.Offer_Operation_LAUNCH && op.Launch != nil:
			for _, ti := range op.Launch.TaskInfos {
				l := launch{tasks: []mesos.TaskInfo{ti}}
				if ti.Executor != nil {
					l.exec = *ti.Executor
				}
				launches = append(launches, l)
			}
		case op.Type == mesos.Offer_Operation_LAUNCH_GROUP && op.LaunchGroup != nil:
			launches = append(launches, launch{exec: op.LaunchGroup.Executor, tasks: op.LaunchGroup.TaskGroup.Tasks, group: true})
		default:
			c.log.Warn("unsupported offer operation dropped", "framework_id", fw.id, "type", op.Type.String())
		}
	}
	ag, remaining, err := c.takeOffers(fw, a.OfferIDs)
	if err != nil {
		state := lossState(fw.partitionAware(), lossDropped)
		for _, l := range launches {
			for _, ti := range l.tasks {
				c.masterUpdate(fw, ti.TaskID.Value, state, mesos.REASON_INVALID_OFFERS, err.Error(), nil)
			}
		}
	} else {
		rest := remaining[ag]
		seen := map[string]bool{}
		for _, l := range launches {
			c.launch(fw, ag, l, &rest, seen)
		}
		remaining[ag] = rest
	}
	for _, g := range sortedAgents(remaining) {
		c.addFilter(fw, g, remaining[g], a.Filters)
	}
	c.allocate()
}

// takeOffers consumes the offers, which must all be of one agent; any
// invalid id makes the whole accept invalid (the valid offers' resources
// are still returned as remaining, per agent).
func (al *allocator) takeOffers(fw *framework, ids []mesos.OfferID) (*agent, map[*agent]mesos.Resources, error) {
	remaining := map[*agent]mesos.Resources{}
	if len(ids) == 0 {
		return nil, remaining, errors.New("No offers specified")
	}
	var ag *agent
	var bad error
	seen := map[string]bool{}
	for _, id := range ids {
		if seen[id.Value] {
			bad = fmt.Errorf("Duplicate offer %s in the same call", id.Value)
			continue
		}
		seen[id.Value] = true
		o, err := al.takeOffer(fw, id.Value)
		if err != nil {
			bad = err
			continue
		}
		if ag != nil && o.agent != ag {
			bad = fmt.Errorf("Aggregated offers must belong to one single agent. Offer %s uses agent %s and offer %s uses agent %s",
				ids[0].Value, ag.id, id.Value, o.agent.id)
		}
		if ag == nil {
			ag = o.agent
		}
		rs := remaining[o.agent]
		rs.Add(o.resources...)
		remaining[o.agent] = rs
	}
	return ag, remaining, bad
}

func sortedAgents(m map[*agent]mesos.Resources) []*agent {
	out := make([]*agent, 0, len(m))
	for a := range m {
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].index < out[j].index })
	return out
}

// launch validates one task (or group) against the remaining offered
// resources and either commits it or reports TASK_ERROR for each task.
func (c *Cluster) launch(fw *framework, a *agent, l launch, remaining *mesos.Resources, seen map[string]bool) {
	need, err := validateLaunch(fw, a, l, seen)
	if err == nil && !contains(*remaining, need) {
		err = fmt.Errorf("Task uses more resources %s than available %s", need, *remaining)
	}
	if err != nil {
		reason := mesos.REASON_TASK_INVALID
		if l.group { // one invalid task refuses its whole group (Mesos 1.11)
			reason = mesos.REASON_TASK_GROUP_INVALID
		}
		for _, ti := range l.tasks {
			c.masterUpdate(fw, ti.TaskID.Value, mesos.TASK_ERROR, reason, err.Error(), a)
		}
		return
	}
	c.launched += float64(len(l.tasks))
	remaining.Subtract(need...)
	e := fw.executors[execKey{a.id, l.exec.ExecutorID.Value}]
	if e == nil {
		e = c.launchExecutor(fw, a, l.exec)
	}
	batch := make([]*task, 0, len(l.tasks))
	for _, ti := range l.tasks {
		t := &task{info: ti, fw: fw, exec: e, seq: c.nextID(), state: mesos.TASK_STAGING, resources: normalize(ti.Resources)}
		t.status = mesos.TaskStatus{TaskID: ti.TaskID, State: mesos.TASK_STAGING.Enum()}
		fw.tasks[ti.TaskID.Value] = t
		e.tasks[ti.TaskID.Value] = t
		c.charge(a, t.resources)
		if e.ck != nil {
			e.ck.task(t, l.group)
		}
		batch = append(batch, t)
	}
	c.iso.resize(e) // before the executor hears of the tasks
	e.queue(batch, l.group)
	c.log.Info("launching tasks", "framework_id", fw.id, "agent_id", a.id, "executor_id", e.id, "tasks", len(batch))
}

// validateLaunch checks ids, agent, executor and resources of a launch and
// returns the resources it needs (tasks plus a new executor's). It reads
// the framework's tasks and executors and records the task ids in seen.
func validateLaunch(fw *framework, a *agent, l launch, seen map[string]bool) (mesos.Resources, error) {
	ex := l.exec
	if ex.ExecutorID.Value == "" {
		return nil, errors.New("Task should have at least one (but not both) of CommandInfo or ExecutorInfo present; command tasks are not supported by the embedded agent")
	}
	if err := validateID(ex.ExecutorID.Value); err != nil {
		return nil, fmt.Errorf("Executor ID '%s' is invalid: %w", ex.ExecutorID.Value, err)
	}
	if id := ex.GetFrameworkID(); id != nil && id.Value != fw.id {
		return nil, fmt.Errorf("ExecutorInfo has an invalid FrameworkID (Actual: %s vs Expected: %s)", id.Value, fw.id)
	}
	if ex.GetCommand().GetValue() == "" {
		return nil, errors.New("ExecutorInfo must have a CommandInfo with a value on the embedded agent")
	}
	var need mesos.Resources
	for _, ti := range l.tasks {
		if err := validateTask(fw, a, ti, l.group, seen); err != nil {
			if l.group { // every task of the group is told which one was invalid
				return nil, fmt.Errorf("Task '%s' is invalid: %w", ti.TaskID.Value, err)
			}
			return nil, err
		}
		need.Add(normalize(ti.Resources)...)
	}
	if err := validateResources(ex.Resources); err != nil {
		return nil, fmt.Errorf("Executor uses invalid resources: %w", err)
	}
	if e := fw.executors[execKey{a.id, ex.ExecutorID.Value}]; e != nil {
		if e.state == execTerminating {
			return nil, fmt.Errorf("Executor %s is terminating", e.id)
		}
		got := ex
		got.FrameworkID = e.info.FrameworkID
		if !e.info.Equal(&got) {
			return nil, errors.New("ExecutorInfo is not compatible with existing ExecutorInfo with same ExecutorID")
		}
		return need, nil
	}
	need.Add(normalize(ex.Resources)...)
	return need, nil
}

// validateTask checks one task of a launch (seen: the ids earlier in the
// same ACCEPT).
func validateTask(fw *framework, a *agent, ti mesos.TaskInfo, group bool, seen map[string]bool) error {
	id := ti.TaskID.Value
	if err := validateID(id); err != nil {
		return fmt.Errorf("Task ID '%s' is invalid: %w", id, err)
	}
	if seen[id] || fw.tasks[id] != nil {
		return fmt.Errorf("Task has duplicate ID: %s", id)
	}
	seen[id] = true
	if ti.AgentID.Value != a.id {
		return fmt.Errorf("Task uses invalid agent: %s", ti.AgentID.Value)
	}
	if group && (ti.Executor != nil || ti.Command == nil) {
		return errors.New("Task in a group must have a CommandInfo and no ExecutorInfo")
	}
	if !group && ti.Command != nil {
		return errors.New("Task should have at least one (but not both) of CommandInfo or ExecutorInfo present")
	}
	if err := validateResources(ti.Resources); err != nil {
		return fmt.Errorf("Task uses invalid resources: %w", err)
	}
	return nil
}

// validateID applies the Mesos id rules.
func validateID(id string) error {
	switch {
	case id == "":
		return errors.New("ID must not be empty")
	case id == "." || id == "..":
		return errors.New("'.' and '..' are disallowed")
	case strings.ContainsAny(id, "/\\"):
		return errors.New("'/' and '\\' are disallowed")
	}
	for _, r := range id {
		if !unicode.IsPrint(r) || unicode.IsSpace(r) {
			return errors.New("only printable characters are allowed")
		}
	}
	return nil
}
