package jobs

import (
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"testing"
)

// TestInitAllocatesLittle: the packages every process links (the executor starts once
// per pod) compile their validation patterns on first use, not at init. Compiled at init,
// they allocated 630 KB (jobs) and 128 KB (app) and took about 9 ms of CPU per executor
// start. The test binary is run again with GODEBUG=inittrace=1, which reports each
// package's init allocations (deterministic, unlike its clock).
func TestInitAllocatesLittle(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("rerun: %v\n%s", err, out)
	}
	for _, pkg := range []string{"github.com/ejcloud/elasticjob/jobs", "github.com/ejcloud/elasticjob/app"} {
		m := regexp.MustCompile(`(?m)^init ` + regexp.QuoteMeta(pkg) + ` @.*, (\d+) bytes`).FindSubmatch(out)
		if m == nil {
			t.Fatalf("no init line for %s in:\n%s", pkg, out)
		}
		if n, _ := strconv.Atoi(string(m[1])); n > 16<<10 {
			t.Errorf("init of %s allocated %d bytes; want ≤ 16 KB (a pattern compiled at init?)", pkg, n)
		}
	}
}
