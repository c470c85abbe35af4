// Package parallel runs a loop's iterations concurrently, a bounded number
// at a time: the reads a store makes of many nodes at once.
package parallel

import "sync"

// For runs fn(0), …, fn(n-1) with at most max of them at once and returns
// when all have. One iteration runs on the caller's goroutine.
func For(n, max int, fn func(i int)) {
	if n == 1 {
		fn(0)
		return
	}
	sem := make(chan struct{}, max)
	var wg sync.WaitGroup
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			fn(i)
		})
	}
	wg.Wait()
}
