package api

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/ejcloud/elasticjob/engine"
	"github.com/ejcloud/elasticjob/registry"
)

// The scheduler's clusters (docs/clusters.md): each with its engine, its drain mark, its
// agents' resources and the work running there. A drain (PUT …/drain) stops new
// placements on the cluster (the launch round reads the marks every round, on whichever
// instance leads); its answer, and GET, report the work still running there.

// ClusterConfig is one of the scheduler's clusters as configured (clusters_file, or the
// single engine as "default").
type ClusterConfig struct {
	Name   string
	Engine string // embedded, mesos, kubernetes
}

// ClusterHealth is one cluster's connection as the leader's engine sees it.
type ClusterHealth struct {
	Name      string
	Connected bool
	Since     time.Time // when it last connected or was lost
	LastError string    // why it was last lost
}

// clusterView is one cluster in GET /api/operate/clusters.
type clusterView struct {
	Name    string          `json:"name"`
	Engine  string          `json:"engine"`
	Drained *registry.Drain `json:"drained,omitempty"`
	// Connected is absent when this instance cannot tell (a standby, a single engine).
	Connected    *bool     `json:"connected,omitempty"`
	Since        time.Time `json:"since,omitzero"`
	LastError    string    `json:"lastError,omitempty"`
	Agents       int       `json:"agents"`
	CPUCount     float64   `json:"cpuCount"`
	MemoryMB     float64   `json:"memoryMB"`
	AgentsError  string    `json:"agentsError,omitempty"`
	RunningTasks int       `json:"runningTasks"`
	// ConnectionUnknown says why Connected is absent on a standby that could not ask
	// the leader (none is elected now).
	ConnectionUnknown string `json:"connectionUnknown,omitempty"`
}

// clustersRoute is GET /api/operate/clusters: the leader holds the connections, so a
// standby forwards it there (forward.go).
const clustersRoute = "/api/operate/clusters"

// clusterHandlers serve /api/operate/clusters.
type clusterHandlers struct {
	*core
	live
	clusters []ClusterConfig
	health   func() []ClusterHealth // Options.Operate.ClusterHealth
}

func (s *clusterHandlers) routes(g *gin.RouterGroup) {
	g.GET("/clusters", s.list)
	g.PUT("/clusters/:cluster/drain", s.drain)
	g.DELETE("/clusters/:cluster/drain", s.undrain)
}

func (s *clusterHandlers) list(c *gin.Context) {
	out, err := s.views(c)
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	if _, ok := c.Get(noLeaderKey); ok {
		for i := range out {
			out[i].ConnectionUnknown = "the connections are known only to the leader, and no scheduler leads now (an election is under way): ask again shortly"
		}
	}
	c.JSON(http.StatusOK, out)
}

// views reads every cluster's view: its agents from the engine (an engine that cannot
// answer gives agentsError, not a failure), its running work from the registry.
func (s *clusterHandlers) views(ctx context.Context) ([]clusterView, error) {
	drained, err := s.reg.Clusters().Drained(ctx)
	if err != nil {
		return nil, err
	}
	running, err := s.reg.Work().RunningTasks(ctx)
	if err != nil {
		return nil, err
	}
	retiring, err := s.reg.Work().RetiringTasks(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]clusterView, 0, len(s.clusters))
	for _, cl := range s.clusters {
		v := clusterView{Name: cl.Name, Engine: cl.Engine}
		if d, ok := drained[cl.Name]; ok {
			v.Drained = &d
		}
		for _, items := range running {
			for _, e := range items {
				if s.owns(cl.Name, e.AgentID) {
					v.RunningTasks++
				}
			}
		}
		for _, items := range retiring { // an overlapping move's old task still runs there
			for _, r := range items {
				if s.owns(cl.Name, r.AgentID) {
					v.RunningTasks++
				}
			}
		}
		out = append(out, v)
	}
	s.addAgents(ctx, out)
	s.addHealth(out)
	return out, nil
}

// addHealth sets each cluster's connection as the leader's engine reports it; without
// one (a standby, no term running) the fields stay absent rather than claim a state.
func (s *clusterHandlers) addHealth(out []clusterView) {
	if s.health == nil {
		return
	}
	for _, h := range s.health() {
		for i := range out {
			if out[i].Name == h.Name {
				connected := h.Connected
				out[i].Connected, out[i].Since, out[i].LastError = &connected, h.Since.UTC(), h.LastError
			}
		}
	}
}

// owns reports whether an agent id is of cluster name: its qualified prefix, or, for an
// id naming no cluster, the home cluster (the first).
func (s *clusterHandlers) owns(name, agentID string) bool {
	c := engine.ClusterOf(agentID)
	return c == name || (c == "" && len(s.clusters) > 0 && s.clusters[0].Name == name)
}

func (s *clusterHandlers) addAgents(ctx context.Context, out []clusterView) {
	if s.eng == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, capacityTimeout)
	defer cancel()
	agents, err := s.eng.Agents(ctx)
	for i := range out {
		if err != nil {
			out[i].AgentsError = err.Error()
			continue
		}
		for _, a := range agents {
			if s.owns(out[i].Name, a.ID) {
				out[i].Agents++
				out[i].CPUCount += a.CPUs
				out[i].MemoryMB += a.MemMB
			}
		}
	}
}

// known is the configured cluster named in the path (404 otherwise).
func (s *clusterHandlers) known(c *gin.Context) (string, error) {
	name := c.Param("cluster")
	for _, cl := range s.clusters {
		if cl.Name == name {
			return name, nil
		}
	}
	return "", fmt.Errorf("%w: cluster %q is not configured (GET /api/operate/clusters lists them)", ErrNotFound, name)
}

func (s *clusterHandlers) drain(c *gin.Context) {
	name, err := s.known(c)
	if err == nil {
		err = s.reg.Clusters().Drain(c, registry.Drain{Cluster: name, By: triggeredBy(c), Since: s.clock.Now().UTC().Truncate(time.Second)})
	}
	s.answer(c, name, err)
}

func (s *clusterHandlers) undrain(c *gin.Context) {
	name, err := s.known(c)
	if err == nil {
		_, err = s.reg.Clusters().Undrain(c, name)
	}
	s.answer(c, name, err)
}

// answer is the cluster's view after a drain or an undrain: its mark, and the work still
// running there (a drained cluster is empty when runningTasks is 0).
func (s *clusterHandlers) answer(c *gin.Context, name string, err error) {
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	views, err := s.views(c)
	if err != nil {
		writeError(c, s.log, err)
		return
	}
	for _, v := range views {
		if v.Name == name {
			c.JSON(http.StatusOK, v)
			return
		}
	}
}
