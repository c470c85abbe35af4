package archtest

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// serviceTiers are the test tiers that need built binaries, services or a
// real engine: their tests carry the e2e build tag, so a plain
// `go test ./...` runs the unit and conformance tiers only and `make test`
// (scripts/test.sh) passes -tags e2e. e2e/harness and e2e/conformance are
// libraries of those tiers, with unit tests of their own: no tag.
var serviceTiers = []string{"e2e", "e2e/ha", "e2e/hostile", "e2e/soak", "e2e/realmesos", "e2e/realkube"}

// TestServiceTiersCarryTheE2ETag: every test file of those tiers starts
// with //go:build e2e (a file without it would run in the unit tier, and
// fail there for want of the services).
func TestServiceTiersCarryTheE2ETag(t *testing.T) {
	n := 0
	for _, dir := range serviceTiers {
		files, err := filepath.Glob(filepath.Join("../..", dir, "*_test.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			n++
			if tag := firstLine(t, f); tag != "//go:build e2e" {
				rel, _ := filepath.Rel("../..", f)
				t.Errorf("%s starts with %q, want //go:build e2e (a service tier's test)", rel, tag)
			}
		}
	}
	if n < 50 {
		t.Fatalf("found %d test files in the service tiers; the paths are wrong", n)
	}
}

func firstLine(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan()
	return strings.TrimSpace(sc.Text())
}
