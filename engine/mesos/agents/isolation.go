package agents

import (
	"context"
	"strings"
)

// Isolation is how an agent enforces task resources, from its /state:
// flags.isolation as every Mesos agent reports it ("cgroups/cpu,cgroups/mem"
// or "posix/cpu,posix/mem"), and the detail the embedded agent adds.
type Isolation struct {
	// Mode is "v1" or "v2" (cgroups, embedded agent), "cgroups" (a Mesos
	// agent with cgroups isolators), "off" (nothing enforced) or "unknown"
	// (the agent's state could not be read; Reason says why).
	Mode      string `json:"mode"`
	Isolators string `json:"isolation"`
	Enforced  bool   `json:"enforced"`
	Reason    string `json:"reason,omitempty"`
}

type isolationState struct {
	Flags     map[string]any `json:"flags"`
	Isolation *Isolation     `json:"isolation"`
}

// Isolation reads how agent a enforces resources.
func (c *Client) Isolation(ctx context.Context, a Agent) (Isolation, error) {
	base, err := agentURL(a)
	if err != nil {
		return Isolation{}, err
	}
	var st isolationState
	if err := c.getJSON(ctx, base+"/state", &st); err != nil {
		return Isolation{}, err
	}
	return st.isolation(), nil
}

func (st isolationState) isolation() Isolation {
	flag, _ := st.Flags["isolation"].(string)
	if st.Isolation != nil && st.Isolation.Mode != "" {
		iso := *st.Isolation
		iso.Isolators = flag
		return iso
	}
	if flag == "" {
		flag = "posix/cpu,posix/mem" // the Mesos default
	}
	iso := Isolation{Mode: "off", Isolators: flag}
	if strings.Contains(flag, "cgroups/") {
		iso.Mode, iso.Enforced = "cgroups", true
	}
	return iso
}

// FillIsolation sets Isolation on each agent (Mode "unknown" with the
// error as Reason where an agent cannot be read), e.g. for
// GET /api/operate/cluster.
func (c *Client) FillIsolation(ctx context.Context, agents []Agent) {
	for i := range agents {
		iso, err := c.Isolation(ctx, agents[i])
		if err != nil {
			iso = Isolation{Mode: "unknown", Reason: err.Error()}
		}
		agents[i].Isolation = &iso
	}
}
