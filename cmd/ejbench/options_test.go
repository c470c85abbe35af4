package main

import (
	"flag"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"
)

func parseTest(t *testing.T, args ...string) (options, error) {
	t.Helper()
	fs := flag.NewFlagSet("ejbench", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return parseOptions(fs, args)
}

func TestParseOptionsDefaults(t *testing.T) {
	o, err := parseTest(t)
	if err != nil {
		t.Fatal(err)
	}
	if len(o.only) != len(scenarios) {
		t.Errorf("only = %v, want every scenario", o.only)
	}
	if o.jobs != 100_000 || o.tputRate != 800 || o.simAgents != 1000 || o.ksWindow != time.Minute || o.teamsRepeats != 1 {
		t.Errorf("defaults: jobs %d tput-rate %d sim-agents %d kube-scale-window %s teams-repeats %d", o.jobs, o.tputRate, o.simAgents, o.ksWindow, o.teamsRepeats)
	}
	if !reflect.DeepEqual(o.kubeBindN, []int{3, 20}) || !o.kubeParts["binding"] || !o.ksSides["jobs"] || !o.teamsParts["weights"] {
		t.Errorf("lists: binding %v parts %v sides %v teams %v", o.kubeBindN, o.kubeParts, o.ksSides, o.teamsParts)
	}
	if !strings.HasSuffix(o.executorPath, "/bin/executor") {
		t.Errorf("executorPath = %q", o.executorPath)
	}
}

func TestParseOptionsValues(t *testing.T) {
	o, err := parseTest(t, "-only", "gobench, java", "-kube-scale-their-limits", "100/200", "-kube-scale-scheduler-args", "--a b", "-teams-parts", "weights")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(o.only, map[string]bool{"gobench": true, "java": true}) {
		t.Errorf("only = %v", o.only)
	}
	if o.ksLimits != (cpOptions{kcmQPS: 100, kcmBurst: 200, schedQPS: 100, schedBurst: 200}) {
		t.Errorf("limits = %+v", o.ksLimits)
	}
	if !reflect.DeepEqual(o.ksArgs, []string{"--a", "b"}) || len(o.teamsParts) != 1 {
		t.Errorf("args %v teams %v", o.ksArgs, o.teamsParts)
	}
}

func TestParseOptionsBadInput(t *testing.T) {
	for _, c := range []struct{ args, want string }{
		{"-only nope", `unknown scenario "nope"`},
		{"-kube-binding-shards 3,x", `-kube-binding-shards: "x" is not a job size`},
		{"-kube-binding-shards 0", `"0" is not a job size`},
		{"-kube-scale-their-limits 1", `-kube-scale-their-limits "1": want QPS/burst`},
		{"-kube-scale-their-limits 0/5", `want QPS/burst`},
		{"-jobs x", `invalid value "x" for flag -jobs`},
	} {
		_, err := parseTest(t, strings.Fields(c.args)...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %q", c.args, err, c.want)
		}
	}
}

// TestOptionsPartsStaySmall: every scenario family's options struct, and
// the shared part, stay under about 20 fields (issue 55: no 66-field options).
func TestOptionsPartsStaySmall(t *testing.T) {
	top := reflect.TypeOf(options{})
	own := 0
	for i := range top.NumField() {
		f := top.Field(i)
		if !f.Anonymous {
			own++
			continue
		}
		if n := f.Type.NumField(); n > 20 {
			t.Errorf("%s: %d fields, want at most 20", f.Type.Name(), n)
		}
	}
	if own > 20 {
		t.Errorf("options: %d fields of its own, want at most 20", own)
	}
}

// TestPlanKeepsTheOrder: -only picks scenarios, they run in the fixed order,
// producer takes register along, and only gobench needs no binaries.
func TestPlanKeepsTheOrder(t *testing.T) {
	names := func(only map[string]bool) string {
		var n []string
		for _, s := range plan(only) {
			n = append(n, s.name)
		}
		return strings.Join(n, ",")
	}
	if got := names(map[string]bool{"backfill": true, "gobench": true, "register": true, "producer": true}); got != "register+producer,gobench,backfill" {
		t.Errorf("plan = %s", got)
	}
	o, err := parseTest(t)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(plan(o.only)); got != len(scenarios)-1 { // register and producer are one step
		t.Errorf("every scenario: %d steps, want %d", got, len(scenarios)-1)
	}
	if needsBinaries(map[string]bool{"gobench": true}) || !needsBinaries(map[string]bool{"gobench": true, "ha": true}) {
		t.Error("needsBinaries: only gobench runs without bin/")
	}
}
