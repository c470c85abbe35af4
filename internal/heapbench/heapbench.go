// Package heapbench measures the live heap for the benchmarks that report
// what a structure holds (heap bytes per job or entry): the heap after a
// collection, so garbage does not count.
package heapbench

import "runtime"

// Live is the heap in use after a full collection.
func Live() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
