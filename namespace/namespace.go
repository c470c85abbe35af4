package namespace

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/ejcloud/elasticjob/app"
)

// Default is the namespace of everything registered without one.
const Default = "default"

// Sep joins a namespace and a name into a key.
const Sep = "~"

// MaxNameLength bounds a namespace's name (a DNS label, so a later
// mapping onto a Kubernetes namespace of the same name needs no rewrite).
const MaxNameLength = 63

// ErrInvalid is wrapped by every validation error.
var ErrInvalid = errors.New("invalid namespace")

var nameRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// ValidateName checks a namespace name: a DNS label (1–63 of [a-z0-9-],
// starting and ending with a letter or digit).
func ValidateName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: the namespace name is empty", ErrInvalid)
	case len(name) > MaxNameLength:
		return fmt.Errorf("%w: namespace %q is longer than %d characters", ErrInvalid, name, MaxNameLength)
	case !nameRE.MatchString(name):
		return fmt.Errorf("%w: namespace %q must be lower-case letters, digits and '-', starting and ending with a letter or digit", ErrInvalid, name)
	}
	return nil
}

// Key is the scheduler-wide key of name in namespace ns: name itself in
// the default namespace (or with ns empty), "{ns}~{name}" otherwise.
func Key(ns, name string) string {
	if ns == "" || ns == Default || name == "" {
		return name
	}
	return ns + Sep + name
}

// Split is Key's inverse: the namespace and the name of a key (a bare
// name is the default namespace's).
func Split(key string) (ns, name string) {
	if i := strings.Index(key, Sep); i > 0 {
		return key[:i], key[i+1:]
	}
	return Default, key
}

// Of is the namespace of a key.
func Of(key string) string {
	ns, _ := Split(key)
	return ns
}

// Name is the name part of a key.
func Name(key string) string {
	_, n := Split(key)
	return n
}

// In reports whether key belongs to namespace ns.
func In(key, ns string) bool { return Of(key) == normal(ns) }

// Local returns the name of key within ns, and false when key belongs to
// another namespace.
func Local(key, ns string) (string, bool) {
	kns, name := Split(key)
	if kns != normal(ns) {
		return "", false
	}
	return name, true
}

func normal(ns string) string {
	if ns == "" {
		return Default
	}
	return ns
}

// Resources is an amount of CPU and memory.
type Resources struct {
	CPUCount float64 `json:"cpuCount"`
	MemoryMB float64 `json:"memoryMB"`
}

// Add returns r + o.
func (r Resources) Add(o Resources) Resources {
	return Resources{CPUCount: r.CPUCount + o.CPUCount, MemoryMB: r.MemoryMB + o.MemoryMB}
}

// Record is what the scheduler knows of a namespace beyond its contents:
// the capacity it is promised. A capacity policy reads it (Guarantee: what
// the namespace gets before any other borrows; Limit: the most it may
// hold; Weight: its share among borrowers). Nil fields are unset.
type Record struct {
	Name      string     `json:"name"`
	Guarantee *Resources `json:"guarantee,omitempty"`
	Limit     *Resources `json:"limit,omitempty"`
	// Weight orders borrowers by weighted dominant share; 0 is unset (1).
	Weight float64 `json:"weight,omitempty"`
	// Jitter is the jitter window of the namespace's jobs and workflows
	// that set none of their own ("": the scheduler's cron_jitter; "0s":
	// none; docs/jobs.md).
	Jitter string `json:"jitter,omitempty"`
	// Clusters are the clusters the namespace's jobs may run on, in order of preference,
	// for the jobs that name none of their own ([]: any; docs/clusters.md).
	Clusters []string `json:"clusters,omitempty"`
	// PerCluster are its guarantee and limit on each cluster named (docs/clusters.md):
	// its work on that cluster is counted against them, beside the guarantee and the
	// limit above, which count its work on every cluster together.
	PerCluster map[string]ClusterCapacity `json:"perCluster,omitempty"`
	// Caps are its caps on the hosts its tasks run on (the embedded agent
	// under tenant isolation); nil, or a nil field, takes the scheduler's
	// setting.
	Caps *HostCaps `json:"caps,omitempty"`
}

