package ejctl

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/spf13/cobra"
)

// schedCluster is a row of GET /api/operate/clusters: one of the clusters the scheduler
// runs on (docs/clusters.md).
type schedCluster struct {
	Name    string `json:"name"`
	Engine  string `json:"engine"`
	Drained *struct {
		By    string    `json:"by"`
		Since time.Time `json:"since"`
	} `json:"drained"`
	Agents       int     `json:"agents"`
	CPUCount     float64 `json:"cpuCount"`
	MemoryMB     float64 `json:"memoryMB"`
	AgentsError  string  `json:"agentsError"`
	RunningTasks int     `json:"runningTasks"`
	// Connected is absent when the answer cannot tell (one cluster; no leader elected:
	// ConnectionUnknown says so).
	Connected         *bool     `json:"connected"`
	Since             time.Time `json:"since"`
	LastError         string    `json:"lastError"`
	ConnectionUnknown string    `json:"connectionUnknown"`
}

const clustersAPI = "/api/operate/clusters"

// drainPoll is how often `cluster drain --wait` reads the work still running there.
const drainPoll = 2 * time.Second

// connectedWords: yes, no (with why it was lost), or - when the answer says nothing.
func (s schedCluster) connectedWords() string {
	switch {
	case s.Connected == nil && s.ConnectionUnknown != "":
		return "- (no leader now)"
	case s.Connected == nil:
		return "-"
	case *s.Connected:
		return "yes"
	case s.LastError != "":
		return "no (" + s.LastError + ")"
	}
	return "no"
}

func (s schedCluster) drainedWords() string {
	if s.Drained == nil {
		return "no"
	}
	return "since " + s.Drained.Since.Local().Format(time.DateTime) + " by " + cmpOr(s.Drained.By, "-")
}

// clustersLsCmd: ejctl cluster ls.
func (c clusterGroup) clustersLsCmd() *cobra.Command {
	return &cobra.Command{
		Use: "ls", Short: "List the clusters jobs run on: engine, connection, drain mark, agents, resources, running tasks", Args: exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			var cs []schedCluster
			if err := c.client.get(cmd.Context(), clustersAPI, nil, &cs); err != nil {
				return err
			}
			if c.json() {
				return c.printJSON(cs)
			}
			rows := make([][]string, 0, len(cs))
			for _, s := range cs {
				agents := strconv.Itoa(s.Agents)
				if s.AgentsError != "" {
					agents = "? (" + s.AgentsError + ")"
				}
				rows = append(rows, []string{s.Name, s.Engine, s.connectedWords(), s.drainedWords(), agents, strconv.FormatFloat(s.CPUCount, 'f', -1, 64),
					strconv.FormatFloat(s.MemoryMB, 'f', -1, 64), strconv.Itoa(s.RunningTasks)})
			}
			return c.table([]string{"NAME", "ENGINE", "CONNECTED", "DRAINED", "AGENTS", "CPUS", "MEMORY MB", "RUNNING"}, rows)
		},
	}
}

// clustersDrainCmd: ejctl cluster drain NAME [--wait].
func (c clusterGroup) clustersDrainCmd() *cobra.Command {
	var wait bool
	var timeout time.Duration
	drain := &cobra.Command{
		Use:   "drain NAME",
		Short: "Place no new work on a cluster (admin); with --wait, until the work running there has ended",
		Long: "Marks the cluster drained: the launch round places nothing new there, and jobs that may run\n" +
			"elsewhere run elsewhere; a job that may run only there waits (cluster_unavailable). What runs\n" +
			"there runs on. --wait waits until no task runs there and says so.",
		Args: exactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			var v schedCluster
			if err := c.client.sendJSON(cmd.Context(), http.MethodPut, clustersAPI+"/"+seg(args[0])+"/drain", nil, &v); err != nil {
				return err
			}
			if !wait {
				return c.drained(v)
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			t := time.NewTicker(drainPoll)
			defer t.Stop()
			for v.RunningTasks > 0 {
				c.say("cluster %s: %d tasks still running", v.Name, v.RunningTasks)
				select {
				case <-ctx.Done():
					return fmt.Errorf("cluster %s is drained but %d tasks still run there after %v (ejctl cluster ls shows them)", v.Name, v.RunningTasks, timeout)
				case <-t.C:
				}
				var cs []schedCluster
				if err := c.client.get(ctx, clustersAPI, nil, &cs); err != nil {
					return err
				}
				for _, s := range cs {
					if s.Name == v.Name {
						v = s
					}
				}
			}
			return c.drained(v)
		},
	}
	drain.Flags().BoolVar(&wait, "wait", false, "wait until no task runs on the cluster")
	drain.Flags().DurationVar(&timeout, "timeout", time.Hour, "with --wait, give up after this long")
	return drain
}

func (c clusterGroup) drained(v schedCluster) error {
	if c.json() {
		return c.printJSON(v)
	}
	if v.RunningTasks == 0 {
		c.say("cluster %s drained: empty", v.Name)
	} else {
		c.say("cluster %s drained: %d tasks still running there", v.Name, v.RunningTasks)
	}
	return nil
}

// clustersUndrainCmd: ejctl cluster undrain NAME.
func (c clusterGroup) clustersUndrainCmd() *cobra.Command {
	return &cobra.Command{
		Use: "undrain NAME", Short: "Place new work on a drained cluster again (admin)", Args: exactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			var v schedCluster
			if err := c.client.sendJSON(cmd.Context(), http.MethodDelete, clustersAPI+"/"+seg(args[0])+"/drain", nil, &v); err != nil {
				return err
			}
			if c.json() {
				return c.printJSON(v)
			}
			c.say("cluster %s takes new work", v.Name)
			return nil
		},
	}
}
