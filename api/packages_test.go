package api_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"math/rand/v2"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ejcloud/elasticjob/api"
	"github.com/ejcloud/elasticjob/app"
	"github.com/ejcloud/elasticjob/clock"
	"github.com/ejcloud/elasticjob/packages"
	"github.com/ejcloud/elasticjob/registry"
	"github.com/ejcloud/elasticjob/store/memory"
)

// pkgEnv is an API with package hosting behind a real HTTP server.
type pkgEnv struct {
	t    *testing.T
	srv  *httptest.Server
	reg  *registry.Registry
	dir  string
	host *packages.Host
	user string
	pass string
}

const (
	pkgAdmin = "admin"
	pkgPass  = "s3cret-pass"
	pkgGuest = "guest"
)

func newPkgEnv(t *testing.T, maxBytes int64, tweak ...func(*http.Server)) *pkgEnv {
	t.Helper()
	reg := registry.New(memory.New())
	dir := filepath.Join(t.TempDir(), "packages")
	e := &pkgEnv{t: t, reg: reg, dir: dir, user: pkgAdmin, pass: pkgPass}
	e.srv = httptest.NewUnstartedServer(nil)
	base := "http://" + e.srv.Listener.Addr().String()
	host, err := packages.New(packages.Options{Dir: dir, MaxBytes: maxBytes, Key: []byte("0123456789abcdef0123456789abcdef"), Base: base})
	if err != nil {
		t.Fatal(err)
	}
	e.host = host
	clk := clock.NewFake(t0)
	e.srv.Config.Handler = api.New(api.Options{
		Registry: reg,
		Clock:    clk,
		Log:      slog.New(slog.DiscardHandler),
		Apps:     api.AppOptions{Packages: host},
		Auth:     api.NewAuth(api.Credentials{AdminUser: pkgAdmin, AdminPassword: pkgPass, GuestUser: pkgGuest, GuestPassword: pkgPass}, clk, nil),
	})
	for _, fn := range tweak {
		fn(e.srv.Config)
	}
	e.srv.Start()
	t.Cleanup(e.srv.Close)
	t.Cleanup(host.Close)
	a := app.Default()
	a.AppName, a.AppURL, a.BootstrapScript = "my_app", "http://example.com/old.tgz", "bin/start.sh"
	if err := reg.Config().AddApp(t.Context(), a); err != nil {
		t.Fatal(err)
	}
	return e
}

