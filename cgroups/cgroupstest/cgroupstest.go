// Package cgroupstest gives tests a real, writable cgroup hierarchy, or
// skips them: when not root, or (outside CI) when this machine has no
// usable cgroups. Under CI as root a missing hierarchy fails the test, so
// the isolation tests never silently stop running where they can.
package cgroupstest

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/cgroups"
)

// Root is the cgroups root tests create their groups under.
const Root = "elasticjob-test"

// Require returns the machine's hierarchy and a fresh group for the test,
// destroyed (every process killed) when the test ends.
func Require(t testing.TB) (*cgroups.Hierarchy, *cgroups.Group) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to write cgroups (run as root, e.g. under make test)")
	}
	h, err := cgroups.Detect(cgroups.Probe{Root: Root})
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("root but no usable cgroups under CI: %v", err)
		}
		t.Skipf("no usable cgroups: %v", err)
	}
	g := h.Group(fmt.Sprintf("%s/%s-%d-%d", Root, sanitize(t.Name()), os.Getpid(), time.Now().UnixNano()))
	if err := g.Create(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := g.Destroy(10 * time.Second); err != nil {
			t.Errorf("destroy test cgroup: %v", err)
		}
	})
	return h, g
}

func sanitize(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
			b[i] = '_'
		}
	}
	if len(b) > 60 {
		b = b[:60]
	}
	return string(b)
}
