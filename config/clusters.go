package config

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/goccy/go-yaml"

	"github.com/ejcloud/elasticjob/app"
)

// Several clusters, one scheduler (docs/clusters.md): clusters_file lists them, each a
// named engine with its own settings. Without it the single-engine settings (mesos_url,
// kube_config, kube_in_cluster, or none: the embedded engine) are one cluster named
// DefaultCluster, so every deployment that predates the list runs as it did.

// DefaultCluster names the one cluster of the single-engine settings.
const DefaultCluster = "default"

// Engine kinds of a cluster.
const (
	EngineEmbedded   = "embedded"   // this scheduler's embedded Mesos master and agent
	EngineMesos      = "mesos"      // a real Mesos cluster (mesos_url)
	EngineKubernetes = "kubernetes" // a Kubernetes cluster (kube_config or kube_in_cluster)
)

// Cluster is one cluster of the list: its name, its engine, and the settings of that
// engine that differ between clusters (the others are the scheduler's, shared).
type Cluster struct {
	Name   string `yaml:"name" json:"name"`
	Engine string `yaml:"engine" json:"engine"`
	// Mesos: the master (http://host:5050 or zk://…/mesos), the framework's role and
	// principal, and the file holding its secret (never written in the list itself).
	MesosURL        string `yaml:"mesos_url,omitempty" json:"mesosUrl,omitempty"`
	MesosRole       string `yaml:"mesos_role,omitempty" json:"mesosRole,omitempty"`
	MesosPrincipal  string `yaml:"mesos_principal,omitempty" json:"mesosPrincipal,omitempty"`
	MesosSecretFile string `yaml:"mesos_secret_file,omitempty" json:"-"`
	// Kubernetes: the kubeconfig, or the pod's own service account, and the Kubernetes
	// namespace of the default namespace's pods ("": kube_namespace).
	KubeConfig    string `yaml:"kube_config,omitempty" json:"-"`
	KubeInCluster bool   `yaml:"kube_in_cluster,omitempty" json:"kubeInCluster,omitempty"`
	KubeNamespace string `yaml:"kube_namespace,omitempty" json:"kubeNamespace,omitempty"`
	// LostAfter is how long the cluster may stay unreachable as a whole (its engine
	// disconnected) before the tasks running there count as lost and their shards run
	// elsewhere (a Go duration; "": task_unreachable_timeout).
	LostAfter string `yaml:"lost_after,omitempty" json:"lostAfter,omitempty"`
}

// MaxLostAfter bounds a cluster's lost_after: past a week a lost cluster's work is
// not waited for, it is forgotten.
const MaxLostAfter = 7 * 24 * time.Hour

// LostAfterDuration is the cluster's lost_after (false: unset, or invalid, which the
// list's check refuses at start).
func (cl Cluster) LostAfterDuration() (time.Duration, bool) {
	if cl.LostAfter == "" {
		return 0, false
	}
	d, err := time.ParseDuration(cl.LostAfter)
	if err != nil || d <= 0 || d > MaxLostAfter {
		return 0, false
	}
	return d, true
}

// ClusterLostAfter is each cluster's lost_after that is set.
func (c *Config) ClusterLostAfter() map[string]time.Duration {
	var out map[string]time.Duration
	for _, cl := range c.Clusters {
		if d, ok := cl.LostAfterDuration(); ok {
			if out == nil {
				out = map[string]time.Duration{}
			}
			out[cl.Name] = d
		}
	}
	return out
}

// clustersDoc is clusters_file's content.
type clustersDoc struct {
	Clusters []Cluster `yaml:"clusters"`
}

func clusterSettings() []setting {
	return []setting{
		{"clusters_file", "", "YAML file listing the clusters this scheduler runs on, each a name, an engine (embedded, mesos or kubernetes) and that engine's settings (docs/clusters.md), and optionally lost_after (how long the cluster may stay unreachable before its tasks count lost; unset: task_unreachable_timeout); empty: the one cluster mesos_url, kube_config or kube_in_cluster selects (the embedded engine by default), named default",
			str(func(c *Config) *string { return &c.ClustersFile })},
	}
}

