package engine

import (
	"fmt"
	"strings"

	"github.com/ejcloud/elasticjob/app"
)

// clusterSep joins a cluster's name to an id its engine handed out (an agent's, an
// offer's). Mesos ids and Kubernetes node names never hold one, and Mesos accepts it in
// the task and executor ids the scheduler builds from agent ids (it refuses "/").
const clusterSep = ":"

// CheckClusterName says why name cannot name a cluster (nil: it can; app.ValidClusterName).
func CheckClusterName(name string) error {
	if !app.ValidClusterName(name) {
		return fmt.Errorf("cluster name %q: want a DNS label (lower-case letters, digits and '-', at most 63 characters)", name)
	}
	return nil
}

// QualifyID is id (an agent's or an offer's, as one cluster's engine named it) as the
// scheduler sees it when it runs on several clusters: cluster:id. An empty id stays empty.
func QualifyID(cluster, id string) string {
	if id == "" || cluster == "" {
		return id
	}
	return cluster + clusterSep + id
}

// SplitID is QualifyID read backwards: the cluster an id names ("" when it names none,
// as every id does on a single engine) and the id as its engine knows it.
func SplitID(id string) (cluster, local string) {
	c, rest, ok := strings.Cut(id, clusterSep)
	if !ok || !app.ValidClusterName(c) {
		return "", id
	}
	return c, rest
}

// ClusterOf is the cluster an agent id names ("": none, a single engine's).
func ClusterOf(agentID string) string {
	c, _ := SplitID(agentID)
	return c
}
