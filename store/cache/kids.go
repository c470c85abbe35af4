package cache

import "slices"

// smallKids is the most names a kidSet keeps in a sorted slice alone; a
// set that grows past it gets a map (an insert into a sorted slice moves
// the names after it).
const smallKids = 32

// kidSet holds the names of a node's children. Most directories hold a
// few (a job's running shards) or none: at 100,000 jobs the registry kept
// 83,000 per-job directories under /state/running, most of them empty once
// their tasks ended, and a map each (about 200 bytes even when empty) was
// a twelfth of the scheduler's live heap. Small sets are a sorted slice; a
// set past smallKids is a map with a sorted copy made when asked for. A
// node whose last child goes drops its set (node.kids nil).
type kidSet struct {
	sorted []string            // the names in order; when big is set, nil until asked for again after a change
	big    map[string]struct{} // nil while the set is small
}

// add adds name; it reports whether it was new.
func (k *kidSet) add(name string) bool {
	if k.big != nil {
		if _, ok := k.big[name]; ok {
			return false
		}
		k.big[name] = struct{}{}
		k.sorted = nil
		return true
	}
	i, found := slices.BinarySearch(k.sorted, name)
	if found {
		return false
	}
	if len(k.sorted) < smallKids {
		k.sorted = slices.Insert(k.sorted, i, name)
		return true
	}
	k.big = make(map[string]struct{}, 2*smallKids)
	for _, n := range k.sorted {
		k.big[n] = struct{}{}
	}
	k.big[name] = struct{}{}
	k.sorted = nil
	return true
}

// remove removes name.
func (k *kidSet) remove(name string) {
	if k.big != nil {
		if _, ok := k.big[name]; ok {
			delete(k.big, name)
			k.sorted = nil
		}
		return
	}
	if i, found := slices.BinarySearch(k.sorted, name); found {
		k.sorted = slices.Delete(k.sorted, i, i+1)
	}
}

func (k *kidSet) len() int {
	if k.big != nil {
		return len(k.big)
	}
	return len(k.sorted)
}

// names returns the names in order. The slice is the set's own: valid
// until the set changes, not to be modified.
func (k *kidSet) names() []string {
	if k.sorted == nil && k.big != nil {
		k.sorted = make([]string, 0, len(k.big))
		for n := range k.big {
			k.sorted = append(k.sorted, n)
		}
		slices.Sort(k.sorted)
	}
	return k.sorted
}

// each calls f for every name, in no particular order, without sorting.
func (k *kidSet) each(f func(string)) {
	if k.big != nil {
		for n := range k.big {
			f(n)
		}
		return
	}
	for _, n := range k.sorted {
		f(n)
	}
}

// addKid records name as a child of n; it reports whether it was new.
func (n *node) addKid(name string) bool {
	if n.kids == nil {
		n.kids = &kidSet{}
	}
	return n.kids.add(name)
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

// sortedKids is n's children's names in order (see kidSet.names).
func (n *node) sortedKids() []string {
	if n.kids == nil {
		return nil
	}
	return n.kids.names()
}

// eachKid calls f for every child's name, in no particular order.
func (n *node) eachKid(f func(string)) {
	if n.kids != nil {
		n.kids.each(f)
	}
}
