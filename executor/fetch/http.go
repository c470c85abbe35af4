package fetch

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"time"
)

// permanentError is a failure that retrying cannot fix.
type permanentError struct{ err error }

func (e permanentError) Error() string { return e.err.Error() }
func (e permanentError) Unwrap() error { return e.err }

func (f *Fetcher) fromHTTP(ctx context.Context, u *url.URL, dir string, old *meta) (*meta, error) {
	tries := or(f.Tries, DefaultTries)
	var err error
	for try := 1; try <= tries; try++ {
		var m *meta
		if m, err = f.attempt(ctx, u, dir, old); err == nil {
			return m, nil
		}
		var perm permanentError
		if errors.As(err, &perm) || ctx.Err() != nil {
			return nil, err
		}
		f.log().Warn("fetch failed, will retry", "url", u.Redacted(), "try", try, "err", err)
		if try < tries {
			if werr := sleep(ctx, f.backoff(try)); werr != nil {
				return nil, werr
			}
		}
	}
	return nil, fmt.Errorf("%w (%d tries)", err, tries)
}

// attempt makes one conditional GET.
func (f *Fetcher) attempt(ctx context.Context, u *url.URL, dir string, old *meta) (*meta, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, permanentError{err}
	}
	if old != nil {
		if old.ETag != "" {
			req.Header.Set("If-None-Match", old.ETag)
		}
		if old.LastModified != "" {
			req.Header.Set("If-Modified-Since", old.LastModified)
		}
	}
	client := f.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err // drop the `Get "URL":` prefix; the caller names the URL
		}
		return nil, err
	}
	defer resp.Body.Close()
	limit := or(f.MaxSize, DefaultMaxSize)
	switch {
	case resp.StatusCode == http.StatusNotModified && old != nil:
		f.log().Debug("cache entry still valid", "url", u.Redacted())
		return old, nil
	case resp.StatusCode >= 500:
		return nil, errors.New(resp.Status)
	case resp.StatusCode != http.StatusOK:
		return nil, permanentError{errors.New(resp.Status)}
	case resp.ContentLength > limit:
		return nil, permanentError{&LimitError{Limit: limit}}
	}
	m := &meta{URL: u.String(), ETag: resp.Header.Get("ETag"), LastModified: resp.Header.Get("Last-Modified")}
	if err := store(dir, resp.Body, limit, m); err != nil {
		var lerr *LimitError
		if errors.As(err, &lerr) {
			return nil, permanentError{err}
		}
		return nil, err
	}
	return m, nil
}

// fromFile copies a local file into the entry unless size and mtime match.
func (f *Fetcher) fromFile(u *url.URL, dir string, old *meta) (*meta, error) {
	src, err := os.Open(filepath.FromSlash(u.Path))
	if err != nil {
		return nil, err
	}
	defer src.Close()
	st, err := src.Stat()
	if err != nil {
		return nil, err
	}
	if st.IsDir() {
		return nil, fmt.Errorf("%s is a directory", u.Path)
	}
	if old != nil && old.Size == st.Size() && old.ModTime == st.ModTime().UnixNano() {
		return old, nil
	}
	limit := or(f.MaxSize, DefaultMaxSize)
	if st.Size() > limit {
		return nil, &LimitError{Limit: limit}
	}
	m := &meta{URL: u.String(), ModTime: st.ModTime().UnixNano()}
	return m, store(dir, src, limit, m)
}

func (f *Fetcher) backoff(try int) time.Duration {
	if f.Backoff != nil {
		return f.Backoff(try)
	}
	return 500 * time.Millisecond << (try - 1)
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
