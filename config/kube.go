package config

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"strings"
	"time"
)

// Kube is how the scheduler runs its tasks on Kubernetes (the kube_* settings): set
// kube_config (or kube_in_cluster) instead of mesos_url.
type Kube struct {
	Config          string // kube_config: a kubeconfig file
	InCluster       bool   // kube_in_cluster: the pod's service account
	Namespace       string // kube_namespace: of the default namespace's pods
	Namespaces      string // kube_namespaces: ns=kubernetes-namespace,… (NamespaceMap parses it)
	NamespacePrefix string // kube_namespace_prefix: of the other namespaces' Kubernetes namespaces
	ExecutorImage   string
	ImagePullPolicy string
	HostNetwork     bool
	// TemplateHostAccess lets teams' podTemplates reach the node (kube_pod_template_host_access).
	TemplateHostAccess bool
	NodeSelector       string // kube_node_selector: key=value,… (NodeSelectorMap parses it)
	Tolerations        string // kube_tolerations (TolerationList parses it)
	ServiceAccount     string
	Binding            string        // kube_binding: direct or kube-scheduler
	FinishedPodHold    time.Duration // kube_finished_pod_hold: a finished pod kept while its node starts others
	SchedulerURL       string        // kube_scheduler_url: where pods report and fetch hosted packages
	APIQPS             int           // kube_api_qps: the client's sustained requests per second
	APIBurst           int           // kube_api_burst: and its burst
	CRDs               bool          // kube_crds: the leader reconciles CloudApp, CloudJob and CloudWorkflow objects
	CRDResync          time.Duration // kube_crd_resync: how often their status is refreshed
	WebhookURL         string        // kube_webhook_url: where the API server reaches the admission webhook
	WebhookAddress     string        // kube_webhook_address: where it listens ("": from WebhookURL)
}

// NodeSelectorMap is kube_node_selector parsed (validated by Load).
func (k Kube) NodeSelectorMap() map[string]string {
	m, _ := parseSelector(k.NodeSelector)
	return m
}

// TolerationList is kube_tolerations parsed (validated by Load).
func (k Kube) TolerationList() []Toleration {
	t, _ := parseTolerations(k.Tolerations)
	return t
}

// SchedulerURLs is kube_scheduler_url split.
func (k Kube) SchedulerURLs() []string {
	var out []string
	for _, u := range strings.Split(k.SchedulerURL, ",") {
		if u = strings.TrimRight(strings.TrimSpace(u), "/"); u != "" {
			out = append(out, u)
		}
	}
	return out
}

// Toleration is one entry of kube_tolerations: key[=value][:Effect]. No value tolerates
// every value of the key (operator Exists); no effect tolerates every effect.
type Toleration struct{ Key, Value, Effect string }

// KubeEnabled reports whether Kubernetes is the cluster engine.
func (c *Config) KubeEnabled() bool { return c.Kube.Config != "" || c.Kube.InCluster }

