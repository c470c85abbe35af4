package cache

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
)

// A kidSet agrees with a plain map through adds and removes that take it
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
		} else if n.kid(name) != nil {
			if !model[name] {
				t.Fatalf("step %d: %s is a child, but not in the model", i, name)
			}
		} else if model[name] {
			t.Fatalf("step %d: %s is not a child, but in the model", i, name)
		} else {
			n.addKid(name, &node{value: name})
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
		for _, k := range want {
			if c := n.kid(k); c == nil || c.value != k {
				t.Fatalf("step %d: child %s is %v", i, k, c)
			}
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