// put uploads body to path with the given Content-Type and headers.
func (e *pkgEnv) put(path string, body io.Reader, contentType string, hdr ...string) (int, []byte) {
	e.t.Helper()
	req, err := http.NewRequest(http.MethodPut, e.srv.URL+path, body)
	if err != nil {
		e.t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if e.user != "" {
		req.SetBasicAuth(e.user, e.pass)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatalf("PUT %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	mustContract(e.t).check(e.t, req, resp.StatusCode, resp.Header, b)
	return resp.StatusCode, b
}

func (e *pkgEnv) upload(want int, path string, body []byte, hdr ...string) []byte {
	e.t.Helper()
	code, b := e.put(path, bytes.NewReader(body), "application/octet-stream", hdr...)
	if code != want {
		e.t.Fatalf("PUT %s: %d %s, want %d", path, code, b, want)
	}
	return b
}

func (e *pkgEnv) appURL() string {
	e.t.Helper()
	a, err := e.reg.Config().App(e.t.Context(), "my_app")
	if err != nil {
		e.t.Fatal(err)
	}
	return a.AppURL
}

// files lists the store's directory (packages and leftovers).
func (e *pkgEnv) files() []string {
	e.t.Helper()
	ents, err := os.ReadDir(e.dir)
	if err != nil {
		e.t.Fatal(err)
	}
	var out []string
	for _, de := range ents {
		out = append(out, de.Name())
	}
	return out
}

func sum(b []byte) string { h := sha256.Sum256(b); return hex.EncodeToString(h[:]) }

// get fetches url without credentials, as an agent does.
func get(t *testing.T, url string) (int, []byte) {
	t.Helper()
	resp, b := fetch(t, http.MethodGet, url)
	return resp.StatusCode, b
}

// fetch sends one request without credentials (headers as name, value
// pairs) and checks the answer against the OpenAPI document.
func fetch(t *testing.T, method, url string, hdr ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	mustContract(t).check(t, req, resp.StatusCode, resp.Header, b)
	return resp, b
}

func TestUploadRawSetsAppURLAndServesThePackage(t *testing.T) {
	e := newPkgEnv(t, 0)
	content := append([]byte("#!/bin/sh\n"), bytes.Repeat([]byte("elasticjob package "), 100_000)...) // 1.9 MB: past the API's 1 MiB body limit
	b := e.upload(http.StatusOK, "/api/app/my_app/package?filename=demo-app.tar.gz", content, "X-Content-SHA256", strings.ToUpper(sum(content)))
	var ans api.PackageAnswer
	if err := json.Unmarshal(b, &ans); err != nil {
		t.Fatal(err)
	}
	if ans.AppName != "my_app" || ans.SHA256 != sum(content) || ans.Size != int64(len(content)) {
		t.Fatalf("answer = %+v", ans)
	}
	if !strings.HasPrefix(ans.AppURL, e.srv.URL+"/packages/"+sum(content)+"/") || !strings.HasSuffix(ans.AppURL, "/demo-app.tar.gz") {
		t.Fatalf("appURL = %s", ans.AppURL)
	}
	if got := e.appURL(); got != ans.AppURL {
		t.Fatalf("registry appURL = %s, want %s", got, ans.AppURL)
	}
	if fs := e.files(); len(fs) != 1 || fs[0] != sum(content) {
		t.Fatalf("store holds %v", fs)
	}
	code, got := get(t, ans.AppURL) // no credentials: agents fetch without them
	if code != http.StatusOK || !bytes.Equal(got, content) {
		t.Fatalf("GET appURL = %d (%d bytes)", code, len(got))
	}
	// The hash alone is not enough: a wrong token, or none, is a 404.
	bad := strings.Replace(ans.AppURL, "/demo-app.tar.gz", "", 1)
	bad = bad[:strings.LastIndex(bad, "/")] + "/" + strings.Repeat("0", 32) + "/demo-app.tar.gz"
	for _, u := range []string{bad, e.srv.URL + "/packages/" + sum(content) + "/demo-app.tar.gz"} {
		if code, _ := get(t, u); code != http.StatusNotFound {
			t.Errorf("GET %s = %d, want 404", u, code)
		}
	}
}

func TestUploadMultipartWithChecksumField(t *testing.T) {
	e := newPkgEnv(t, 0)
	content := []byte("#!/bin/sh\necho hello\n")
	for _, tc := range []struct {
		name, sha string
		want      int
	}{
		{"mismatch", sum([]byte("other")), http.StatusBadRequest},
		{"match", sum(content), http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			mw := multipart.NewWriter(&buf)
			fw, _ := mw.CreateFormFile("package", "../../run.sh")
			fw.Write(content)
			mw.WriteField("sha256", tc.sha) // after the file: verified before anything is stored
			mw.Close()
			code, b := e.put("/api/app/my_app/package", &buf, mw.FormDataContentType())
			if code != tc.want {
				t.Fatalf("PUT = %d %s, want %d", code, b, tc.want)
			}
			if tc.want != http.StatusOK {
				if !strings.Contains(string(b), "does not match") || len(e.files()) != 0 || e.appURL() != "http://example.com/old.tgz" {
					t.Fatalf("mismatch: body %s, store %v, appURL %s", b, e.files(), e.appURL())
				}
				return
			}
			if u := e.appURL(); !strings.HasSuffix(u, "/run.sh") || !strings.Contains(u, sum(content)) {
				t.Fatalf("appURL = %s (the part's file name, without its directories)", u)
			}
		})
	}
}

func TestUploadChecksumAndInputErrors(t *testing.T) {
	e := newPkgEnv(t, 0)
	content := []byte("#!/bin/sh\nsome package bytes")
	for _, tc := range []struct {
		name, path string
		hdr        []string
		code       int
		msg        string
	}{
		{"header mismatch", "/api/app/my_app/package", []string{"X-Content-SHA256", sum([]byte("x"))}, 400, "does not match"},
		{"query mismatch", "/api/app/my_app/package?sha256=" + sum([]byte("x")), nil, 400, "does not match"},
		{"not hex", "/api/app/my_app/package?sha256=abc", nil, 400, "64 hex digits"},
		{"header and query differ", "/api/app/my_app/package?sha256=" + sum(content), []string{"X-Content-SHA256", sum([]byte("x"))}, 400, "two different sha256"},
		{"unknown app", "/api/app/nope/package", nil, 404, "Cannot find app 'nope'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, b := e.put(tc.path, bytes.NewReader(content), "application/octet-stream", tc.hdr...)
			if code != tc.code || !strings.Contains(string(b), tc.msg) {
				t.Fatalf("PUT = %d %s, want %d with %q", code, b, tc.code, tc.msg)
			}
		})
	}
	if code, b := e.put("/api/app/my_app/package", strings.NewReader(""), ""); code != 400 || !strings.Contains(string(b), "empty") {
		t.Fatalf("empty body = %d %s", code, b)
	}
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	mw.WriteField("file", "x")
	mw.Close()
	if code, b := e.put("/api/app/my_app/package", &buf, mw.FormDataContentType()); code != 400 || !strings.Contains(string(b), `unknown multipart field \"file\"`) {
		t.Fatalf("multipart without package = %d %s", code, b)
	}
	if fs := e.files(); len(fs) != 0 || e.appURL() != "http://example.com/old.tgz" {
		t.Fatalf("after the errors: store %v, appURL %s", fs, e.appURL())
	}
	e.upload(http.StatusOK, "/api/app/my_app/package?sha256="+sum(content), content)
}

// TestUploadRefusesWhatIsNotAPackage: 2 KB of random bytes named app.tgz
// and a text file without a #! line are neither an archive nor a program
// the executor can run (it used to hand them to /bin/sh): the upload is a
// 400 naming the problem, raw or multipart, and nothing is stored.
func TestUploadRefusesWhatIsNotAPackage(t *testing.T) {
	e := newPkgEnv(t, 0)
	random := make([]byte, 2048)
	rand.NewChaCha8([32]byte{7}).Read(random) // 2 KB of (fixed) random bytes
	random[0] = '`'
	const want = "not a tar, tar.gz or zip archive"
	for name, body := range map[string][]byte{"app.tgz": random, "README": []byte("how to run the job\n")} {
		code, b := e.put("/api/app/my_app/package?filename="+name, bytes.NewReader(body), "application/octet-stream")
		if code != http.StatusBadRequest || !strings.Contains(string(b), want) || !strings.Contains(string(b), "nothing was stored") {
			t.Errorf("raw %s = %d %s", name, code, b)
		}
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		fw, _ := mw.CreateFormFile("package", name)
		fw.Write(body)
		mw.Close()
		if code, b := e.put("/api/app/my_app/package", &buf, mw.FormDataContentType()); code != http.StatusBadRequest || !strings.Contains(string(b), want) {
			t.Errorf("multipart %s = %d %s", name, code, b)
		}
	}
	if fs := e.files(); len(fs) != 0 || e.appURL() != "http://example.com/old.tgz" {
		t.Fatalf("after the refusals: store %v, appURL %s", fs, e.appURL())
	}
}

// An archive the executor would refuse to extract (an entry that climbs
// out with .., an absolute path, a symlink out) is refused at upload, as
// random bytes are, naming the entry (issue 57 item 9: it was accepted and
// every run then failed at extraction).
func TestUploadRefusesAnArchiveThatCannotExtract(t *testing.T) {
	e := newPkgEnv(t, 0)
	for _, tc := range []struct {
		name string
		hdrs []tar.Header
		want string
	}{
		{"trav.tar.gz", []tar.Header{{Name: "bin/start.sh", Typeflag: tar.TypeReg, Mode: 0o755}, {Name: "../../x", Typeflag: tar.TypeReg, Mode: 0o644}}, `entry "../../x" escapes the extraction directory`},
		{"abs.tgz", []tar.Header{{Name: "/etc/x", Typeflag: tar.TypeReg, Mode: 0o644}}, `entry "/etc/x" has an absolute path`},
		{"link.tgz", []tar.Header{{Name: "l", Typeflag: tar.TypeSymlink, Linkname: "../../etc"}}, `symlink "l" -> "../../etc" points outside`},
	} {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		tw := tar.NewWriter(zw)
		for _, h := range tc.hdrs {
			_ = tw.WriteHeader(&h)
		}
		tw.Close()
		zw.Close()
		code, b := e.put("/api/app/my_app/package?filename="+tc.name, bytes.NewReader(buf.Bytes()), "application/octet-stream")
		var m struct{ Message string }
		_ = json.Unmarshal(b, &m)
		if code != http.StatusBadRequest || !strings.Contains(m.Message, tc.want) || !strings.Contains(m.Message, "nothing was stored") {
			t.Errorf("%s = %d %s", tc.name, code, b)
		}
	}
	if fs := e.files(); len(fs) != 0 || e.appURL() != "http://example.com/old.tgz" {
		t.Fatalf("after the refusals: store %v, appURL %s", fs, e.appURL())
	}
}

func TestUploadSizeLimit(t *testing.T) {
	e := newPkgEnv(t, 1000)
	big := append([]byte("#!"), bytes.Repeat([]byte{'x'}, 999)...)
	e.upload(http.StatusRequestEntityTooLarge, "/api/app/my_app/package", big) // Content-Length known: refused before reading
	// Chunked (no Content-Length): cut off while streaming.
	code, b := e.put("/api/app/my_app/package", io.MultiReader(bytes.NewReader(big)), "application/octet-stream")
	if code != http.StatusRequestEntityTooLarge || !strings.Contains(string(b), "package_max_bytes") {
		t.Fatalf("chunked upload = %d %s", code, b)
	}
	if fs := e.files(); len(fs) != 0 {
		t.Fatalf("store holds %v after refused uploads", fs)
	}
	e.upload(http.StatusOK, "/api/app/my_app/package", big[:1000])
}

func TestReuploadOfSameContentIsANoOp(t *testing.T) {
	e := newPkgEnv(t, 0)
	v1, v2 := []byte("#!version 1"), []byte("#!version 2")
	first := e.upload(http.StatusOK, "/api/app/my_app/package", v1)
	again := e.upload(http.StatusOK, "/api/app/my_app/package", v1)
	if !bytes.Equal(first, again) {
		t.Fatalf("re-upload answered %s, first %s", again, first)
	}
	e.upload(http.StatusOK, "/api/app/my_app/package", v2)
	if fs := e.files(); len(fs) != 2 {
		t.Fatalf("store holds %v, want both versions (the old one goes by GC)", fs)
	}
	if !strings.Contains(e.appURL(), sum(v2)) {
		t.Fatalf("appURL = %s, want version 2", e.appURL())
	}
}

func TestUploadNeedsAdmin(t *testing.T) {
	e := newPkgEnv(t, 0)
	e.user = pkgGuest
	e.upload(http.StatusForbidden, "/api/app/my_app/package", []byte("x"))
	e.user = ""
	e.upload(http.StatusUnauthorized, "/api/app/my_app/package", []byte("x"))
	if fs := e.files(); len(fs) != 0 {
		t.Fatalf("store holds %v", fs)
	}
}

// An app may be created without appURL (ejctl publish: create, then
// upload); its package-running jobs wait for the upload, its SCRIPT and
// HTTP jobs do not, and an HTTP job may name no app at all.
func TestAppWithoutURLTakesItsPackageLater(t *testing.T) {
	e := newPkgEnv(t, 0)
	post := func(path, body string) (int, []byte) {
		t.Helper()
		return e.send(http.MethodPost, path, body)
	}
	if code, b := post("/api/app", `{"appName":"bare","bootstrapScript":"bin/start.sh"}`); code != 200 || !strings.Contains(string(b), `"appURL":""`) {
		t.Fatalf("create without appURL = %d %s", code, b)
	}
	if code, b := post("/api/job/register", `{"jobName":"runs_pkg","appName":"bare"}`); code != 400 || !strings.Contains(string(b), "has no appURL yet") {
		t.Fatalf("package job before the upload = %d %s", code, b)
	}
	if code, b := post("/api/job/register", `{"jobName":"script","appName":"bare","jobType":"SCRIPT","props":{"script.command.line":"echo hi"}}`); code != 200 {
		t.Fatalf("SCRIPT job on an app without appURL = %d %s", code, b)
	}
	if code, b := post("/api/job/register", `{"jobName":"ping","jobType":"HTTP","props":{"http.url":"http://svc/ping"}}`); code != 200 || !strings.Contains(string(b), `"appName":""`) {
		t.Fatalf("HTTP job without app = %d %s", code, b)
	}
	if code, b := post("/api/job/trigger", "ping"); code/100 != 2 {
		t.Fatalf("trigger of the HTTP job without app = %d %s", code, b)
	}
	e.upload(http.StatusOK, "/api/app/bare/package", []byte("#!package"))
	if code, b := post("/api/job/register", `{"jobName":"runs_pkg","appName":"bare"}`); code != 200 {
		t.Fatalf("package job after the upload = %d %s", code, b)
	}
}

// send sends a JSON request with the admin's credentials.
func (e *pkgEnv) send(method, path, body string) (int, []byte) {
	e.t.Helper()
	req, _ := http.NewRequest(method, e.srv.URL+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.SetBasicAuth(e.user, e.pass)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	mustContract(e.t).check(e.t, req, resp.StatusCode, resp.Header, b)
	return resp.StatusCode, b
}

// slowBody yields n chunks with a pause before each: an upload on a slow link.
type slowBody struct {
	n     int
	pause time.Duration
}

func (b *slowBody) Read(p []byte) (int, error) {
	if b.n == 0 {
		return 0, io.EOF
	}
	time.Sleep(b.pause) // the client is slow on purpose; nothing waits on it
	b.n--
	return copy(p, "#!/bin/sh\n"), nil
}

// An upload taking longer than the server's whole-request ReadTimeout
// still succeeds while data keeps arriving.
func TestSlowUploadOutlivesTheReadTimeout(t *testing.T) {
	e := newPkgEnv(t, 0, func(s *http.Server) { s.ReadTimeout = 200 * time.Millisecond })
	code, b := e.put("/api/app/my_app/package", &slowBody{n: 8, pause: 100 * time.Millisecond}, "application/octet-stream")
	if code != http.StatusOK || !strings.Contains(string(b), `"size":80`) {
		t.Fatalf("slow upload = %d %s", code, b)
	}
}

// Agents download with GET and HEAD, ranges and conditional requests; every
// answer is as the OpenAPI document says (fetch checks it).
func TestPackageDownloadAsDocumented(t *testing.T) {
	e := newPkgEnv(t, 0)
	content := append([]byte("#!"), bytes.Repeat([]byte("0123456789"), 1000)[2:]...) // a script, as far as its first bytes go
	var ans api.PackageAnswer
	if err := json.Unmarshal(e.upload(http.StatusOK, "/api/app/my_app/package?filename=app.tgz", content), &ans); err != nil {
		t.Fatal(err)
	}
	etag := `"` + sum(content) + `"`
	resp, b := fetch(t, http.MethodGet, ans.AppURL)
	if resp.StatusCode != http.StatusOK || !bytes.Equal(b, content) || resp.Header.Get("ETag") != etag ||
		resp.Header.Get("X-Content-SHA256") != sum(content) {
		t.Fatalf("GET = %d, %d bytes, headers %v", resp.StatusCode, len(b), resp.Header)
	}
	if resp, b = fetch(t, http.MethodHead, ans.AppURL); resp.StatusCode != http.StatusOK || len(b) != 0 || resp.ContentLength != int64(len(content)) {
		t.Errorf("HEAD = %d, body %d bytes, Content-Length %d", resp.StatusCode, len(b), resp.ContentLength)
	}
	if resp, b = fetch(t, http.MethodGet, ans.AppURL, "Range", "bytes=10-19"); resp.StatusCode != http.StatusPartialContent || string(b) != "0123456789" {
		t.Errorf("range = %d %q", resp.StatusCode, b)
	}
	if resp, _ = fetch(t, http.MethodGet, ans.AppURL, "Range", "bytes=20000-"); resp.StatusCode != http.StatusRequestedRangeNotSatisfiable {
		t.Errorf("range past the end = %d", resp.StatusCode)
	}
	if resp, _ = fetch(t, http.MethodGet, ans.AppURL, "If-None-Match", etag); resp.StatusCode != http.StatusNotModified {
		t.Errorf("If-None-Match = %d", resp.StatusCode)
	}
	if resp, _ = fetch(t, http.MethodGet, ans.AppURL, "If-Match", `"other"`); resp.StatusCode != http.StatusPreconditionFailed {
		t.Errorf("If-Match = %d", resp.StatusCode)
	}
	wrongToken := strings.Replace(ans.AppURL, "/"+sum(content)+"/", "/"+sum(content)+"/"+strings.Repeat("0", 32)+"/x/", 1)
	wrongToken = wrongToken[:strings.Index(wrongToken, "/x/")] + "/app.tgz"
	for _, m := range []string{http.MethodGet, http.MethodHead} {
		if resp, _ = fetch(t, m, wrongToken); resp.StatusCode != http.StatusNotFound {
			t.Errorf("%s with a wrong token = %d", m, resp.StatusCode)
		}
	}
	// Not the route's shape, or not its method: the router's JSON errors.
	if resp, b = fetch(t, http.MethodGet, e.srv.URL+"/packages/"+sum(content)+"/app.tgz"); resp.StatusCode != http.StatusNotFound ||
		!strings.Contains(string(b), "no such endpoint") {
		t.Errorf("two segments = %d %s", resp.StatusCode, b)
	}
	if resp, _ = fetch(t, http.MethodPost, ans.AppURL); resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST = %d", resp.StatusCode)
	}
}
