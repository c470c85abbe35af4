package tenant

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// EnvPlan carries the Plan, as JSON, to Init's process.
const EnvPlan = "ELASTICJOB_TENANT_PLAN"

// Plan is what Init sets up before it starts the executor.
type Plan struct {
	UID, GID int
	// Hide are absolute paths made invisible: a directory gets an empty,
	// read-only tmpfs over it, a file /dev/null.
	Hide []string `json:",omitempty"`
	// Show are absolute paths bound back (read-write) at their own path
	// after Hide: the sandbox, the tenant's cache.
	Show []string `json:",omitempty"`
	// ReadOnly are absolute paths bound back read-only: the executor's
	// own directory.
	ReadOnly []string `json:",omitempty"`
	// Dir is the executor's working directory.
	Dir string
	// Argv is the executor's command line; Argv[0] an absolute path.
	Argv []string
	// AllowUserNS lets the executor and its tasks make user namespaces;
	// by default a seccomp filter refuses them.
	AllowUserNS bool `json:",omitempty"`
}

// Validate checks that every path is absolute and clean and that there is
// something to run.
func (p Plan) Validate() error {
	if len(p.Argv) == 0 || !filepath.IsAbs(p.Argv[0]) {
		return fmt.Errorf("tenant: plan: the command must start with an absolute path")
	}
	if p.UID <= 0 || p.GID <= 0 {
		return fmt.Errorf("tenant: plan: uid %d, gid %d: a tenant never runs as root", p.UID, p.GID)
	}
	for _, list := range [][]string{p.Hide, p.Show, p.ReadOnly, {p.Dir}} {
		for _, s := range list {
			if !filepath.IsAbs(s) || filepath.Clean(s) != s || s == "/" {
				return fmt.Errorf("tenant: plan: %q is not an absolute, clean path below /", s)
			}
		}
	}
	return nil
}

// Encode is the plan as EnvPlan's value.
func (p Plan) Encode() string {
	b, _ := json.Marshal(p)
	return string(b)
}

// Decode reads EnvPlan's value.
func Decode(s string) (Plan, error) {
	var p Plan
	if err := json.Unmarshal([]byte(s), &p); err != nil {
		return p, fmt.Errorf("tenant: plan: %w", err)
	}
	return p, p.Validate()
}

// hideOrder is Hide without the paths under another hidden path (already
// gone when their turn comes), shortest first.
func hideOrder(hide []string) []string {
	sorted := slices.Clone(hide)
	slices.SortFunc(sorted, func(a, b string) int { return len(a) - len(b) })
	var out []string
	for _, h := range sorted {
		if !slices.ContainsFunc(out, func(o string) bool { return within(h, o) }) {
			out = append(out, h)
		}
	}
	return out
}

// within says whether p is dir or below it.
func within(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, dir+"/")
}
