package config

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// The scheduler's namespaces on Kubernetes: each runs its pods in a Kubernetes namespace of
// its own (kube_namespace for default; kube_namespaces names others explicitly, `*` the rest;
// else kube_namespace_prefix + its name).

// kubeNSName is a Kubernetes namespace name (a DNS label).
var kubeNSName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)

// kubeNSPrefix is what may precede a scheduler namespace's name.
var kubeNSPrefix = regexp.MustCompile(`^([a-z0-9][-a-z0-9]*)?$`)

// defaultNS is the scheduler's default namespace (package namespace's Default; config
// imports nothing of the scheduler's).
const defaultNS = "default"

// NamespaceMap is kube_namespaces parsed: scheduler namespace → Kubernetes namespace ("*":
// every namespace not named).
func (k Kube) NamespaceMap() map[string]string {
	m, _ := parseNamespaceMap(k.Namespaces)
	return m
}

// KubeNamespaceOf is the Kubernetes namespace the pods of scheduler namespace ns run in:
// kube_namespace for default, the entry of kube_namespaces naming ns, else its `*` entry,
// else kube_namespace_prefix + ns. An error when that is not a Kubernetes namespace name
// (a prefix making it longer than 63 characters).
func (k Kube) KubeNamespaceOf(ns string) (string, error) {
	if ns == "" || ns == defaultNS {
		return k.Namespace, nil
	}
	m := k.NamespaceMap()
	if v, ok := m[ns]; ok {
		return v, nil
	}
	if v, ok := m["*"]; ok {
		return v, nil
	}
	v := k.NamespacePrefix + ns
	if !kubeNSName.MatchString(v) {
		return "", fmt.Errorf("namespace %s would run its pods in Kubernetes namespace %q (kube_namespace_prefix %q + its name), "+
			"which is not a Kubernetes namespace name (at most 63 characters): map it in kube_namespaces", ns, v, k.NamespacePrefix)
	}
	return v, nil
}

// SchedulerNamespaceOf is the scheduler namespace whose pods run in Kubernetes namespace
// kns: where its objects (CloudApp, CloudJob, CloudWorkflow) belong. KubeNamespaceOf read
// backwards: kube_namespace is default's; a namespace kube_namespaces names explicitly is
// that entry's; else kns less kube_namespace_prefix, when that namespace's pods run in kns.
// An error when no scheduler namespace, or more than one, runs its pods there (a `*` entry
// gathering many namespaces into one).
func (k Kube) SchedulerNamespaceOf(kns string) (string, error) {
	if kns == k.Namespace {
		return defaultNS, nil
	}
	m := k.NamespaceMap()
	if m["*"] == kns {
		return "", fmt.Errorf("Kubernetes namespace %s holds the pods of every namespace kube_namespaces does not name (*=%s): "+
			"its objects cannot say which they belong to; give each namespace with objects a Kubernetes namespace of its own", kns, kns)
	}
	var named []string
	for ns, v := range m {
		if ns != "*" && v == kns {
			named = append(named, ns)
		}
	}
	if len(named) == 1 {
		return named[0], nil
	}
	if len(named) > 1 {
		sort.Strings(named)
		return "", fmt.Errorf("Kubernetes namespace %s holds the pods of namespaces %s (kube_namespaces): "+
			"its objects cannot say which they belong to; give each namespace a Kubernetes namespace of its own", kns, strings.Join(named, ", "))
	}
	if ns, ok := strings.CutPrefix(kns, k.NamespacePrefix); ok && ns != "" {
		if back, err := k.KubeNamespaceOf(ns); err == nil && back == kns {
			return ns, nil
		}
	}
	return "", fmt.Errorf("no namespace of the scheduler runs its pods in Kubernetes namespace %s "+
		"(kube_namespace %q is default's; kube_namespaces %q; kube_namespace_prefix %q): "+
		"put the object in its namespace's Kubernetes namespace", kns, k.Namespace, k.Namespaces, k.NamespacePrefix)
}

func parseNamespaceMap(v string) (map[string]string, error) {
	if strings.TrimSpace(v) == "" {
		return nil, nil
	}
	m := map[string]string{}
	for _, kv := range strings.Split(v, ",") {
		kv = strings.TrimSpace(kv)
		if kv == "" {
			continue
		}
		from, to, ok := strings.Cut(kv, "=")
		from, to = strings.TrimSpace(from), strings.TrimSpace(to)
		switch {
		case !ok:
			return nil, fmt.Errorf("%q is not namespace=kubernetes-namespace", kv)
		case from == defaultNS:
			return nil, fmt.Errorf("%q: the default namespace's pods run in kube_namespace; set that instead", kv)
		case from != "*" && !kubeNSName.MatchString(from):
			return nil, fmt.Errorf("%q: %q is not a namespace name (or * for every other one)", kv, from)
		case !kubeNSName.MatchString(to):
			return nil, fmt.Errorf("%q: %q is not a Kubernetes namespace name", kv, to)
		}
		if _, dup := m[from]; dup {
			return nil, fmt.Errorf("%q: namespace %s is mapped twice", kv, from)
		}
		m[from] = to
	}
	return m, nil
}

// KubeNamespacesKnown is every Kubernetes namespace the settings name (kube_namespace and
// kube_namespaces' targets), sorted: those the scheduler watches from its start.
func (k Kube) KubeNamespacesKnown() []string {
	set := map[string]bool{k.Namespace: true}
	for _, v := range k.NamespaceMap() {
		set[v] = true
	}
	out := make([]string, 0, len(set))
	for v := range set {
		out = append(out, v)
	}
	sort.Strings(out)
	return out
}

func kubeNamespaceSettings() []setting {
	return []setting{
		{"kube_namespaces", "", "Kubernetes namespaces of the scheduler's namespaces, where they differ from kube_namespace_prefix + the name: " +
			"ns=kubernetes-namespace,…; *=NAME puts every namespace not named into NAME (all in one, as before namespaces had their own); " +
			"the default namespace's is kube_namespace", func(c *Config, v string) error {
			if _, err := parseNamespaceMap(v); err != nil {
				return fmt.Errorf("kube_namespaces: %w", err)
			}
			c.Kube.Namespaces = v
			return nil
		}},
		{"kube_namespace_prefix", "", "a namespace not in kube_namespaces runs its pods in the Kubernetes namespace of its name with this prefix (empty: its name; ej- makes pay's ej-pay)", func(c *Config, v string) error {
			if !kubeNSPrefix.MatchString(v) || len(v) > 62 {
				return fmt.Errorf("kube_namespace_prefix: %q must be lower-case letters, digits and '-', starting with a letter or digit", v)
			}
			c.Kube.NamespacePrefix = v
			return nil
		}},
	}
}

func init() { settings = append(settings, kubeNamespaceSettings()...) }
