package multicluster

import (
	"flag"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestOptionsParse(t *testing.T) {
	for _, tc := range []struct {
		args []string
		err  string
	}{
		{nil, ""},
		{[]string{"-mc-clusters", "1,3"}, "-mc-agents 400 does not split evenly between 3 clusters"},
		{[]string{"-mc-clusters", "0"}, `-mc-clusters "0": "0": want M (mesos-local clusters), Kk (Kubernetes clusters of kwok nodes) or M+Kk`},
		{[]string{"-mc-clusters", "1,+1k"}, `"+1k": want M`},
		{[]string{"-mc-clusters", "1k+1"}, `"1k+1": want M`},
		{[]string{"-mc-clusters", "1+"}, `"1+": want M`},
		{[]string{"-mc-clusters", "k"}, `"k": want M`},
		{[]string{"-mc-clusters", "1+0k"}, `"1+0k": want M`},
		{[]string{"-mc-clusters", "5k"}, `"5k": want M`},
		{[]string{"-mc-clusters", "5+4k"}, `"5+4k": want M`},
		{[]string{"-mc-clusters", "1+2k"}, "-mc-agents 400 does not split evenly between 3 clusters"},
		{[]string{"-mc-kube-limits", "50"}, `-mc-kube-limits "50": want QPS/burst`},
		{[]string{"-mc-kube-limits", "0/100"}, `-mc-kube-limits "0/100": want QPS/burst`},
		{[]string{"-mc-kube-limits", "50/100x"}, `-mc-kube-limits "50/100x": want QPS/burst`},
		{[]string{"-mc-period", "7"}, "-mc-period 7: a number of seconds dividing 60"},
		{[]string{"-mc-phase", "2s"}, "-mc-phase must be at least 4s"},
	} {
		var o Options
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		o.Flags(fs)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		err := o.Parse()
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%v: %v", tc.args, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%v: error %v, want %q", tc.args, err, tc.err)
		}
	}
}

func TestMixes(t *testing.T) {
	var o Options
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	o.Flags(fs)
	if err := fs.Parse([]string{"-mc-clusters", "1, 1+1k,2k,2+2k", "-mc-kube-limits", "200/400"}); err != nil {
		t.Fatal(err)
	}
	if err := o.Parse(); err != nil {
		t.Fatal(err)
	}
	want := []Mix{{Mesos: 1}, {Mesos: 1, Kube: 1}, {Kube: 2}, {Mesos: 2, Kube: 2}}
	if !slices.Equal(o.Counts, want) || o.KubeQPS != 200 || o.KubeBurst != 400 {
		t.Errorf("counts %v, limits %d/%d", o.Counts, o.KubeQPS, o.KubeBurst)
	}
	var names []string
	for _, m := range o.Counts {
		names = append(names, m.String())
	}
	if got := strings.Join(names, ","); got != "1,1+1k,2k,2+2k" {
		t.Errorf("names %s", got)
	}
}

// fireGaps counts a fire run twice once per extra run, and a whole second
// of the span with no run of a job as missed.
func TestFireGaps(t *testing.T) {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return base.Add(time.Duration(s) * time.Second) }
	runs := []moveRun{
		{Job: "a", Nominal: at(1)}, {Job: "a", Nominal: at(2)}, {Job: "a", Nominal: at(2)}, {Job: "a", Nominal: at(4)},
		{Job: "b", Nominal: at(1)}, {Job: "b", Nominal: at(2)}, {Job: "b", Nominal: at(3)}, {Job: "b", Nominal: at(4)},
		{Job: "b", Nominal: at(9)}, // outside the span
	}
	// the span as time.Now gives it: in the local zone, with a monotonic reading
	doubled, missed := fireGaps(runs, at(0).Add(500*time.Millisecond).In(time.FixedZone("here", 3600)), at(5).Local())
	if doubled != 1 || missed != 1 {
		t.Errorf("doubled %d, missed %d; want 1, 1", doubled, missed)
	}
}

func TestLaunchJob(t *testing.T) {
	if got := launchJob(13, 10); !strings.Contains(got, `"cron":"3/10 * * * * ?"`) || !strings.Contains(got, `"shardingTotalCount":4`) ||
		!strings.Contains(got, `"jobParameter":"run=3s exit=0"`) {
		t.Errorf("job 13: %s", got)
	}
}
