package archtest

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// TestObserversDoNotImportTheDeadlineLoop: history/... and metrics hear
// the deadline watcher through package observe (DeadlineAlert, Hook, the
// Deadlines and Estimates sinks) and reach package deadline, a leader loop
// reading the registry, neither directly nor through another package.
func TestObserversDoNotImportTheDeadlineLoop(t *testing.T) {
	g := loadGraph(t)
	if _, ok := g.pkgs["deadline"]; !ok {
		t.Fatal("no package deadline: the test looks at the wrong tree")
	}
	for _, p := range []string{"history", "metrics"} {
		for _, chain := range g.reaches(p, "deadline") {
			t.Errorf("%s: %s hears the deadline watcher through package observe, never by importing it", chain, p)
		}
	}
}

// TestKubeEngineDoesNotImportTheRegistry: the Kubernetes engine keeps its
// log tails through kube.TailStore, an interface it owns and the wiring
// implements over the registry; it reaches package registry neither
// directly nor through another package.
func TestKubeEngineDoesNotImportTheRegistry(t *testing.T) {
	g := loadGraph(t)
	if _, ok := g.pkgs["registry"]; !ok {
		t.Fatal("no package registry: the test looks at the wrong tree")
	}
	for _, chain := range g.reaches("engine/kube", "registry") {
		t.Errorf("%s: engine/kube takes what it needs of the registry through an interface of its own", chain)
	}
}

// soakImporters may import the fault soak (internal/soak): its runner
// and the soak's own packages (the smoke in e2e/soak is test files only,
// outside the graph). cmd/mesos-local writes the soak's run log
// (--sim-record) and so may import internal/soak/runlog, the format, and
// nothing else of it.
var soakImporters = map[string][]string{
	"cmd/ejsoak":      {"internal/soak", "internal/soak/runlog"},
	"cmd/mesos-local": {"internal/soak/runlog"},
}

// TestSoakStaysTestTooling: no package of the product imports the fault
// soak, which is test tooling (it starts clusters and drives an engine's
// packages); only those of soakImporters, and the soak itself, do.
func TestSoakStaysTestTooling(t *testing.T) {
	g := loadGraph(t)
	if _, ok := g.pkgs["internal/soak"]; !ok {
		t.Fatal("no package internal/soak: the test looks at the wrong tree")
	}
	for _, bad := range g.soakImports(soakImporters) {
		t.Errorf("%s: the fault soak is test tooling; only its runner (cmd/ejsoak) imports it", bad)
	}
}

// soakImports lists the imports of internal/soak/... by packages outside
// it that allowed does not let make them.
func (g graph) soakImports(allowed map[string][]string) []string {
	var out []string
	for _, p := range sortedKeys(g.pkgs) {
		if within(p, "internal/soak") {
			continue
		}
		for _, imp := range g.pkgs[p] {
			if rel, local := g.local(imp); local && within(rel, "internal/soak") && !slices.Contains(allowed[p], rel) {
				out = append(out, p+" imports "+rel)
			}
		}
	}
	return out
}

// TestNoFolderCircle: the module's folders form no circle. For each import
// between two packages of the module, the arrow is drawn between the two
// sibling folders that hold them (below the deepest folder holding both:
// store/etcd importing election is an arrow store → election); arrows
// between a folder and what is inside it are not drawn. A circle of such
// arrows (store → election → store) means neither folder can be read, or
// moved, without the other.
func TestNoFolderCircle(t *testing.T) {
	g := loadGraph(t)
	for _, c := range g.folderCircles() {
		t.Errorf("folders in a circle: %s", c.arrows)
	}
}

// circle is a circle of sibling folders: the folders, and for each arrow
// one import that draws it ("store → election (store/etcd imports
// election)").
type circle struct {
	folders []string
	arrows  string
}

func (c circle) key() string { return strings.Join(c.folders, " ") }

