package engine

// NamespaceCaps caps the scheduler's namespaces where the engine does so itself
// (Kubernetes: each namespace's Kubernetes namespace must exist, and its ResourceQuotas
// bound what its pods may request). The launch round honours the caps beside the
// namespaces' own limits. Every Driver answers it; an engine that caps nothing (Mesos)
// answers nil.
type NamespaceCaps interface {
	// NamespaceCaps answers for the scheduler namespaces named, in memory (every round asks);
	// a namespace the engine does not cap is left out.
	NamespaceCaps(namespaces []string) map[string]NamespaceCap
}

// NamespaceCap is an engine's cap on one scheduler namespace.
type NamespaceCap struct {
	// Capped: its running tasks' shards may hold at most CPUs and MemMB.
	Capped bool
	CPUs   float64
	MemMB  float64
	Name   string // what sets the cap, in words, with its figures
	Closed string // not "": none of its work can launch now, and why
}
