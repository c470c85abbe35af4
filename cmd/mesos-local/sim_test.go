package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// --sim-agents turns the simulated cluster on: the scheduler client is
// offered every simulated agent with the --sim-agent-* resources, and the
// log says loudly that nothing runs.
func TestSimulatedAgentsAreOffered(t *testing.T) {
	profile := filepath.Join(t.TempDir(), "cpu.pprof")
	in := start(t, "--port", "0", "--work-dir", t.TempDir(), "--sim-agents", "5", "--sim-agent-cpus", "4",
		"--sim-agent-mem-mb", "2048", "--sim-task-duration", "1s-2s", "--cpu-profile", profile)
	h, _, _ := subscribe(t, in.url, "")
	hosts := map[string]bool{}
	for len(hosts) < 5 {
		select {
		case offers := <-h.offers:
			for _, o := range offers {
				if o.CPUs != 4 || o.MemMB != 2048 || !strings.HasPrefix(o.Hostname, "sim-") {
					t.Fatalf("offer %+v, want cpus 4, mem 2048 on a sim-NNNN host", o)
				}
				hosts[o.Hostname] = true
			}
		case <-time.After(waitFor):
			t.Fatalf("offers of %d agents, want 5", len(hosts))
		}
	}
	if !strings.Contains(in.stderr.String(), "SIMULATED CLUSTER") {
		t.Errorf("the log does not announce the simulation:\n%s", in.stderr)
	}
	if err := in.stop(); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(profile); err != nil || st.Size() == 0 {
		t.Errorf("cpu profile %s: %v", profile, err)
	}
}

func TestSimFlagsRefused(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--sim-task-duration", "2s"}, "add --sim-agents N"},
		{[]string{"--sim-fail-ratio", "0.1", "--sim-agent-cpus", "4"}, "--sim-agent-cpus, --sim-fail-ratio only apply"},
		{[]string{"--sim-agents", "10", "--cpus", "4"}, "--cpus describe this machine's agent"},
		{[]string{"--sim-agents", "-1"}, "--sim-agents -1"},
		{[]string{"--sim-agents", "10", "--sim-task-duration", "5s-2s"}, "min <= max"},
		{[]string{"--sim-agents", "10", "--sim-task-duration", "soon"}, "--sim-task-duration"},
		{[]string{"--sim-agents", "10", "--sim-fail-ratio", "2"}, "--sim-fail-ratio 2"},
		{[]string{"--sim-agents", "10", "--sim-agent-mem-mb", "0"}, "must be positive"},
		{[]string{"--sim-agents", "10", "--sim-executor-idle", "0s"}, "--sim-executor-idle"},
	} {
		_, err := parseArgs(tc.args, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "--help") {
			t.Errorf("%q: %v, want an error containing %q that points at --help", tc.args, err, tc.want)
		}
	}
	o, err := parseArgs([]string{"--sim-agents", "3", "--sim-task-duration", "2s-5s", "--sim-fail-ratio", "0.25"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	sim, err := o.sim.config()
	if err != nil || sim.Agents != 3 || sim.TaskMin != 2*time.Second || sim.TaskMax != 5*time.Second || sim.FailRatio != 0.25 {
		t.Fatalf("config %+v, %v", sim, err)
	}
}
