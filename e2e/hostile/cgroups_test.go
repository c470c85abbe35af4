//go:build e2e

package hostile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ejcloud/elasticjob/e2e/harness"
)

// The cgroup file system is every user's to read: search's task looks
// there for pay's groups (the namespace's, its containers', its tasks',
// whose names carry pay's job names and task ids) and finds none of
// their names.
func TestHostileCgroupNamesNameNoOtherTeam(t *testing.T) {
	w := newWorld(t, 12)
	probe := `#!/bin/sh
for d in /sys/fs/cgroup/*/; do find "$d" -maxdepth 12 -name '*pay*' 2>/dev/null; done | head -200
echo end-of-cgroups
`
	w.attack("cgnames", "bin/probe.sh", 1, map[string]string{"bin/probe.sh": probe})
	var outs []string
	harness.Eventually(t, waitLong, pollEvery, func() bool {
		outs = w.stdouts("cgnames", "end-of-cgroups")
		return len(outs) == 1
	}, "search's probe to finish")
	agents, _ := filepath.Glob(filepath.Join(w.data, "mesos", "slaves", "*"))
	if len(agents) != 1 {
		t.Fatalf("agents in the data directory: %v", agents)
	}
	// Other schedulers of this host (parallel tests) have groups of their
	// own pay: only this world's are looked for.
	agent := filepath.Base(agents[0])
	for _, l := range strings.Split(outs[0], "\n") {
		if strings.Contains(l, w.payTaskID) || strings.Contains(l, agent+"/ns-pay") {
			t.Errorf("CROSSED: search's task lists pay's group %s", l)
		}
	}
	if !alive(w.payPid) {
		t.Errorf("pay's task %d did not survive", w.payPid)
	}
	if _, err := os.Stat(w.paySandbox); err != nil {
		t.Errorf("pay's sandbox: %v", err)
	}
}
