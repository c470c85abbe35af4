package fetch

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// hostedServer serves content at any path as the scheduler serves packages:
// ETag = its sha256, honouring If-None-Match.
func hostedServer(t *testing.T, content string, hits, full *atomic.Int32) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("ETag", `"`+sum(content)+`"`)
		if r.Header.Get("If-None-Match") == "" {
			full.Add(1)
		}
		http.ServeContent(w, r, "app.tgz", time.Time{}, strings.NewReader(content))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// A hosted package is cached by its content: the same package from another
// scheduler instance (a new leader) is revalidated, not downloaded again.
func TestHostedPackageIsCachedByContent(t *testing.T) {
	const content = "the package"
	path := "/packages/" + sum(content) + "/" + strings.Repeat("ab", 16) + "/app.tgz"
	var hitsA, fullA, hitsB, fullB atomic.Int32
	a := hostedServer(t, content, &hitsA, &fullA)
	b := hostedServer(t, content, &hitsB, &fullB)
	f := newFetcher(t)
	if blob, body := mustFetch(t, f, a.URL+path, true); body != content || blob.Reused {
		t.Fatalf("from a: %q reused=%v", body, blob.Reused)
	}
	blob, body := mustFetch(t, f, b.URL+path, true)
	if body != content || !blob.Reused || hitsB.Load() != 1 || fullB.Load() != 0 {
		t.Fatalf("from b: %q reused=%v, b asked %d times, %d unconditionally", body, blob.Reused, hitsB.Load(), fullB.Load())
	}
}

// Bytes that do not hash to the URL's sha256 fail the fetch and are never
// reused.
func TestHostedPackageMustMatchItsHash(t *testing.T) {
	const content = "the package"
	path := "/packages/" + sum(content) + "/" + strings.Repeat("ab", 16) + "/app.tgz"
	var h1, f1, h2, f2 atomic.Int32
	bad := hostedServer(t, "something else", &h1, &f1)
	good := hostedServer(t, content, &h2, &f2)
	f := newFetcher(t)
	_, err := f.Fetch(t.Context(), bad.URL+path, true)
	if err == nil || !strings.Contains(err.Error(), "its URL names "+sum(content)) {
		t.Fatalf("fetch of mismatching bytes = %v", err)
	}
	if h1.Load() != 1 {
		t.Fatalf("a hash mismatch was retried %d times (it is permanent)", h1.Load())
	}
	if blob, body := mustFetch(t, f, good.URL+path, true); body != content || blob.Reused || f2.Load() != 1 {
		t.Fatalf("after a mismatch: %q reused=%v downloads=%d", body, blob.Reused, f2.Load())
	}
}

func TestHostedSHAOnlyForPackagePaths(t *testing.T) {
	sha, tok := sum("x"), strings.Repeat("0", 32)
	for raw, want := range map[string]string{
		"http://s:8899/packages/" + sha + "/" + tok + "/app.tgz":       sha,
		"https://s/prefix/packages/" + sha + "/" + tok + "/a.zip":      sha,
		"http://s/packages/" + sha + "/app.tgz":                        "",
		"http://s/packages/" + strings.ToUpper(sha) + "/" + tok + "/a": "",
		"file:///packages/" + sha + "/" + tok + "/app.tgz":             "",
		"http://s/files/" + sha + "/" + tok + "/app.tgz":               "",
	} {
		u, _ := url.Parse(raw)
		if got := hostedSHA(u); got != want {
			t.Errorf("hostedSHA(%s) = %q, want %q", raw, got, want)
		}
	}
}
