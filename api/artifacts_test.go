package api_test

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ejcloud/elasticjob/api"
	"github.com/ejcloud/elasticjob/engine/mesos/artifacts"
)

// The executor binary agents fetch: GET, HEAD, ranges, conditional
// requests and unknown files, each answered as the OpenAPI document says
// (env.request checks it).
func TestArtifactDownloadAsDocumented(t *testing.T) {
	srv, f, content := newArtifacts(t)
	e := newEnv(t, func(o *api.Options, _ *api.Credentials) { o.Files.Artifacts = srv })
	etag := `"` + f.SHA256 + `"`
	if r := e.request(http.MethodGet, f.Path(), ""); r.Code != http.StatusOK || !bytes.Equal(r.Body, content) || r.Header.Get("ETag") != etag {
		t.Fatalf("GET = %d, %d bytes, ETag %q", r.Code, len(r.Body), r.Header.Get("ETag"))
	}
	for _, c := range []struct {
		method string
		hdr    []string
		want   int
	}{
		{http.MethodHead, nil, http.StatusOK},
		{http.MethodGet, []string{"Range", "bytes=0-8"}, http.StatusPartialContent},
		{http.MethodGet, []string{"Range", "bytes=0-1,4-5"}, http.StatusPartialContent},
		{http.MethodGet, []string{"Range", "bytes=99999-"}, http.StatusRequestedRangeNotSatisfiable},
		{http.MethodGet, []string{"If-None-Match", etag}, http.StatusNotModified},
		{http.MethodHead, []string{"If-None-Match", etag}, http.StatusNotModified},
		{http.MethodGet, []string{"If-Match", `"other"`}, http.StatusPreconditionFailed},
	} {
		if r := e.request(c.method, f.Path(), "", c.hdr...); r.Code != c.want {
			t.Errorf("%s %v = %d, want %d", c.method, c.hdr, r.Code, c.want)
		}
	}
	unknown := strings.Replace(f.Path(), f.SHA256, strings.Repeat("0", 64), 1)
	for _, m := range []string{http.MethodGet, http.MethodHead} {
		if r := e.request(m, unknown, ""); r.Code != http.StatusNotFound {
			t.Errorf("%s of an unknown artifact = %d", m, r.Code)
		}
	}
}

// newArtifacts serves an executor binary as the scheduler does.
func newArtifacts(t *testing.T) (*artifacts.Server, artifacts.File, []byte) {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(dir, "elasticjob-executor")
	content := bytes.Repeat([]byte("executor "), 500)
	if err := os.WriteFile(src, content, 0o755); err != nil {
		t.Fatal(err)
	}
	srv, err := artifacts.New(filepath.Join(dir, "artifacts"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := srv.Add("executor", "elasticjob-executor", src)
	if err != nil {
		t.Fatal(err)
	}
	return srv, f, content
}
