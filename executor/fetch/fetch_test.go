package fetch

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func newFetcher(t *testing.T) *Fetcher {
	t.Helper()
	d := t.TempDir()
	return &Fetcher{
		CacheDir: filepath.Join(d, "cache"), ScratchDir: filepath.Join(d, "scratch"),
		Backoff: func(int) time.Duration { return time.Millisecond },
	}
}

func sum(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

func read(t *testing.T, b *Blob) string {
	t.Helper()
	data, err := io.ReadAll(b.File)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func mustFetch(t *testing.T, f *Fetcher, url string, cache bool) (*Blob, string) {
	t.Helper()
	b, err := f.Fetch(t.Context(), url, cache)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Release)
	return b, read(t, b)
}

func TestETagRevalidation(t *testing.T) {
	var gets, notModified atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gets.Add(1)
		if r.Header.Get("If-None-Match") == `"v1"` {
			notModified.Add(1)
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Header().Set("ETag", `"v1"`)
		io.WriteString(w, "payload")
	}))
	defer srv.Close()
	f := newFetcher(t)
	b1, body := mustFetch(t, f, srv.URL+"/app.tar.gz", true)
	if body != "payload" || b1.Reused || b1.SHA256 != sum("payload") || b1.Size != 7 {
		t.Fatalf("first fetch: %q %+v", body, b1)
	}
	b2, body := mustFetch(t, f, srv.URL+"/app.tar.gz", true)
	if body != "payload" || !b2.Reused || notModified.Load() != 1 || gets.Load() != 2 {
		t.Fatalf("second fetch: %q reused=%v 304s=%d gets=%d", body, b2.Reused, notModified.Load(), gets.Load())
	}
	m, err := readMeta(filepath.Join(f.CacheDir, sum(srv.URL+"/app.tar.gz")))
	if err != nil || m.ETag != `"v1"` || m.SHA256 != sum("payload") {
		t.Fatalf("meta.json: %+v %v", m, err)
	}
}

func TestLastModifiedRevalidation(t *testing.T) {
	const lm = "Mon, 02 Jan 2006 15:04:05 GMT"
	var version atomic.Value
	version.Store("old")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("If-Modified-Since") == lm && version.Load() == "old" {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Header().Set("Last-Modified", lm)
		io.WriteString(w, version.Load().(string))
	}))
	defer srv.Close()
	f := newFetcher(t)
	mustFetch(t, f, srv.URL+"/a", true)
	if b, body := mustFetch(t, f, srv.URL+"/a", true); !b.Reused || body != "old" {
		t.Fatalf("want reuse, got %q reused=%v", body, b.Reused)
	}
	version.Store("new") // the server now ignores the validator and sends 200
	if b, body := mustFetch(t, f, srv.URL+"/a", true); b.Reused || body != "new" || b.SHA256 != sum("new") {
		t.Fatalf("want fresh, got %q reused=%v", body, b.Reused)
	}
}

func TestCacheOffAlwaysDownloads(t *testing.T) {
	var gets atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gets.Add(1)
		if r.Header.Get("If-None-Match") != "" {
			t.Error("conditional request with the cache off")
		}
		w.Header().Set("ETag", `"x"`)
		io.WriteString(w, "data")
	}))
	defer srv.Close()
	f := newFetcher(t)
	b, _ := mustFetch(t, f, srv.URL+"/a", false)
	mustFetch(t, f, srv.URL+"/a", false)
	if gets.Load() != 2 || b.Reused {
		t.Fatalf("gets = %d, reused = %v", gets.Load(), b.Reused)
	}
	if _, err := os.Stat(f.CacheDir); !os.IsNotExist(err) {
		t.Fatalf("cache dir written with the cache off: %v", err)
	}
	b.Release()
	if entries, _ := os.ReadDir(f.ScratchDir); len(entries) != 1 {
		t.Fatalf("scratch after one release: %d entries, want 1", len(entries))
	}
}

func TestNotFoundIsNotRetried(t *testing.T) {
	var gets atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gets.Add(1)
		http.NotFound(w, r)
	}))
	defer srv.Close()
	_, err := newFetcher(t).Fetch(t.Context(), srv.URL+"/missing.tar.gz", true)
	want := "fetch " + srv.URL + "/missing.tar.gz: 404 Not Found"
	if err == nil || err.Error() != want || gets.Load() != 1 {
		t.Fatalf("err = %v (gets %d), want %q after one GET", err, gets.Load(), want)
	}
}