// ClusterCapacity is a namespace's guarantee and limit on one cluster.
type ClusterCapacity struct {
	Guarantee *Resources `json:"guarantee,omitempty"`
	Limit     *Resources `json:"limit,omitempty"`
}

// HostCaps are a namespace's own caps on all of its executors and tasks
// on a host together: most processes and threads, memory, and disk (its
// live sandboxes and its app cache). A nil field takes the scheduler's
// setting (namespace_pids_max, namespace_mem_mb, namespace_disk_mb); 0 is
// no cap.
type HostCaps struct {
	PidsMax  *int64 `json:"pidsMax,omitempty"`
	MemoryMB *int64 `json:"memoryMB,omitempty"`
	DiskMB   *int64 `json:"diskMB,omitempty"`
}

// The bounds of a namespace's host caps: far above any host (the kernel's
// pid_max is at most 4194304), so a figure past them is a typo.
const (
	MaxPidsCap = 1 << 22
	MaxDiskMB  = 1 << 30 // 1 PiB
)

// Or is each cap, the namespace's own or else the scheduler's (given).
func (c *HostCaps) Or(pids, memMB, diskMB int64) (int64, int64, int64) {
	if c == nil {
		return pids, memMB, diskMB
	}
	pick := func(own *int64, dflt int64) int64 {
		if own != nil {
			return *own
		}
		return dflt
	}
	return pick(c.PidsMax, pids), pick(c.MemoryMB, memMB), pick(c.DiskMB, diskMB)
}

func (c *HostCaps) validate() error {
	if c == nil {
		return nil
	}
	for _, f := range []struct {
		name string
		v    *int64
		max  int64
	}{{"caps.pidsMax", c.PidsMax, MaxPidsCap}, {"caps.memoryMB", c.MemoryMB, MaxMemoryMB}, {"caps.diskMB", c.DiskMB, MaxDiskMB}} {
		if f.v != nil && (*f.v < 0 || *f.v > f.max) {
			return fmt.Errorf("%w: %s must be from 0 (no cap) to %d, got %d (leave it out for the scheduler's setting)", ErrInvalid, f.name, f.max, *f.v)
		}
	}
	return nil
}

// MaxJitter bounds a namespace's jitter window.
const MaxJitter = 24 * time.Hour

// JitterOr is the jitter window the namespace gives its jobs that set
// none: its own, or wide (the scheduler's) when it sets none or an
// invalid one.
func (r Record) JitterOr(wide time.Duration) time.Duration {
	if r.Jitter == "" {
		return wide
	}
	d, err := time.ParseDuration(r.Jitter)
	if err != nil || d < 0 || d > MaxJitter {
		return wide
	}
	return d
}

// MaxWeight bounds a namespace's weight.
const MaxWeight = 1000

// EffectiveWeight is the weight a policy uses: 1 when unset.
func (r Record) EffectiveWeight() float64 {
	if r.Weight == 0 {
		return 1
	}
	return r.Weight
}

// Validate checks the name and the capacity fields and names the first
// bad one.
func (r Record) Validate() error {
	if err := ValidateName(r.Name); err != nil {
		return err
	}
	if err := checkCapacity("", r.Guarantee, r.Limit); err != nil {
		return err
	}
	if err := r.validatePerCluster(); err != nil {
		return err
	}
	if math.IsNaN(r.Weight) || r.Weight < 0 || r.Weight > MaxWeight {
		return fmt.Errorf("%w: weight must be between 0 (unset: 1) and %d, got %v", ErrInvalid, MaxWeight, r.Weight)
	}
	if r.Jitter != "" {
		if d, err := time.ParseDuration(r.Jitter); err != nil || d < 0 || d > MaxJitter {
			return fmt.Errorf("%w: jitter %q must be a duration from 0s to %s, such as 30m", ErrInvalid, r.Jitter, MaxJitter)
		}
	}
	if err := app.ValidateClusters("clusters", r.Clusters); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, strings.TrimPrefix(err.Error(), app.ErrInvalid.Error()+": "))
	}
	return r.Caps.validate()
}

