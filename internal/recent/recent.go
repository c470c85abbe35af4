// Package recent is a bounded set of ids that forgets the oldest first: the memory of
// recently ended tasks that a late or repeated report is checked against.
package recent

// DefaultMax is the bound of a Set whose Max is 0.
const DefaultMax = 1 << 16

// Set holds at most Max ids (DefaultMax when 0); adding one more forgets the oldest added.
// The zero value is ready to use; it is not safe for concurrent use.
type Set struct {
	Max  int
	ids  map[string]bool
	ring []string // the ids in the order added, a ring of Max
	next int      // where the next id goes once the ring is full
}

// Add puts id in the set (again: nothing changes).
func (s *Set) Add(id string) {
	if s.ids == nil {
		s.ids = map[string]bool{}
	}
	if s.ids[id] {
		return
	}
	max := s.Max
	if max <= 0 {
		max = DefaultMax
	}
	if len(s.ring) < max {
		s.ring = append(s.ring, id)
	} else {
		delete(s.ids, s.ring[s.next])
		s.ring[s.next] = id
		s.next = (s.next + 1) % max
	}
	s.ids[id] = true
}

// Has says whether id is in the set.
func (s *Set) Has(id string) bool { return s.ids[id] }

// Remove forgets id now.
func (s *Set) Remove(id string) { delete(s.ids, id) }
