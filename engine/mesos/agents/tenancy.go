package agents

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// TenantIsolators are the Mesos agent isolators that keep one namespace's
// tasks from another's where they run: namespaces/pid (a container sees no
// other process) and filesystem/linux (its own mount namespace, where the
// sandbox is its only writable view of the agent's work directory). With
// them, and each namespace's tasks running as their own user
// (mesos_task_users, which needs the agent's --switch_user, its default),
// a task cannot read or signal another namespace's.
var TenantIsolators = []string{"filesystem/linux", "namespaces/pid"}

// MissingIsolators lists the TenantIsolators an agent's --isolation flag
// (comma separated) does not name.
func MissingIsolators(isolation string) []string {
	have := map[string]bool{}
	for _, s := range strings.Split(isolation, ",") {
		have[strings.TrimSpace(s)] = true
	}
	var out []string
	for _, want := range TenantIsolators {
		if !have[want] {
			out = append(out, want)
		}
	}
	return out
}

// Weakness is an agent that does not isolate namespaces from each other.
type Weakness struct {
	Agent   Agent
	Missing []string // TenantIsolators it lacks
	// NoSwitchUser: the agent runs every task as its own user (--switch_user=false), whatever
	// CommandInfo.user says.
	NoSwitchUser bool
	Err          error // its state could not be read
}

func (w Weakness) String() string {
	if w.Err != nil {
		return fmt.Sprintf("agent %s (%s): %v", w.Agent.ID, w.Agent.Hostname, w.Err)
	}
	var parts []string
	if len(w.Missing) > 0 {
		parts = append(parts, "lacks isolators "+strings.Join(w.Missing, ","))
	}
	if w.NoSwitchUser {
		parts = append(parts, "runs every task as its own user (--switch_user=false)")
	}
	return fmt.Sprintf("agent %s (%s) %s", w.Agent.ID, w.Agent.Hostname, strings.Join(parts, "; "))
}

// TenantWeaknesses reads every agent's flags and lists those that do not
// isolate namespaces from each other, by agent id. Agents served by one
// process (one pid address: a simulated cluster's, whose /state is the
// whole cluster's, megabytes for a thousand agents) are read once.
func (c *Client) TenantWeaknesses(ctx context.Context) ([]Weakness, error) {
	ags, err := c.Agents(ctx)
	if err != nil {
		return nil, err
	}
	type read struct {
		st  isolationState
		err error
	}
	reads := map[string]read{} // by agent URL
	var out []Weakness
	for _, a := range ags {
		base, err := agentURL(a)
		var st isolationState
		if err == nil {
			r, ok := reads[base]
			if !ok {
				r.err = c.getJSON(ctx, base+"/state", &r.st)
				reads[base] = r
			}
			st, err = r.st, r.err
		}
		if err != nil {
			out = append(out, Weakness{Agent: a, Err: err})
			continue
		}
		w := Weakness{Agent: a, Missing: MissingIsolators(st.isolation().Isolators)}
		if v, ok := st.Flags["switch_user"].(string); ok && v == "false" {
			w.NoSwitchUser = true
		}
		if len(w.Missing) > 0 || w.NoSwitchUser {
			out = append(out, w)
		}
	}
	slices.SortFunc(out, func(a, b Weakness) int { return strings.Compare(a.Agent.ID, b.Agent.ID) })
	return out, nil
}