func TestServerErrorThenRetrySucceeds(t *testing.T) {
	var gets atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if gets.Add(1) < 3 {
			http.Error(w, "boom", http.StatusInternalServerError)
			return
		}
		io.WriteString(w, "ok")
	}))
	defer srv.Close()
	_, body := mustFetch(t, newFetcher(t), srv.URL+"/a", true)
	if body != "ok" || gets.Load() != 3 {
		t.Fatalf("body %q after %d GETs", body, gets.Load())
	}
}

func TestServerErrorGivesUpAfterThreeTries(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	_, err := newFetcher(t).Fetch(t.Context(), srv.URL+"/a", true)
	if err == nil || err.Error() != "fetch "+srv.URL+"/a: 503 Service Unavailable (3 tries)" {
		t.Fatalf("err = %v", err)
	}
}

func TestConnectionRefused(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL + "/a"
	srv.Close()
	_, err := newFetcher(t).Fetch(t.Context(), url, true)
	if err == nil || !strings.Contains(err.Error(), "connection refused") || !strings.HasPrefix(err.Error(), "fetch "+url+": ") {
		t.Fatalf("err = %v", err)
	}
}

func TestSizeLimit(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/chunked" {
			w.(http.Flusher).Flush() // no Content-Length: the stream itself must be cut
		}
		io.WriteString(w, strings.Repeat("x", 2048))
	}))
	defer srv.Close()
	f := newFetcher(t)
	f.MaxSize = 1024
	for _, p := range []string{"/sized", "/chunked"} {
		_, err := f.Fetch(t.Context(), srv.URL+p, true)
		if err == nil || err.Error() != "fetch "+srv.URL+p+": exceeds the 1 KiB download limit" {
			t.Errorf("%s: err = %v", p, err)
		}
	}
	f.MaxSize = 1 << 30
	if got := (&LimitError{Limit: f.MaxSize}).Error(); got != "exceeds the 1 GiB download limit" {
		t.Errorf("message %q", got)
	}
}

func TestTimeout(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select { // block until the client gives up or the test ends
		case <-r.Context().Done():
		case <-ctx.Done():
		}
	}))
	defer srv.Close()
	defer cancel()
	f := newFetcher(t)
	f.Timeout = 50 * time.Millisecond
	_, err := f.Fetch(t.Context(), srv.URL+"/slow", true)
	if err == nil || err.Error() != "fetch "+srv.URL+"/slow: timed out after 50ms" {
		t.Fatalf("err = %v", err)
	}
}

func TestFileURL(t *testing.T) {
	src := filepath.Join(t.TempDir(), "app.sh")
	if err := os.WriteFile(src, []byte("v1"), 0o644); err != nil {
		t.Fatal(err)
	}
	f := newFetcher(t)
	if b, body := mustFetch(t, f, "file://"+src, true); b.Reused || body != "v1" {
		t.Fatalf("first: %q reused=%v", body, b.Reused)
	}
	if b, _ := mustFetch(t, f, "file://"+src, true); !b.Reused {
		t.Fatal("unchanged file not reused")
	}
	if err := os.WriteFile(src, []byte("v2-longer"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, body := mustFetch(t, f, "file://"+src, true); b.Reused || body != "v2-longer" {
		t.Fatalf("changed file: %q reused=%v", body, b.Reused)
	}
	_, err := f.Fetch(t.Context(), "file:///nonexistent/app.tar.gz", true)
	if err == nil || err.Error() != "fetch file:///nonexistent/app.tar.gz: open /nonexistent/app.tar.gz: no such file or directory" {
		t.Fatalf("missing file: %v", err)
	}
}

func TestBadScheme(t *testing.T) {
	_, err := newFetcher(t).Fetch(t.Context(), "ftp://x/a", true)
	if err == nil || !strings.Contains(err.Error(), `unsupported scheme "ftp"`) {
		t.Fatalf("err = %v", err)
	}
}

func TestConcurrentFetchesShareOneEntry(t *testing.T) {
	var gets atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gets.Add(1)
		if r.Header.Get("If-None-Match") == `"v"` {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Header().Set("ETag", `"v"`)
		io.WriteString(w, strings.Repeat("data", 1000))
	}))
	defer srv.Close()
	f := newFetcher(t)
	errs := make(chan error, 8)
	for range 8 {
		go func() {
			b, err := f.Fetch(t.Context(), srv.URL+"/a", true)
			if err == nil {
				if b.SHA256 != sum(strings.Repeat("data", 1000)) {
					err = io.ErrUnexpectedEOF
				}
				b.Release()
			}
			errs <- err
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	entries, _ := os.ReadDir(filepath.Join(f.CacheDir, sum(srv.URL+"/a")))
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".tmp") {
			t.Errorf("temporary file left: %s", e.Name())
		}
	}
}
