package workflow

import (
	"reflect"
	"testing"
)

func TestUses(t *testing.T) {
	cfgs := []Config{
		{Name: "nightly", Nodes: []Node{node("a", "load"), node("b", "load", "a"), node("c", "other", "b")}},
		{Name: "etl", Nodes: []Node{node("extract", "load"), node("clean", "clean_job", "extract")}},
		{Name: "unrelated", Nodes: []Node{node("x", "other")}},
		{Name: "both", Nodes: []Node{node("p", "clean_job"), node("q", "load", "p")}},
	}
	got := Uses(cfgs, "load", "clean_job")
	want := []Use{
		{Workflow: "both", Nodes: []string{"p", "q"}, Jobs: []string{"clean_job", "load"}},
		{Workflow: "etl", Nodes: []string{"extract", "clean"}, Jobs: []string{"clean_job", "load"}},
		{Workflow: "nightly", Nodes: []string{"a", "b"}, Jobs: []string{"load"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Uses = %+v\nwant %+v", got, want)
	}
	if d := DescribeUses(want[1:]); d != "workflow etl (nodes extract, clean: jobs clean_job, load), workflow nightly (nodes a, b: job load)" {
		t.Errorf("DescribeUses = %q", d)
	}
	if d := DescribeUses([]Use{{Workflow: "w", Nodes: []string{"n"}, Jobs: []string{"j"}}}); d != "workflow w (node n: job j)" {
		t.Errorf("DescribeUses = %q", d)
	}
	if n := UseNames(want); !reflect.DeepEqual(n, []string{"both", "etl", "nightly"}) {
		t.Errorf("UseNames = %v", n)
	}
	if u := Uses(cfgs, "nobody"); u != nil {
		t.Errorf("a job no workflow runs: %+v", u)
	}
}