func kubeSettings() []setting {
	return []setting{
		{"kube_config", "", "kubeconfig file of the Kubernetes cluster to run tasks on as pods (instead of mesos_url); see docs/kubernetes.md", str(func(c *Config) *string { return &c.Kube.Config })},
		{"kube_in_cluster", "false", "run tasks on the Kubernetes cluster this scheduler runs in, with its pod's service account (instead of kube_config)", boolean("kube_in_cluster", func(c *Config) *bool { return &c.Kube.InCluster })},
		{"kube_namespace", "default", "Kubernetes namespace of the default namespace's task pods (other namespaces: kube_namespaces, kube_namespace_prefix)", str(func(c *Config) *string { return &c.Kube.Namespace })},
		{"kube_executor_image", "localhost/elasticjob-executor:latest", "image with the executor (make image builds it into dist/); also the init container that puts the executor into apps with an image of their own", str(func(c *Config) *string { return &c.Kube.ExecutorImage })},
		{"kube_image_pull_policy", "IfNotPresent", "imagePullPolicy of the task pods' containers: Always, IfNotPresent or Never (images imported on the nodes)", str(func(c *Config) *string { return &c.Kube.ImagePullPolicy })},
		{"kube_pod_template_host_access", "false", "let apps' and jobs' podTemplates reach the node (hostPID, hostIPC, hostNetwork, hostPath volumes, privileged, capabilities beyond Pod Security baseline's, unconfined seccomp or AppArmor, SELinux options, unsafe sysctls): root on the node, and so over other teams' pods there; refused otherwise", boolean("kube_pod_template_host_access", func(c *Config) *bool { return &c.Kube.TemplateHostAccess })},
		{"kube_host_network", "false", "run task pods with hostNetwork (pods then reach a scheduler on the node's loopback)", boolean("kube_host_network", func(c *Config) *bool { return &c.Kube.HostNetwork })},
		{"kube_node_selector", "", "only nodes with these labels run tasks: key=value,key=value", func(c *Config, v string) error {
			if _, err := parseSelector(v); err != nil {
				return fmt.Errorf("kube_node_selector: %w", err)
			}
			c.Kube.NodeSelector = v
			return nil
		}},
		{"kube_tolerations", "", "taints the task pods tolerate: key[=value][:NoSchedule|PreferNoSchedule|NoExecute],…; nodes with other NoSchedule or NoExecute taints run no tasks", func(c *Config, v string) error {
			if _, err := parseTolerations(v); err != nil {
				return fmt.Errorf("kube_tolerations: %w", err)
			}
			c.Kube.Tolerations = v
			return nil
		}},
		{"kube_service_account", "", "service account of the task pods (empty: the namespace's default; the pods get no API token either way)", str(func(c *Config) *string { return &c.Kube.ServiceAccount })},
		{"kube_api_qps", "50", "requests per second the scheduler's Kubernetes client sends at most, sustained (each task's pod costs one create and one delete; kube-controller-manager's --kube-api-qps is the like)", integer("kube_api_qps", func(c *Config) *int { return &c.Kube.APIQPS })},
		{"kube_api_burst", "100", "requests the scheduler's Kubernetes client may send at once above kube_api_qps", integer("kube_api_burst", func(c *Config) *int { return &c.Kube.APIBurst })},
		{"kube_binding", "direct", "how task pods reach their node: direct (spec.nodeName, the fast path) or kube-scheduler (pinned to the chosen node by required node affinity and bound by kube-scheduler, so volume topology and admission plugins apply)", str(func(c *Config) *string { return &c.Kube.Binding })},
		{"kube_finished_pod_hold", "30s", "how long the pod of a finished task may be kept while task pods on its node are starting (shown Pending) (deleting it then costs the kubelet time those starts need); 0s deletes it as soon as the task's end is recorded", duration("kube_finished_pod_hold", func(c *Config) *time.Duration { return &c.Kube.FinishedPodHold })},
		{"kube_crds", "false", "the leader registers the CloudApp, CloudJob and CloudWorkflow objects of every namespace (the CRDs of deploy/kubernetes/base/crds) and writes back their status; see docs/kubernetes.md", boolean("kube_crds", func(c *Config) *bool { return &c.Kube.CRDs })},
		{"kube_crd_resync", "10s", "how often the leader refreshes those objects' status (fire times, last result) and retries the ones it refused", duration("kube_crd_resync", func(c *Config) *time.Duration { return &c.Kube.CRDResync })},
		{"kube_webhook_url", "", "https URL the Kubernetes API server reaches this scheduler's validating admission webhook at (https://host:port[/path]); set, the scheduler serves it on its own TLS listener at that port with a certificate of its own CA and registers it (a Service's name, NAME.NAMESPACE.svc, as a Service reference)", func(c *Config, v string) error {
			if v != "" {
				u, err := url.Parse(v)
				if err != nil || u.Scheme != "https" || u.Hostname() == "" {
					return fmt.Errorf("kube_webhook_url %q: want https://host:port[/path]", v)
				}
			}
			c.Kube.WebhookURL = v
			return nil
		}},
		{"kube_webhook_address", "", "host:port the webhook listens on (empty: kube_webhook_url's port, on its host when that is an IP, else on every interface)", str(func(c *Config) *string { return &c.Kube.WebhookAddress })},
		{"kube_scheduler_url", "", "base URL(s) task pods reach the schedulers at, comma-separated (a Service in front of them; empty: advertise_url): executors report there and fetch hosted packages from there", str(func(c *Config) *string { return &c.Kube.SchedulerURL })},
	}
}

