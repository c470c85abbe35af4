package fetch

import (
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ejcloud/elasticjob/executor/internal/lockfile"
)

// entry is one cache entry as eviction sees it.
type entry struct {
	dir  string
	size int64
	used time.Time
}

// evict removes the least recently used entries while the cache holds more
// than MaxCacheBytes. An entry being fetched (its lock held) or in use (a
// shared hold on its use file) is skipped, whatever its age. It returns
// how many entries it removed.
func (f *Fetcher) evict() int {
	f.evictMu.Lock()
	defer f.evictMu.Unlock()
	return f.evictLocked()
}

// evictIfOver evicts if the last eviction left the cache over its bound.
func (f *Fetcher) evictIfOver() {
	f.evictMu.Lock()
	defer f.evictMu.Unlock()
	if f.over {
		f.evictLocked()
	}
}

func (f *Fetcher) evictLocked() int {
	entries, total := f.entries()
	sort.Slice(entries, func(i, j int) bool { return entries[i].used.Before(entries[j].used) })
	removed := 0
	for _, e := range entries {
		if total <= f.MaxCacheBytes {
			break
		}
		if f.remove(e) {
			total -= e.size
			removed++
		}
	}
	f.over = total > f.MaxCacheBytes
	if removed > 0 {
		f.log().Info("app cache: evicted least recently used entries", "entries", removed,
			"cache_bytes", total, "max_bytes", f.MaxCacheBytes)
	}
	return removed
}

// entries lists the cache (removing what an interrupted eviction left)
// and its total size.
func (f *Fetcher) entries() ([]entry, int64) {
	des, err := os.ReadDir(f.CacheDir)
	if err != nil {
		return nil, 0
	}
	var out []entry
	var total int64
	for _, de := range des {
		dir := filepath.Join(f.CacheDir, de.Name())
		if strings.HasPrefix(de.Name(), ".evicted-") {
			os.RemoveAll(dir)
			continue
		}
		if !de.IsDir() {
			continue
		}
		e := entry{dir: dir}
		if st, err := os.Stat(filepath.Join(dir, blobName)); err == nil {
			e.size = st.Size()
		}
		if st, err := os.Stat(filepath.Join(dir, useName)); err == nil {
			e.used = st.ModTime()
		} else if st, err := os.Stat(dir); err == nil {
			e.used = st.ModTime()
		}
		out = append(out, e)
		total += e.size
	}
	return out, total
}

// remove takes the entry's lock and its use file exclusively, both without
// waiting, moves the entry aside (a fetcher waiting for its lock then sees
// the entry gone and starts afresh) and deletes it.
func (f *Fetcher) remove(e entry) bool {
	lock, ok, err := lockfile.TryAcquire(filepath.Join(e.dir, lockName))
	if err != nil || !ok {
		return false
	}
	defer lock.Unlock()
	if !lock.Current(filepath.Join(e.dir, lockName)) {
		return false
	}
	use, ok, err := lockfile.TryAcquire(filepath.Join(e.dir, useName))
	if err != nil || !ok {
		return false // in use
	}
	defer use.Unlock()
	aside := filepath.Join(f.CacheDir, ".evicted-"+filepath.Base(e.dir)+"-"+strconv.FormatInt(time.Now().UnixNano(), 36))
	if err := os.Rename(e.dir, aside); err != nil {
		f.log().Warn("app cache: cannot evict", "entry", e.dir, "err", err)
		return false
	}
	if err := os.RemoveAll(aside); err != nil {
		f.log().Warn("app cache: evicted entry not fully removed", "entry", aside, "err", err)
	}
	return true
}
