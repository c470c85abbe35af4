package harness

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

const wait = 30 * time.Second

func TestProcStopAndKill(t *testing.T) {
	dir := t.TempDir()
	p := Start(t, "stoppable", filepath.Join(dir, "a.log"), exec.Command("sh", "-c", "echo ready; exec sleep 300"))
	t.Cleanup(func() { p.Kill9() })
	p.AwaitReady(t, wait, 10*time.Millisecond, func() bool { return strings.Contains(p.Log(), "ready") }, "ready")
	p.Stop(t)
	if p.Running() || p.DiedAt().IsZero() || !p.KilledAt().IsZero() {
		t.Fatalf("after Stop: running %v, died %v, killed %v", p.Running(), p.DiedAt(), p.KilledAt())
	}
	p.Stop(t) // idempotent

	k := Start(t, "killable", filepath.Join(dir, "b.log"), exec.Command("sleep", "300"))
	died := k.Kill9()
	if k.Running() || died.IsZero() || k.KilledAt().IsZero() || died.Before(k.KilledAt()) {
		t.Fatalf("after Kill9: running %v, died %v, killed %v", k.Running(), died, k.KilledAt())
	}
	if again := k.Kill9(); !again.Equal(died) {
		t.Fatalf("a second Kill9 moved the death from %v to %v", died, again)
	}
}

func TestTarGz(t *testing.T) {
	entries := append(Scripts(map[string]string{"bin/b.sh": "b", "bin/a.sh": "a"}), Entry{Name: "link", Link: "/"})
	b, err := TarGz(entries...)
	if err != nil {
		t.Fatal(err)
	}
	gz, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	var got []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(tr)
		got = append(got, h.Name+" "+string(rune(h.Typeflag))+" "+h.FileInfo().Mode().Perm().String()+" "+string(body)+h.Linkname)
	}
	want := []string{"bin/ 5 -rwxr-xr-x ", "bin/a.sh 0 -rwxr-xr-x a", "bin/b.sh 0 -rwxr-xr-x b", "link 2 -rwxrwxrwx /"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("archive holds %q, want %q", got, want)
	}
}

func TestReadLinesAndTail(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{"1.log": "c\n", "0.log": "a\nb\n", "x.txt": "no\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for _, l := range ReadLines(t, filepath.Join(dir, "*.log")) {
		got = append(got, filepath.Base(l.File)+":"+l.Text)
	}
	if want := []string{"0.log:a", "0.log:b", "1.log:c"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("ReadLines = %q, want %q", got, want)
	}
	if got := Tail("1\n2\n3\n", 2); got != "2\n3" {
		t.Fatalf("Tail = %q", got)
	}
}

func TestNewRequestBodies(t *testing.T) {
	for _, c := range []struct {
		body       any
		want, kind string
	}{{nil, "", ""}, {"raw", "raw", "application/json"}, {[]byte("b"), "b", "application/json"},
		{map[string]int{"n": 1}, `{"n":1}`, "application/json"}} {
		req, err := NewRequest(http.MethodPost, "http://127.0.0.1:1/x", c.body)
		if err != nil {
			t.Fatal(err)
		}
		var got []byte
		if req.Body != nil {
			got, _ = io.ReadAll(req.Body)
		}
		if string(got) != c.want || req.Header.Get("Content-Type") != c.kind {
			t.Errorf("body %#v: sent %q as %q, want %q as %q", c.body, got, req.Header.Get("Content-Type"), c.want, c.kind)
		}
	}
	if _, err := NewRequest(http.MethodPost, "http://127.0.0.1:1/x", func() {}); err == nil {
		t.Error("a body JSON cannot encode was sent")
	}
}

func TestAPI(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, _, _ := r.BasicAuth(); u != "admin" {
			http.Error(w, "who", http.StatusUnauthorized)
			return
		}
		b, _ := io.ReadAll(r.Body)
		_, _ = w.Write(append([]byte(r.Method+" "+r.URL.Path+" "), b...))
	}))
	defer srv.Close()
	api := API{T: t, Base: srv.URL, Client: srv.Client()}
	if code, _ := api.Do(http.MethodGet, "/x", nil); code != http.StatusUnauthorized {
		t.Fatalf("without credentials: %d", code)
	}
	api.Auth = func(r *http.Request) { r.SetBasicAuth("admin", "pw") }
	if got := string(api.Must(http.MethodPost, "/api/job/trigger", "j")); got != "POST /api/job/trigger j" {
		t.Fatalf("answer %q", got)
	}
}