func init() { settings = append(settings, clusterSettings()...) }

// ClusterList is the clusters this scheduler runs on, the home cluster first: clusters_file's,
// or the single-engine settings as one cluster named DefaultCluster.
func (c *Config) ClusterList() []Cluster {
	if len(c.Clusters) > 0 {
		return c.Clusters
	}
	one := Cluster{Name: DefaultCluster, Engine: EngineEmbedded}
	switch {
	case c.KubeEnabled():
		one.Engine, one.KubeConfig, one.KubeInCluster, one.KubeNamespace = EngineKubernetes, c.Kube.Config, c.Kube.InCluster, c.Kube.Namespace
	case c.MesosURL != "":
		one.Engine, one.MesosURL, one.MesosRole, one.MesosPrincipal = EngineMesos, c.MesosURL, c.MesosRole, c.Mesos.Principal
	}
	return []Cluster{one}
}

// validateClusters reads clusters_file and checks its list, naming each bad entry.
func (c *Config) validateClusters() []error {
	if c.ClustersFile == "" {
		return nil
	}
	b, err := os.ReadFile(c.ClustersFile)
	if err != nil {
		return []error{fmt.Errorf("clusters_file: %w", err)}
	}
	var doc clustersDoc
	if err := yaml.UnmarshalWithOptions(b, &doc, yaml.Strict()); err != nil {
		return []error{fmt.Errorf("clusters_file %s: %v", c.ClustersFile, err)}
	}
	if len(doc.Clusters) == 0 {
		return []error{fmt.Errorf("clusters_file %s: no cluster listed (clusters: [{name: …, engine: …}])", c.ClustersFile)}
	}
	var errs []error
	if c.MesosURL != "" || c.KubeEnabled() {
		errs = append(errs, errors.New("clusters_file with mesos_url, kube_config or kube_in_cluster: give each cluster's engine in clusters_file's list only"))
	}
	seen, embedded := map[string]bool{}, 0
	for i, cl := range doc.Clusters {
		at := fmt.Sprintf("clusters_file %s: cluster %d (%s)", c.ClustersFile, i+1, cl.Name)
		if !app.ValidClusterName(cl.Name) {
			errs = append(errs, fmt.Errorf("%s: name %q is not a cluster name (lower-case letters, digits and '-', at most 63 characters)", at, cl.Name))
		} else if seen[cl.Name] {
			errs = append(errs, fmt.Errorf("%s: name listed twice", at))
		}
		seen[cl.Name] = true
		if cl.Engine == EngineEmbedded {
			embedded++
		}
		errs = append(errs, cl.check(at)...)
	}
	if embedded > 1 {
		errs = append(errs, fmt.Errorf("clusters_file %s: %d embedded clusters; a scheduler has one embedded engine", c.ClustersFile, embedded))
	}
	if len(errs) == 0 {
		c.Clusters = doc.Clusters
		errs = c.runOnOne()
	}
	return errs
}

// runOnOne makes a list of one cluster the single-engine settings it stands for, so the
// engine of a one-cluster list runs as mesos_url, kube_config or the embedded default does.
func (c *Config) runOnOne() []error {
	if len(c.Clusters) != 1 {
		return nil
	}
	one, err := c.ForCluster(c.Clusters[0])
	if err != nil {
		return []error{err}
	}
	*c = one
	return nil
}