// folderCircles lists each circle of sibling folders.
func (g graph) folderCircles() []circle {
	arrows := map[string]map[string]string{} // folder → folder → an import drawing it
	for _, p := range sortedKeys(g.pkgs) {
		for _, imp := range g.pkgs[p] {
			q, local := g.local(imp)
			if !local {
				continue
			}
			a, b, ok := siblings(p, q)
			if !ok {
				continue
			}
			if arrows[a] == nil {
				arrows[a] = map[string]string{}
			}
			if _, seen := arrows[a][b]; !seen {
				arrows[a][b] = p + " imports " + q
			}
		}
	}
	var out []circle
	for _, scc := range components(arrows) {
		var parts []string
		for _, a := range scc {
			for _, b := range sortedKeys(arrows[a]) {
				if slices.Contains(scc, b) {
					parts = append(parts, fmt.Sprintf("%s → %s (%s)", a, b, arrows[a][b]))
				}
			}
		}
		out = append(out, circle{scc, strings.Join(parts, "; ")})
	}
	return out
}

// siblings returns the two folders, children of the deepest folder holding
// both p and q, that hold p and q; false when one holds the other (or they
// are one package). A folder named internal only marks what is hidden from
// other modules and is no layer of its own: internal/soak and
// internal/recent are two folders, as if each stood at the top.
func siblings(p, q string) (string, string, bool) {
	ps, qs := segments(p), segments(q)
	i := 0
	for i < len(ps) && i < len(qs) && ps[i] == qs[i] {
		i++
	}
	if i == len(ps) || i == len(qs) {
		return "", "", false
	}
	return strings.Join(ps[:i+1], "/"), strings.Join(qs[:i+1], "/"), true
}

// segments splits a package path into folders, internal joined to the
// folder below it.
func segments(p string) []string {
	var out []string
	for _, s := range strings.Split(p, "/") {
		if n := len(out); n > 0 && out[n-1] == "internal" {
			out[n-1] += "/" + s
			continue
		}
		out = append(out, s)
	}
	return out
}

// components returns the strongly connected components of more than one
// node (Tarjan), each sorted, in order.
func components(arrows map[string]map[string]string) [][]string {
	index, low := map[string]int{}, map[string]int{}
	on := map[string]bool{}
	var stack []string
	var out [][]string
	var visit func(v string)
	visit = func(v string) {
		index[v], low[v] = len(index), len(index)
		stack = append(stack, v)
		on[v] = true
		for _, w := range sortedKeys(arrows[v]) {
			if _, seen := index[w]; !seen {
				visit(w)
				low[v] = min(low[v], low[w])
			} else if on[w] {
				low[v] = min(low[v], index[w])
			}
		}
		if low[v] != index[v] {
			return
		}
		var scc []string
		for {
			w := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			on[w] = false
			scc = append(scc, w)
			if w == v {
				break
			}
		}
		if len(scc) > 1 {
			slices.Sort(scc)
			out = append(out, scc)
		}
	}
	for _, v := range sortedKeys(arrows) {
		if _, seen := index[v]; !seen {
			visit(v)
		}
	}
	slices.SortFunc(out, func(a, b []string) int { return strings.Compare(a[0], b[0]) })
	return out
}

// TestTheLayerChecksFindViolations runs the folder-circle and soak checks
// on a made-up module, so the tests above cannot pass by finding nothing.
func TestTheLayerChecksFindViolations(t *testing.T) {
	const m = "example.com/mod"
	g := graph{module: m, pkgs: map[string][]string{
		"store":            {"fmt"},
		"store/etcd":       {m + "/store", m + "/election"},
		"election":         {m + "/store", m + "/clock"},
		"clock":            {"time"},
		"engine":           {},
		"engine/kube":      {m + "/engine"},
		"cmd/ejsoak":       {m + "/internal/soak"},
		"cmd/mesos-local":  {m + "/internal/soak/runlog", m + "/internal/soak"},
		"internal/soak":    {m + "/engine/kube", m + "/internal/soak/runlog"},
		"scheduler":        {m + "/internal/soak/runlog"},
		"internal/soak/rl": {m + "/internal/soak"},
	}}
	circles := g.folderCircles()
	if len(circles) != 1 || circles[0].key() != "election store" ||
		circles[0].arrows != "election → store (election imports store); store → election (store/etcd imports election)" {
		t.Errorf("folderCircles = %+v, want the one of election and store", circles)
	}
	got := g.soakImports(soakImporters)
	want := []string{"cmd/mesos-local imports internal/soak", "scheduler imports internal/soak/runlog"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("soakImports = %q\nwant %q", got, want)
	}
	if a, b, ok := siblings("store/etcd", "store"); ok {
		t.Errorf("siblings(store/etcd, store) = %s, %s: a folder and what it holds draw no arrow", a, b)
	}
}
