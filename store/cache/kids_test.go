package cache

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
)

// A kidSet agrees with a plain set through adds and removes that take it
// past smallKids and back, in order (names) and out of it (each); a node
// drops its set with its last child.
func TestKidSetIsASet(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	n := &node{}
	model := map[string]bool{}
	for i := 0; i < 20000; i++ {
		name := "k" + strconv.Itoa(rng.IntN(3*smallKids))
		if i%4000 > 2500 { // stretches of removals bring the set back to small and empty
			n.removeKid(name)
			delete(model, name)
		} else if added := n.addKid(name); added == model[name] {
			t.Fatalf("add %s: new %v, but the model had it %v", name, added, model[name])
		} else {
			model[name] = true
		}
		want := make([]string, 0, len(model))
		for k := range model {
			want = append(want, k)
		}
		slices.Sort(want)
		if got := n.sortedKids(); !slices.Equal(got, want) || n.kidCount() != len(want) {
			t.Fatalf("step %d: names %v (count %d), want %v", i, got, n.kidCount(), want)
		}
		var each []string
		n.eachKid(func(k string) { each = append(each, k) })
		slices.Sort(each)
		if !slices.Equal(each, want) {
			t.Fatalf("step %d: each %v, want %v", i, each, want)
		}
		if len(model) == 0 && n.kids != nil {
			t.Fatalf("step %d: an empty set is kept", i)
		}
	}
}
