package kube

import (
	"flag"
	"io"
	"reflect"
	"strings"
	"testing"
)

func parse(t *testing.T, args ...string) (Options, error) {
	t.Helper()
	var o Options
	fs := flag.NewFlagSet("ejbench", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o.Flags(fs)
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	return o, o.Parse()
}

func TestOptionsDefaultsAndLists(t *testing.T) {
	o, err := parse(t)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(o.kubeBindN, []int{3, 20}) || !o.kubeParts["binding"] || o.kubeParts["timeline"] || o.kubeRounds != 5 {
		t.Errorf("defaults: binding %v parts %v rounds %d", o.kubeBindN, o.kubeParts, o.kubeRounds)
	}
	o, err = parse(t, "-kube-binding-shards", "1, 7", "-kube-scheduler-args", "--a b", "-kube-parts", "timeline")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(o.kubeBindN, []int{1, 7}) || !reflect.DeepEqual(o.kubeArgs, []string{"--a", "b"}) || len(o.kubeParts) != 1 {
		t.Errorf("values: binding %v args %v parts %v", o.kubeBindN, o.kubeArgs, o.kubeParts)
	}
	for _, bad := range []string{"3,x", "0", ""} {
		if _, err := parse(t, "-kube-binding-shards", bad); err == nil || !strings.Contains(err.Error(), "is not a job size") {
			t.Errorf("-kube-binding-shards %q: err = %v", bad, err)
		}
	}
}
