package offers

// entry is one offer's position in an index: its free resources and its
// number (the offer's rank by ID, which breaks ties deterministically).
type entry struct {
	cpu Milli
	mem int64
	off int32
}

func (a entry) less(b entry) bool {
	if a.cpu != b.cpu {
		return a.cpu < b.cpu
	}
	if a.mem != b.mem {
		return a.mem < b.mem
	}
	return a.off < b.off
}

// index keeps offers sorted by (free CPU, free memory, offer number). A
// best-fit query is a binary search on CPU followed by a forward scan for the
// first entry with enough memory. Updates move one entry by a memmove of the
// entries between its old and new position; with ~1,000 offers that is
// cheaper than any pointer-based balanced tree.
type index struct {
	e []entry
}

// lowerBound returns the first position in e[lo:hi] whose entry is not less
// than k.
func (x *index) lowerBound(k entry, lo, hi int) int {
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if x.e[mid].less(k) {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

func (x *index) insert(k entry) {
	i := x.lowerBound(k, 0, len(x.e))
	x.e = append(x.e, entry{})
	copy(x.e[i+1:], x.e[i:])
	x.e[i] = k
}

func (x *index) remove(k entry) {
	i := x.lowerBound(k, 0, len(x.e))
	if i == len(x.e) || x.e[i] != k {
		panic("offers: index entry not found")
	}
	copy(x.e[i:], x.e[i+1:])
	x.e = x.e[:len(x.e)-1]
}

// move replaces old, which must be present, by k.
func (x *index) move(old, k entry) {
	i := x.lowerBound(old, 0, len(x.e))
	if i == len(x.e) || x.e[i] != old {
		panic("offers: index entry not found")
	}
	if k.less(old) {
		j := x.lowerBound(k, 0, i)
		copy(x.e[j+1:i+1], x.e[j:i])
		x.e[j] = k
		return
	}
	j := x.lowerBound(k, i+1, len(x.e)) - 1
	copy(x.e[i:j], x.e[i+1:j+1])
	x.e[j] = k
}

// bestFit returns the offer with the least free CPU (then least free memory,
// then lowest number) that has at least d free and that ok allows (nil: any), or -1.
// A filter makes the scan skip the other clusters' offers: it costs what they hold
// with enough CPU, nothing when there is no filter.
func (x *index) bestFit(d Resources, ok func(int32) bool) int32 {
	lo, hi := 0, len(x.e)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if x.e[mid].cpu < d.CPU {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	for _, e := range x.e[lo:] {
		if e.mem >= d.MemMB && (ok == nil || ok(e.off)) {
			return e.off
		}
	}
	return -1
}

// maxCPU returns the largest free CPU of the offers ok allows (nil: any), or -1 when
// there is none.
func (x *index) maxCPU(ok func(int32) bool) Milli {
	for i := len(x.e) - 1; i >= 0; i-- {
		if ok == nil || ok(x.e[i].off) {
			return x.e[i].cpu
		}
	}
	return -1
}

// maxMem returns the largest free memory of the offers ok allows (nil: any), or -1
// when there is none.
func (x *index) maxMem(ok func(int32) bool) int64 {
	m := int64(-1)
	for _, e := range x.e {
		if ok == nil || ok(e.off) {
			m = max(m, e.mem)
		}
	}
	return m
}
