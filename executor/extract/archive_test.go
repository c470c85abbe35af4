package extract

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// ent is one archive entry in a test fixture.
type ent struct {
	name, body, link string
	typ              byte // tar type; 0 = regular file
	mode             int64
}

func file(name, body string) ent       { return ent{name: name, body: body, mode: 0o644} }
func script(name, body string) ent     { return ent{name: name, body: body, mode: 0o755} }
func symlink(name, target string) ent  { return ent{name: name, link: target, typ: tar.TypeSymlink} }
func hardlink(name, target string) ent { return ent{name: name, link: target, typ: tar.TypeLink} }

func makeTar(t testing.TB, ents ...ent) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range ents {
		h := &tar.Header{Name: e.name, Linkname: e.link, Typeflag: e.typ, Mode: e.mode, Size: int64(len(e.body)), Format: tar.FormatPAX}
		if e.typ == 0 {
			h.Typeflag = tar.TypeReg
		} else if e.typ != tar.TypeReg {
			h.Size = 0
		}
		if h.Mode == 0 {
			h.Mode = 0o755
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Size > 0 {
			tw.Write([]byte(e.body))
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func gz(t testing.TB, b []byte) []byte {
	var buf bytes.Buffer
	z := gzip.NewWriter(&buf)
	z.Write(b)
	z.Close()
	return buf.Bytes()
}

// viaCommand compresses with an external tool (bzip2, xz), or skips.
func viaCommand(t testing.TB, tool string, b []byte) []byte {
	t.Helper()
	if _, err := exec.LookPath(tool); err != nil {
		t.Skipf("%s command not installed; cannot build the fixture", tool)
	}
	cmd := exec.Command(tool, "-c")
	cmd.Stdin = bytes.NewReader(b)
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func makeZip(t testing.TB, ents ...ent) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, e := range ents {
		h := &zip.FileHeader{Name: e.name, Method: zip.Deflate}
		switch e.typ {
		case tar.TypeSymlink:
			h.SetMode(os.ModeSymlink | 0o777)
			e.body = e.link
		case tar.TypeDir:
			h.Name += "/"
			h.SetMode(os.ModeDir | 0o755)
		case tar.TypeChar:
			h.SetMode(os.ModeDevice | os.ModeCharDevice | 0o644)
		default:
			h.SetMode(os.FileMode(e.mode))
		}
		w, err := zw.CreateHeader(h)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(e.body))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// sandbox is a test sandbox inside a directory that must stay otherwise empty.
type sandbox struct {
	outer, dir, apps string
}

func newSandbox(t *testing.T) sandbox {
	outer := t.TempDir()
	dir := filepath.Join(outer, "sandbox")
	return sandbox{outer: outer, dir: dir, apps: filepath.Join(dir, "apps")}
}

// pkg writes data to a file outside the sandbox's outer dir and opens it.
func pkg(t *testing.T, name string, data []byte) Package {
	t.Helper()
	p := filepath.Join(t.TempDir(), "blob")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	h := sha256.Sum256(data)
	return Package{File: f, Size: int64(len(data)), SHA256: hex.EncodeToString(h[:]), Name: name}
}

// assertContained checks that the failed extraction left nothing behind:
// the outer dir holds only the sandbox, and apps/ only lock files.
func (s sandbox) assertContained(t *testing.T) {
	t.Helper()
	outer, _ := os.ReadDir(s.outer)
	if len(outer) != 1 || outer[0].Name() != "sandbox" {
		t.Errorf("outside the sandbox: %v", outer)
	}
	filepath.WalkDir(s.dir, func(p string, d os.DirEntry, err error) error {
		if p != s.dir && p != s.apps && filepath.Ext(p) != ".lock" {
			t.Errorf("left behind: %s", p)
		}
		return nil
	})
}
