package artifacts

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestServesSnapshotUnderItsHash(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "executor")
	content := []byte("#!/bin/sh\necho executor v1\n")
	if err := os.WriteFile(src, content, 0o755); err != nil {
		t.Fatal(err)
	}
	s, err := New(filepath.Join(dir, "snapshots"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := s.Add("executor", "elasticjob-executor", src)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(content)
	if f.SHA256 != hex.EncodeToString(sum[:]) || f.Size != int64(len(content)) {
		t.Fatalf("file = %+v", f)
	}
	if want := "/artifacts/executor/" + f.SHA256 + "/elasticjob-executor"; f.Path() != want {
		t.Fatalf("Path() = %q, want %q", f.Path(), want)
	}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)

	// The original is replaced after Add: the URL still serves the bytes of its hash.
	if err := os.WriteFile(src, []byte("v2"), 0o755); err != nil {
		t.Fatal(err)
	}
	resp, body := get(t, srv.URL+f.Path(), nil)
	if resp.StatusCode != http.StatusOK || body != string(content) {
		t.Fatalf("GET = %d %q", resp.StatusCode, body)
	}
	if cc := resp.Header.Get("Cache-Control"); !strings.Contains(cc, "immutable") || resp.Header.Get("ETag") != `"`+f.SHA256+`"` {
		t.Fatalf("headers = %v", resp.Header)
	}
	resp, _ = get(t, srv.URL+f.Path(), map[string]string{"If-None-Match": `"` + f.SHA256 + `"`})
	if resp.StatusCode != http.StatusNotModified {
		t.Fatalf("conditional GET = %d, want 304", resp.StatusCode)
	}
	for _, p := range []string{
		"/artifacts/executor/" + strings.Repeat("0", 64) + "/elasticjob-executor",
		"/artifacts/executor/" + f.SHA256 + "/other-name",
		"/artifacts/executor/" + f.SHA256,
		"/artifacts/../" + f.SHA256,
	} {
		if resp, _ := get(t, srv.URL+p, nil); resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s = %d, want 404", p, resp.StatusCode)
		}
	}
	req, _ := http.NewRequest(http.MethodPost, srv.URL+f.Path(), nil)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("POST = %v %v, want 405", resp, err)
	}
}

func TestAddRejectsBadNamesAndMissingFiles(t *testing.T) {
	s, err := New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Add("executor", "x", filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("Add of a missing file succeeded")
	}
	for _, name := range []string{"", "..", "a/b"} {
		if _, err := s.Add("executor", name, "/bin/sh"); err == nil {
			t.Errorf("Add with name %q succeeded", name)
		}
	}
}

func get(t *testing.T, url string, header map[string]string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}
