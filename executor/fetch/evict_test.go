package fetch

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/clock"
)

// pkg writes a package of n bytes and returns its file URL.
func pkg(t *testing.T, name string, n int) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(strings.Repeat(name[:1], n)), 0o644); err != nil {
		t.Fatal(err)
	}
	return "file://" + p
}

// cached reports whether url has an entry in the cache.
func cached(f *Fetcher, url string) bool {
	_, err := os.Stat(filepath.Join(f.CacheDir, sum(url), blobName))
	return err == nil
}

// lruFetcher bounds the cache to 250 bytes; its clock moves a minute per
// fetch, so uses are ordered.
func lruFetcher(t *testing.T) (*Fetcher, func(url string) *Blob) {
	f := newFetcher(t)
	clk := clock.NewFake(time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC))
	f.MaxCacheBytes, f.Clock = 250, clk
	return f, func(url string) *Blob {
		t.Helper()
		clk.Advance(time.Minute)
		b, err := f.Fetch(t.Context(), url, true)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
}

func TestEvictsLeastRecentlyUsedBeyondSize(t *testing.T) {
	f, fetch := lruFetcher(t)
	a, b, c := pkg(t, "a", 100), pkg(t, "b", 100), pkg(t, "c", 100)
	fetch(a).Release()
	fetch(b).Release()
	fetch(a).Release() // a is now used more recently than b
	fetch(c).Release() // 300 bytes > 250: the least recently used goes
	if !cached(f, a) || cached(f, b) || !cached(f, c) {
		t.Fatalf("cached a=%v b=%v c=%v, want a and c", cached(f, a), cached(f, b), cached(f, c))
	}
	if got := fetch(b); got.Reused {
		t.Fatal("an evicted entry was reused")
	} else {
		got.Release()
	}
	if leftovers, _ := filepath.Glob(filepath.Join(f.CacheDir, ".evicted-*")); len(leftovers) > 0 {
		t.Fatalf("evicted entries left: %v", leftovers)
	}
}

func TestNeverEvictsAnEntryInUse(t *testing.T) {
	f, fetch := lruFetcher(t)
	a, b, c, d := pkg(t, "a", 100), pkg(t, "b", 100), pkg(t, "c", 100), pkg(t, "d", 100)
	held := fetch(a) // a task is extracting it
	fetch(b).Release()
	fetch(c).Release() // a is the least recently used, but in use: b goes
	if !cached(f, a) || cached(f, b) || !cached(f, c) {
		t.Fatalf("cached a=%v b=%v c=%v, want a and c", cached(f, a), cached(f, b), cached(f, c))
	}
	if body := read(t, held); body != strings.Repeat("a", 100) {
		t.Fatalf("held blob reads %q", body)
	}
	held.Release()
	fetch(d).Release() // now a may go
	if cached(f, a) || !cached(f, c) || !cached(f, d) {
		t.Fatalf("cached a=%v c=%v d=%v, want c and d", cached(f, a), cached(f, c), cached(f, d))
	}
}

// Fetches racing with evictions each get their own package intact.
func TestConcurrentFetchesAndEvictions(t *testing.T) {
	f := newFetcher(t)
	f.MaxCacheBytes = 150
	urls := make([]string, 4)
	for i := range urls {
		urls[i] = pkg(t, fmt.Sprintf("%c", 'a'+i), 100)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			u := urls[i%len(urls)]
			b, err := f.Fetch(t.Context(), u, true)
			if err != nil {
				errs <- err
				return
			}
			defer b.Release()
			want := strings.Repeat(string(rune('a'+i%len(urls))), 100)
			if body := read(t, b); body != want {
				errs <- fmt.Errorf("%s read %q", u, body)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	_, total := f.entries()
	if total > 150 { // releasing the blobs evicted what their use held back
		t.Errorf("cache holds %d bytes after the fetches", total)
	}
}