// checkCapacity checks a guarantee and a limit (prefix names where they are: "" or
// "perCluster.k8s.").
func checkCapacity(prefix string, g, l *Resources) error {
	for _, f := range []struct {
		field string
		res   *Resources
	}{{"guarantee", g}, {"limit", l}} {
		if f.res == nil {
			continue
		}
		if err := checkAmount(prefix+f.field+".cpuCount", f.res.CPUCount); err != nil {
			return err
		}
		if err := checkAmount(prefix+f.field+".memoryMB", f.res.MemoryMB); err != nil {
			return err
		}
	}
	if g != nil && l != nil {
		if g.CPUCount > l.CPUCount {
			return fmt.Errorf("%w: %sguarantee.cpuCount %v is above %slimit.cpuCount %v", ErrInvalid, prefix, g.CPUCount, prefix, l.CPUCount)
		}
		if g.MemoryMB > l.MemoryMB {
			return fmt.Errorf("%w: %sguarantee.memoryMB %v is above %slimit.memoryMB %v", ErrInvalid, prefix, g.MemoryMB, prefix, l.MemoryMB)
		}
	}
	return nil
}

// validatePerCluster checks each cluster's guarantee and limit: a cluster name, amounts
// in bounds, a guarantee within its limit and within the global limit (a guarantee the
// namespace may never use is a mistake).
func (r Record) validatePerCluster() error {
	if len(r.PerCluster) > app.MaxClusters {
		return fmt.Errorf("%w: perCluster names %d clusters, at most %d", ErrInvalid, len(r.PerCluster), app.MaxClusters)
	}
	for _, name := range slices.Sorted(maps.Keys(r.PerCluster)) {
		cc := r.PerCluster[name]
		if !app.ValidClusterName(name) {
			return fmt.Errorf("%w: perCluster %q is not a cluster name (lower-case letters, digits and '-', at most 63 characters)", ErrInvalid, name)
		}
		if cc.Guarantee == nil && cc.Limit == nil {
			return fmt.Errorf("%w: perCluster.%s sets neither a guarantee nor a limit (leave the cluster out instead)", ErrInvalid, name)
		}
		prefix := "perCluster." + name + "."
		if err := checkCapacity(prefix, cc.Guarantee, cc.Limit); err != nil {
			return err
		}
		if g, l := cc.Guarantee, r.Limit; g != nil && l != nil && (g.CPUCount > l.CPUCount || g.MemoryMB > l.MemoryMB) {
			return fmt.Errorf("%w: %sguarantee (%v CPUs, %v MB) is above the namespace's limit (%v CPUs, %v MB)", ErrInvalid, prefix,
				g.CPUCount, g.MemoryMB, l.CPUCount, l.MemoryMB)
		}
	}
	return nil
}

// The largest guarantee or limit, the bounds of a job's own cpuCount and
// memoryMB (app.MaxCPUCount, app.MaxMemoryMB): far above any cluster, so
// a figure past them is a typo (1e20 CPUs), and the launch round's sums in
// thousandths of a core stay far inside int64.
const (
	MaxCPUCount = 100_000 // cores
	MaxMemoryMB = 1 << 30 // 1 PiB
)

func checkAmount(field string, v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return fmt.Errorf("%w: %s must be a number of at least 0, got %v", ErrInvalid, field, v)
	}
	bound := float64(MaxCPUCount)
	if strings.HasSuffix(field, "memoryMB") {
		bound = MaxMemoryMB
	}
	if v > bound {
		return fmt.Errorf("%w: %s must be at most %v, got %v", ErrInvalid, field, bound, v)
	}
	return nil
}
