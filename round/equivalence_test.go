package round

import (
	"crypto/sha256"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
)

var rewriteDigests = flag.Bool("rewrite-digests", false, "rewrite testdata/decisions.digest from what Decide returns")

// decisionViews are rounds of a 2,000-job backlog on the large cluster (benchView) as one
// cluster and spread over several, with placement policies of every kind: one cluster
// named, two in order of preference, none, spreading, a namespace's clusters, a drained
// cluster, a busy one, one not configured, clusters bounding their round's tasks, and no
// offer held. The jobs' clusters are assigned in name order, so each view is the same at
// every run.
func decisionViews() map[string]View {
	views := map[string]View{"one cluster": benchView(2_000, 512)}
	spreadOver := func(n int) View {
		v := benchView(2_000, 512)
		name := spreadAgents(&v, n)
		cat := v.Jobs.(*catalog)
		keys := make([]string, 0, len(cat.jobs))
		for k := range cat.jobs {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for j, k := range keys {
			cfg := cat.jobs[k]
			switch j % 3 {
			case 0:
				cfg.Clusters = []string{name(j)}
			case 1:
				cfg.Clusters = []string{name(j), name(j + 1)}
			}
			cfg.SpreadClusters = j%7 == 0
			cat.jobs[k] = cfg
		}
		return v
	}
	for _, n := range []int{2, 4} {
		views[fmt.Sprintf("%d clusters", n)] = spreadOver(n)
	}
	v := spreadOver(4)
	v.Clusters[3].Drained = true
	v.Clusters[1].MaxTasks = 60
	v.Clusters[2].Busy = true
	views["4 clusters, one drained, one busy, one bounded"] = v
	v = spreadOver(2)
	v.Clusters[0].MaxTasks, v.Clusters[1].MaxTasks = 100, 150
	views["2 clusters, both bounded"] = v
	v = spreadOver(3)
	v.Offers = nil
	views["3 clusters, no offer held"] = v
	v = spreadOver(3)
	v.Clusters = append(v.Clusters[:1], v.Clusters[2:]...) // c1's agents and the jobs naming it: not configured
	views["3 clusters, one not configured"] = v
	v = spreadOver(3)
	v.NamespaceClusters = map[string][]string{"default": {"c2", "c0"}}
	views["3 clusters, the namespace's for the jobs naming none"] = v
	return views
}

// TestDecisionsUnchanged: the plans Decide makes of decisionViews are those recorded in
// testdata/decisions.digest (a SHA-256 of each plan's JSON): a change of the round's data
// structures that should decide nothing differently is checked against the decisions
// before it. A change of the policy rewrites the digests with -rewrite-digests, after
// its scenario tests (testdata/*.txt) show what changed.
func TestDecisionsUnchanged(t *testing.T) {
	views := decisionViews()
	names := make([]string, 0, len(views))
	for n := range views {
		names = append(names, n)
	}
	slices.Sort(names)
	var got []string
	for _, n := range names {
		p := Decide(views[n])
		b, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		// The same view decided again decides the same: the digest is the decision's.
		if again, _ := json.Marshal(Decide(views[n])); string(again) != string(b) {
			t.Fatalf("%s: two rounds of one view decided differently", n)
		}
		got = append(got, fmt.Sprintf("%x %d launches, %d waiting: %s", sha256.Sum256(b), len(p.Launches), len(p.Waiting), n))
	}
	const path = "testdata/decisions.digest"
	if *rewriteDigests {
		if err := os.WriteFile(path, []byte(strings.Join(got, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if w := strings.Split(strings.TrimSpace(string(want)), "\n"); !slices.Equal(w, got) {
		t.Errorf("the plans differ from those recorded:\ngot\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(w, "\n"))
	}
}
