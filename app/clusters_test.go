package app

import (
	"errors"
	"strings"
	"testing"
)

func TestValidateClusters(t *testing.T) {
	for _, ok := range [][]string{nil, {"k8s-prod", "mesos-dc1"}, {"a"}, {strings.Repeat("a", 63)}} {
		if err := ValidateClusters("clusters", ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range [][]string{{""}, {"K8s"}, {"-a"}, {"a-"}, {"a_b"}, {"a:b"}, {strings.Repeat("a", 64)}, {"a", "a"}, make([]string, MaxClusters+1)} {
		if err := ValidateClusters("clusters", bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("%q: %v, want invalid", bad, err)
		}
	}
}
