package cache

import (
	"slices"
	"strings"
)

// smallKids is the most children a kidSet keeps in a sorted slice alone;
// a set that grows past it gets a map (an insert into a sorted slice
// moves the entries after it).
const smallKids = 32

// kidSet holds a node's children by name. Most directories hold a few (a
// job's running shards) or none: at 100,000 jobs the registry kept 83,000
// per-job directories under /state/running, most of them empty once their
// tasks ended, and a map each (about 200 bytes even when empty) was a
// twelfth of the scheduler's live heap. Small sets are a slice sorted by
// name; a set past smallKids is a map, with the names in order made when
// asked for. A node whose last child goes drops its set (node.kids nil).
type kidSet struct {
	small  []kid            // sorted by name; nil once the set is big
	big    map[string]*node // nil while the set is small
	sorted []string         // big: the names in order, nil until asked for again after a change
}

// kid is a child of a small set.
type kid struct {
	name string
	n    *node
}

func (k *kidSet) search(name string) (int, bool) {
	return slices.BinarySearchFunc(k.small, name, func(e kid, name string) int { return strings.Compare(e.name, name) })
}

// get returns the child name, or nil.
func (k *kidSet) get(name string) *node {
	if k.big != nil {
		return k.big[name]
	}
	if i, found := k.search(name); found {
		return k.small[i].n
	}
	return nil
}

// add adds the child n as name, which it must not hold.
func (k *kidSet) add(name string, n *node) {
	if k.big != nil {
		k.big[name] = n
		k.sorted = nil
		return
	}
	if len(k.small) < smallKids {
		i, _ := k.search(name)
		k.small = slices.Insert(k.small, i, kid{name, n})
		return
	}
	k.big = make(map[string]*node, 2*smallKids)
	for _, e := range k.small {
		k.big[e.name] = e.n
	}
	k.big[name] = n
	k.small = nil
}

// remove removes the child name.
func (k *kidSet) remove(name string) {
	if k.big != nil {
		if _, ok := k.big[name]; ok {
			delete(k.big, name)
			k.sorted = nil
		}
		return
	}
	if i, found := k.search(name); found {
		k.small = slices.Delete(k.small, i, i+1)
	}
}

func (k *kidSet) len() int {
	if k.big != nil {
		return len(k.big)
	}
	return len(k.small)
}

// eachSorted calls f for every child, in the order of their names; a big
// set sorts its names the first time after a change (the caller holds the
// tree's lock for writing).
func (k *kidSet) eachSorted(f func(name string, n *node)) {
	if k.big == nil {
		for _, e := range k.small {
			f(e.name, e.n)
		}
		return
	}
	if k.sorted == nil {
		k.sorted = make([]string, 0, len(k.big))
		for name := range k.big {
			k.sorted = append(k.sorted, name)
		}
		slices.Sort(k.sorted)
	}
	for _, name := range k.sorted {
		f(name, k.big[name])
	}
}

// each calls f for every child's name, in no particular order, without
// sorting.
func (k *kidSet) each(f func(name string)) {
	if k.big != nil {
		for name := range k.big {
			f(name)
		}
		return
	}
	for _, e := range k.small {
		f(e.name)
	}
}

// kid returns n's child name, or nil.
func (n *node) kid(name string) *node {
	if n.kids == nil {
		return nil
	}
	return n.kids.get(name)
}

// addKid records k as n's child name, which n must not hold.
func (n *node) addKid(name string, k *node) {
	if n.kids == nil {
		n.kids = &kidSet{}
	}
	n.kids.add(name, k)
}

// removeKid forgets the child name, and the set once it is empty.
func (n *node) removeKid(name string) {
	if n.kids == nil {
		return
	}
	n.kids.remove(name)
	if n.kids.len() == 0 {
		n.kids = nil
	}
}

// kidCount is n's number of children.
func (n *node) kidCount() int {
	if n.kids == nil {
		return 0
	}
	return n.kids.len()
}

// sortedKids is n's children's names in order, in a slice of the
// caller's.
func (n *node) sortedKids() []string {
	if n.kids == nil {
		return nil
	}
	out := make([]string, 0, n.kids.len())
	n.kids.eachSorted(func(name string, _ *node) { out = append(out, name) })
	return out
}

// eachKid calls f for every child's name, in no particular order.
func (n *node) eachKid(f func(string)) {
	if n.kids != nil {
		n.kids.each(f)
	}
}