func init() { settings = append(settings, kubeSettings()...) }

// labelPart is a Kubernetes label key name or value.
var labelPart = regexp.MustCompile(`^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$`)

func parseSelector(v string) (map[string]string, error) {
	if strings.TrimSpace(v) == "" {
		return nil, nil
	}
	m := map[string]string{}
	for _, kv := range strings.Split(v, ",") {
		k, val, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok || !validLabelKey(k) || !labelPart.MatchString(val) {
			return nil, fmt.Errorf("%q is not key=value with a label key and value", kv)
		}
		m[k] = val
	}
	return m, nil
}

// validLabelKey accepts name or prefix/name.
func validLabelKey(k string) bool {
	if p, name, ok := strings.Cut(k, "/"); ok {
		return p != "" && len(p) <= 253 && name != "" && labelPart.MatchString(name)
	}
	return k != "" && labelPart.MatchString(k)
}

func parseTolerations(v string) ([]Toleration, error) {
	var out []Toleration
	for _, item := range strings.Split(v, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		var t Toleration
		kv, effect, _ := strings.Cut(item, ":")
		t.Key, t.Value, _ = strings.Cut(kv, "=")
		switch effect {
		case "", "NoSchedule", "PreferNoSchedule", "NoExecute":
			t.Effect = effect
		default:
			return nil, fmt.Errorf("%q: the effect must be NoSchedule, PreferNoSchedule or NoExecute", item)
		}
		if !validLabelKey(t.Key) || !labelPart.MatchString(t.Value) {
			return nil, fmt.Errorf("%q is not key[=value][:effect]", item)
		}
		out = append(out, t)
	}
	return out, nil
}

func (c *Config) validateKube() []error {
	k := c.Kube
	if !c.KubeEnabled() {
		return nil
	}
	var errs []error
	if c.MesosURL != "" {
		errs = append(errs, errors.New("kube_config/kube_in_cluster and mesos_url: choose one cluster engine (Kubernetes or Mesos)"))
	}
	if k.Config != "" && k.InCluster {
		errs = append(errs, errors.New("kube_config and kube_in_cluster: set one (kube_in_cluster uses the pod's service account)"))
	}
	if k.Config != "" {
		if _, err := os.Stat(k.Config); err != nil {
			errs = append(errs, fmt.Errorf("kube_config: %w", err))
		}
	}
	if !labelPart.MatchString(k.Namespace) || k.Namespace == "" || strings.ToLower(k.Namespace) != k.Namespace {
		errs = append(errs, fmt.Errorf("kube_namespace: %q is not a namespace name", k.Namespace))
	}
	if strings.TrimSpace(k.ExecutorImage) == "" {
		errs = append(errs, errors.New("kube_executor_image: must not be empty"))
	}
	switch k.ImagePullPolicy {
	case "Always", "IfNotPresent", "Never":
	default:
		errs = append(errs, fmt.Errorf("kube_image_pull_policy: %q must be Always, IfNotPresent or Never", k.ImagePullPolicy))
	}
	if k.APIQPS <= 0 || k.APIBurst < k.APIQPS {
		errs = append(errs, fmt.Errorf("kube_api_qps %d, kube_api_burst %d: want qps > 0 and burst >= qps", k.APIQPS, k.APIBurst))
	}
	if k.Binding != "direct" && k.Binding != "kube-scheduler" {
		errs = append(errs, fmt.Errorf("kube_binding: %q must be direct or kube-scheduler", k.Binding))
	}
	for _, u := range k.SchedulerURLs() {
		if p, err := url.Parse(u); err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			errs = append(errs, fmt.Errorf("kube_scheduler_url: %q must be an http(s) base URL like http://elasticjob.jobs.svc:8899", u))
		}
	}
	return errs
}

// KubeSchedulerURLs are the base URLs task pods reach the schedulers at: kube_scheduler_url, or
// the advertised URL.
func (c *Config) KubeSchedulerURLs() []string {
	if us := c.Kube.SchedulerURLs(); len(us) > 0 {
		return us
	}
	return []string{c.Advertised()}
}
