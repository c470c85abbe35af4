package kubescale

import (
	"flag"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/cmd/ejbench/internal/kwokcluster"
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

func TestOptionsDefaultsAndValues(t *testing.T) {
	o, err := parse(t)
	if err != nil {
		t.Fatal(err)
	}
	if o.ksWindow != time.Minute || o.ksNodes != 1000 || !o.ksSides["jobs"] || !o.ksSides["ours"] || o.ksLimits != (kwokcluster.Limits{}) {
		t.Errorf("defaults: window %s nodes %d sides %v limits %+v", o.ksWindow, o.ksNodes, o.ksSides, o.ksLimits)
	}
	o, err = parse(t, "-kube-scale-their-limits", "100/200", "-kube-scale-scheduler-args", "--a b", "-kube-scale-sides", "ours")
	if err != nil {
		t.Fatal(err)
	}
	if o.ksLimits != (kwokcluster.Limits{KCMQPS: 100, KCMBurst: 200, SchedQPS: 100, SchedBurst: 200}) {
		t.Errorf("limits = %+v", o.ksLimits)
	}
	if !reflect.DeepEqual(o.ksArgs, []string{"--a", "b"}) || len(o.ksSides) != 1 {
		t.Errorf("args %v sides %v", o.ksArgs, o.ksSides)
	}
	for _, bad := range []string{"1", "0/5", "a/b"} {
		if _, err := parse(t, "-kube-scale-their-limits", bad); err == nil || !strings.Contains(err.Error(), "want QPS/burst") {
			t.Errorf("-kube-scale-their-limits %q: err = %v", bad, err)
		}
	}
}
