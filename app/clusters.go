package app

import (
	"fmt"
	"slices"
)

// ValidClusterName reports whether name can name a cluster (docs/clusters.md): a DNS
// label (lower-case letters, digits and '-', neither first nor last, at most 63), so that
// it can be a metrics label value, a URL path segment and a Kubernetes label value as it
// is. Checked by hand: a pattern compiled at init costs every process that imports app.
func ValidClusterName(name string) bool {
	if name == "" || len(name) > 63 || name[0] == '-' || name[len(name)-1] == '-' {
		return false
	}
	for _, c := range []byte(name) {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' {
			return false
		}
	}
	return true
}

// MaxClusters bounds a placement policy's list of clusters.
const MaxClusters = 32

// ValidateClusters checks a placement policy's list of clusters (a job's or a
// namespace's `clusters`, in order of preference): cluster names, each once. Whether the
// clusters are configured is the scheduler's to say: a job may name one before it is
// added, and waits for it.
func ValidateClusters(field string, names []string) error {
	if len(names) > MaxClusters {
		return fmt.Errorf("%w: %s names %d clusters, at most %d", ErrInvalid, field, len(names), MaxClusters)
	}
	for i, n := range names {
		if !ValidClusterName(n) {
			return fmt.Errorf("%w: %s[%d] %q is not a cluster name (lower-case letters, digits and '-', at most 63 characters)", ErrInvalid, field, i, n)
		}
		if slices.Contains(names[:i], n) {
			return fmt.Errorf("%w: %s names cluster %q twice", ErrInvalid, field, n)
		}
	}
	return nil
}
