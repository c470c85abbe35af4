package image

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWriteIsADeterministicDockerArchive: the same inputs give the same bytes, and the
// archive holds a manifest naming the tag, a config and one layer with the executor.
func TestWriteIsADeterministicDockerArchive(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "exe")
	if err := os.WriteFile(exe, []byte("\x7fELF fake executor"), 0o755); err != nil {
		t.Fatal(err)
	}
	s := Spec{Ref: "localhost/ej:test", Executor: exe, Scheduler: exe, Busybox: exe, Applets: []string{"sh", "wget", "../evil"}}
	var a, b bytes.Buffer
	if err := Write(&a, s); err != nil {
		t.Fatal(err)
	}
	if err := Write(&b, s); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatal("two writes of the same image differ")
	}
	files := untar(t, a.Bytes())
	var manifest []struct {
		Config   string
		RepoTags []string
		Layers   []string
	}
	if err := json.Unmarshal(files["manifest.json"], &manifest); err != nil || len(manifest) != 1 || manifest[0].RepoTags[0] != "localhost/ej:test" {
		t.Fatalf("manifest %s (%v)", files["manifest.json"], err)
	}
	if _, ok := files[manifest[0].Config]; !ok {
		t.Fatalf("no config %s", manifest[0].Config)
	}
	layer := untar(t, files[manifest[0].Layers[0]])
	for _, want := range []string{"elasticjob-executor", "elasticjob-scheduler", "bin/busybox", "bin/sh", "bin/wget", "tmp/", "elasticjob/"} {
		if _, ok := layer[want]; !ok {
			t.Errorf("the layer lacks %s", want)
		}
	}
	if _, ok := layer["bin/../evil"]; ok {
		t.Error("an applet name with a path went in")
	}
}

func untar(t *testing.T, b []byte) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(tr)
		out[h.Name] = data
	}
}

// Host paths keep their symlink chains: a link and its target are both in the image, with
// every parent directory, so the path resolves inside the image as on the host.
func TestHostPathsKeepSymlinks(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "usr", "lib")
	if err := os.MkdirAll(real, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(real, "libx.so"), []byte("ELF"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("usr/lib", filepath.Join(dir, "lib")); err != nil {
		t.Fatal(err)
	}
	h := newHostTree()
	if err := h.add(filepath.Join(dir, "lib", "libx.so")); err != nil {
		t.Fatal(err)
	}
	got := map[string]entry{}
	for _, e := range h.list() {
		got[e.name] = e
	}
	base := strings.TrimPrefix(dir, "/")
	if l := got[base+"/lib"]; l.link != "usr/lib" {
		t.Errorf("the link: %+v", l)
	}
	if f := got[base+"/usr/lib/libx.so"]; string(f.data) != "ELF" || f.mode != 0o644 {
		t.Errorf("the file: %+v", f)
	}
	if d := got[base+"/usr/"]; !d.dir {
		t.Errorf("the parent: %+v (%v)", d, got)
	}
	if _, ok := got[base+"/lib/libx.so"]; ok {
		t.Error("the file was also put under the link")
	}
}