// ForCluster is these settings with the engine settings of cl in place of the
// single-engine ones (mesos_url, its role, principal and secret, kube_config,
// kube_in_cluster, kube_namespace): what the scheduler builds that cluster's engine from.
// An embedded cluster keeps the scheduler's own Mesos credential (its embedded master's);
// a Mesos cluster gets its own, or none.
func (c Config) ForCluster(cl Cluster) (Config, error) {
	out := c
	out.Clusters = []Cluster{cl}
	out.MesosURL, out.Kube.Config, out.Kube.InCluster = "", "", false
	switch cl.Engine {
	case EngineMesos:
		out.MesosURL = cl.MesosURL
		if cl.MesosRole != "" {
			out.MesosRole = cl.MesosRole
		}
		if len(c.Clusters) > 1 || cl.MesosPrincipal != "" {
			out.Mesos.Principal, out.Mesos.Secret = cl.MesosPrincipal, ""
		}
		if cl.MesosSecretFile != "" {
			b, err := os.ReadFile(cl.MesosSecretFile)
			if err != nil {
				return Config{}, fmt.Errorf("clusters_file: cluster %s: mesos_secret_file: %w", cl.Name, err)
			}
			out.Mesos.Secret = strings.TrimSpace(string(b))
		}
	case EngineKubernetes:
		out.Kube.Config, out.Kube.InCluster = cl.KubeConfig, cl.KubeInCluster
		if cl.KubeNamespace != "" {
			out.Kube.Namespace = cl.KubeNamespace
		}
	}
	return out, nil
}

// check names what is wrong with one cluster's engine settings.
func (cl Cluster) check(at string) []error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(at+": "+format, a...)) }
	if cl.LostAfter != "" {
		if _, ok := cl.LostAfterDuration(); !ok {
			bad("lost_after %q must be a duration above 0s and at most %s, such as 2m", cl.LostAfter, MaxLostAfter)
		}
	}
	mesos := cl.MesosURL != "" || cl.MesosRole != "" || cl.MesosPrincipal != "" || cl.MesosSecretFile != ""
	kube := cl.KubeConfig != "" || cl.KubeInCluster || cl.KubeNamespace != ""
	switch cl.Engine {
	case EngineEmbedded:
		if mesos || kube {
			bad("an embedded cluster takes no mesos_* or kube_* setting (it is this scheduler's own engine)")
		}
	case EngineMesos:
		if cl.MesosURL == "" {
			bad("a mesos cluster needs mesos_url (http://host:5050 or zk://host:2181/mesos)")
		} else if err := checkMesosURL(cl.MesosURL); err != nil {
			bad("mesos_url: %v", err)
		}
		if kube {
			bad("a mesos cluster takes no kube_* setting")
		}
		if cl.MesosSecretFile != "" && cl.MesosPrincipal == "" {
			bad("mesos_secret_file needs mesos_principal")
		}
	case EngineKubernetes:
		if (cl.KubeConfig == "") == !cl.KubeInCluster {
			bad("a kubernetes cluster needs kube_config or kube_in_cluster: true (one of them)")
		}
		if cl.KubeNamespace != "" && !kubeNSName.MatchString(cl.KubeNamespace) {
			bad("kube_namespace %q is not a Kubernetes namespace name", cl.KubeNamespace)
		}
		if mesos {
			bad("a kubernetes cluster takes no mesos_* setting")
		}
	default:
		bad("engine %q: want embedded, mesos or kubernetes", cl.Engine)
	}
	return errs
}

// SharedEngines reports whether every cluster's engine is one several schedulers can share
// (a real Mesos cluster, Kubernetes): none is this scheduler's embedded engine.
func (c *Config) SharedEngines() bool {
	for _, cl := range c.ClusterList() {
		if cl.Engine == EngineEmbedded {
			return false
		}
	}
	return true
}

// ClusterNames are the names of ClusterList, the home cluster first.
func (c *Config) ClusterNames() []string {
	var out []string
	for _, cl := range c.ClusterList() {
		out = append(out, cl.Name)
	}
	return out
}

// clustersRedacted is the list as the startup log shows it: engines and names, the Mesos
// masters with their credentials hidden.
func (c *Config) clustersRedacted() string {
	var parts []string
	for _, cl := range c.ClusterList() {
		parts = append(parts, cl.Name+"="+cl.Engine)
	}
	return strings.Join(parts, ",")
}
