package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
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
	if !strings.HasSuffix(o.env.ExecutorPath, "/bin/executor") || o.env.Workers != 24 || o.env.Keep {
		t.Errorf("env = %+v", o.env)
	}
	if o.latency.Triggers() != 200 || o.latency.Gap() != 50*time.Millisecond {
		t.Errorf("latency: triggers %d gap %s", o.latency.Triggers(), o.latency.Gap())
	}
}

func TestParseOptionsValues(t *testing.T) {
	o, err := parseTest(t, "-only", "gobench, java", "-workers", "3", "-triggers", "7")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(o.only, map[string]bool{"gobench": true, "java": true}) {
		t.Errorf("only = %v", o.only)
	}
	if o.env.Workers != 3 || o.latency.Triggers() != 7 {
		t.Errorf("workers %d triggers %d", o.env.Workers, o.latency.Triggers())
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
	var o options
	parts := []any{&o.env}
	for _, p := range o.parts() {
		parts = append(parts, p)
	}
	for _, p := range parts {
		ty := reflect.TypeOf(p).Elem()
		if n := ty.NumField(); n > 20 {
			t.Errorf("%s: %d fields, want at most 20", ty, n)
		}
	}
	if n := reflect.TypeOf(o).NumField(); n > 20 {
		t.Errorf("options: %d fields, want at most 20", n)
	}
}

// TestPlanKeepsTheOrder: -only picks scenarios, they run in the fixed order,
// producer takes register along, and only gobench needs no binaries.
func TestPlanKeepsTheOrder(t *testing.T) {
	names := func(only map[string]bool) string {
		var n []string
		for _, s := range chosenSteps(only) {
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
	if got := len(chosenSteps(o.only)); got != len(scenarios)-1 { // register and producer are one step
		t.Errorf("every scenario: %d steps, want %d", got, len(scenarios)-1)
	}
	if needsBinaries(map[string]bool{"gobench": true}) || !needsBinaries(map[string]bool{"gobench": true, "ha": true}) {
		t.Error("needsBinaries: only gobench runs without bin/")
	}
}

var update = flag.Bool("update", false, "rewrite testdata/flags.txt")

// TestFlagsAreTheGoldenOnes: every flag, with its default, as testdata/flags.txt
// lists them, so moving a family's options between packages changes none
// (go test ./cmd/ejbench -run Flags -update after a deliberate change).
func TestFlagsAreTheGoldenOnes(t *testing.T) {
	fs := flag.NewFlagSet("ejbench", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if _, err := parseOptions(fs, nil); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	fs.VisitAll(func(f *flag.Flag) {
		def := f.DefValue
		if f.Name == "sim-zk" || f.Name == "sim-zk-ensemble" {
			def = "(from the environment)"
		}
		fmt.Fprintf(&b, "-%s=%s\n", f.Name, def)
	})
	golden := filepath.Join("testdata", "flags.txt")
	if *update {
		if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if b.String() != string(want) {
		t.Errorf("flags differ from %s (-update after a deliberate change):\n%s", golden, b.String())
	}
}
