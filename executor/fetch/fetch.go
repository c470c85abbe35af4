package fetch

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/executor/internal/lockfile"
)

// Defaults for a zero Fetcher field.
const (
	DefaultMaxSize = 1 << 30
	DefaultTimeout = 10 * time.Minute
	DefaultTries   = 3
)

// Fetcher fetches packages. The zero value of each optional field means its
// default; CacheDir and ScratchDir are required.
type Fetcher struct {
	CacheDir   string        // shared cache root
	ScratchDir string        // uncached downloads go here
	MaxSize    int64         // download limit in bytes (DefaultMaxSize)
	Timeout    time.Duration // limit on one whole fetch, retries included (DefaultTimeout)
	Tries      int           // attempts for network errors and 5xx (DefaultTries)
	Backoff    func(try int) time.Duration
	Client     *http.Client
	Log        *slog.Logger
	// MaxCacheBytes bounds the cache: after a cached fetch, the least
	// recently used entries beyond it are removed, never one being fetched
	// or in use (a Blob not yet released). 0: no bound.
	MaxCacheBytes int64
	// Clock dates each use of an entry (default the system clock).
	Clock clock.Clock

	evictMu sync.Mutex // serialises this fetcher's evictions
	// over: the last eviction left the cache above MaxCacheBytes because
	// entries were in use; releasing one evicts again (under evictMu).
	over bool
}

// Blob is a fetched package, open for reading. The file stays readable even
// if another executor replaces the cache entry meanwhile.
type Blob struct {
	File   *os.File
	SHA256 string // hex
	Size   int64
	Reused bool // served from the cache without a download
	URL    *url.URL
	dir    string         // scratch dir to remove, if any
	use    *lockfile.Lock // shared lock on the cache entry's use file: in use
	from   *Fetcher       // the fetcher of a cached blob
}

// Release closes the file and removes an uncached download. Releasing a
// cached one evicts again if the last eviction had to leave the cache over
// its bound (entries in use then), so the bound holds once nothing is.
func (b *Blob) Release() {
	b.File.Close()
	if b.use != nil {
		b.use.Unlock()
		if b.from != nil {
			b.from.evictIfOver()
		}
	}
	if b.dir != "" {
		os.RemoveAll(b.dir)
	}
}

// Fetch fetches rawURL. useCache is the app's appCacheEnable. Errors read
// "fetch URL: why" with credentials in the URL redacted.
func (f *Fetcher) Fetch(ctx context.Context, rawURL string, useCache bool) (*Blob, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("fetch %q: not a URL: %w", rawURL, err)
	}
	name := u.Redacted()
	if u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "file" {
		return nil, fmt.Errorf("fetch %s: unsupported scheme %q (want http, https or file)", name, u.Scheme)
	}
	timeout := or(f.Timeout, DefaultTimeout)
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	b, err := f.fetch(tctx, u, useCache)
	if err != nil {
		if ctx.Err() == nil && errors.Is(tctx.Err(), context.DeadlineExceeded) {
			return nil, fmt.Errorf("fetch %s: timed out after %v", name, timeout)
		}
		return nil, fmt.Errorf("fetch %s: %w", name, err)
	}
	b.URL = u
	if useCache && f.MaxCacheBytes > 0 && !b.Reused { // only a download grows the cache
		f.evict()
	}
	return b, nil
}

func (f *Fetcher) fetch(ctx context.Context, u *url.URL, useCache bool) (*Blob, error) {
	if !useCache {
		if err := os.MkdirAll(f.ScratchDir, 0o755); err != nil {
			return nil, err
		}
		dir, err := os.MkdirTemp(f.ScratchDir, "fetch-")
		if err != nil {
			return nil, err
		}
		b, err := f.into(ctx, u, dir, nil)
		if err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		b.dir = dir
		return b, nil
	}
	key := sha256.Sum256([]byte(cacheKey(u)))
	dir := filepath.Join(f.CacheDir, hex.EncodeToString(key[:]))
	lock, err := lockEntry(ctx, dir)
	if err != nil {
		return nil, err
	}
	defer lock.Unlock()
	old, _ := readMeta(dir) // a missing or bad meta.json means download
	b, err := f.into(ctx, u, dir, old)
	if err != nil {
		return nil, err
	}
	// Mark the entry in use until Release. No eviction contends: it needs
	// the entry lock, which is ours.
	use, err := lockfile.AcquireShared(ctx, filepath.Join(dir, useName))
	if err != nil {
		b.File.Close()
		return nil, err
	}
	now := f.clock().Now()
	_ = os.Chtimes(filepath.Join(dir, useName), now, now) // last use, for eviction
	b.use, b.from = use, f
	return b, nil
}

// lockEntry creates the entry directory and takes its lock, again if an
// eviction removed the entry while we waited for the lock.
func lockEntry(ctx context.Context, dir string) (*lockfile.Lock, error) {
	for range 10 {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		lock, err := lockfile.Acquire(ctx, filepath.Join(dir, lockName))
		if errors.Is(err, fs.ErrNotExist) {
			continue // evicted between MkdirAll and the lock
		}
		if err != nil {
			return nil, err
		}
		if lock.Current(filepath.Join(dir, lockName)) {
			return lock, nil
		}
		lock.Unlock()
	}
	return nil, fmt.Errorf("cache entry %s keeps being evicted", dir)
}

// into brings the entry in dir up to date and opens its blob.
func (f *Fetcher) into(ctx context.Context, u *url.URL, dir string, old *meta) (*Blob, error) {
	var (
		m   *meta
		err error
	)
	if u.Scheme == "file" {
		m, err = f.fromFile(u, dir, old)
	} else {
		m, err = f.fromHTTP(ctx, u, dir, old)
	}
	if err != nil {
		return nil, err
	}
	if err := checkHosted(u, m.SHA256); err != nil {
		_ = os.Remove(filepath.Join(dir, metaName)) // never reuse it
		return nil, err
	}
	file, err := os.Open(filepath.Join(dir, blobName))
	if err != nil {
		return nil, err
	}
	return &Blob{File: file, SHA256: m.SHA256, Size: m.Size, Reused: m == old}, nil
}

func (f *Fetcher) clock() clock.Clock {
	if f.Clock == nil {
		return clock.Real{}
	}
	return f.Clock
}

func (f *Fetcher) log() *slog.Logger {
	if f.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return f.Log
}

func or[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}
