package ejctl

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// writeTree writes files (path → content; a path ending in "*" is made
// executable) under dir, in the given order, with the given mtime.
func writeTree(t *testing.T, dir string, order []string, files map[string]string, mtime time.Time, fileMode os.FileMode) {
	t.Helper()
	for _, name := range order {
		p := filepath.Join(dir, filepath.FromSlash(trimStar(name)))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		mode := fileMode
		if name[len(name)-1] == '*' {
			mode |= 0o100
		}
		if err := os.WriteFile(p, []byte(files[name]), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
}

func trimStar(s string) string {
	if s != "" && s[len(s)-1] == '*' {
		return s[:len(s)-1]
	}
	return s
}

func packDigest(t *testing.T, dir string, exclude ...string) (string, []byte) {
	t.Helper()
	var buf bytes.Buffer
	if err := Pack(dir, &buf, exclude); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(buf.Bytes())
	return hex.EncodeToString(sum[:]), buf.Bytes()
}

var treeFiles = map[string]string{
	"bin/start.sh*":     "#!/bin/sh\necho hi\n",
	"conf/app.conf":     "a=1\n",
	"lib/z/deep.txt":    "deep\n",
	"README":            "readme\n",
	".git/HEAD":         "ref: refs/heads/main\n",
	"lib/a-first.jar":   "jar bytes",
	"bin/helper.py*":    "print('x')\n",
	"conf/empty.values": "",
}

func TestPackIsReproducible(t *testing.T) {
	names := make([]string, 0, len(treeFiles))
	for k := range treeFiles {
		names = append(names, k)
	}
	reversed := make([]string, len(names))
	for i, n := range names {
		reversed[len(names)-1-i] = n
	}
	a, b := t.TempDir(), t.TempDir()
	writeTree(t, a, names, treeFiles, time.Date(2020, 5, 1, 0, 0, 0, 0, time.UTC), 0o644)
	writeTree(t, b, reversed, treeFiles, time.Date(2025, 9, 9, 9, 9, 9, 0, time.UTC), 0o600) // other times, umask, order
	da, data := packDigest(t, a)
	db, _ := packDigest(t, b)
	if da != db {
		t.Fatalf("the same tree packed twice differs: %s vs %s", da, db)
	}
	if again, _ := packDigest(t, a); again != da {
		t.Fatal("packing the same directory twice differs")
	}

	// The archive: sorted entries, fixed times, root owner, normalised modes.
	gz, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if !gz.ModTime.IsZero() || gz.Name != "" {
		t.Errorf("gzip header carries a time or name: %v %q", gz.ModTime, gz.Name)
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
		got = append(got, h.Name)
		if !h.ModTime.Equal(packEpoch) || h.Uid != 0 || h.Gid != 0 || h.Uname != "" || h.Gname != "" {
			t.Errorf("%s: mtime %v uid %d gid %d %q/%q", h.Name, h.ModTime, h.Uid, h.Gid, h.Uname, h.Gname)
		}
		want := int64(0o644)
		if h.Typeflag == tar.TypeDir || h.Name == "bin/start.sh" || h.Name == "bin/helper.py" {
			want = 0o755
		}
		if h.Mode != want {
			t.Errorf("%s: mode %o, want %o", h.Name, h.Mode, want)
		}
	}
	want := []string{".git/", ".git/HEAD", "README", "bin/", "bin/helper.py", "bin/start.sh", "conf/", "conf/app.conf", "conf/empty.values", "lib/", "lib/a-first.jar", "lib/z/", "lib/z/deep.txt"}
	if len(got) != len(want) {
		t.Fatalf("entries %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("entries %v, want %v", got, want)
		}
	}
}

func TestPackChangesWithContentModeAndExclude(t *testing.T) {
	dir := t.TempDir()
	order := []string{"bin/start.sh*", "conf/app.conf", ".git/HEAD"}
	writeTree(t, dir, order, treeFiles, time.Now(), 0o644)
	base, _ := packDigest(t, dir)
	noGit, _ := packDigest(t, dir, ".git")
	if noGit == base {
		t.Fatal("--exclude .git changed nothing")
	}
	if other, _ := packDigest(t, dir, "*.conf", ".git"); other == noGit {
		t.Fatal("excluding *.conf changed nothing")
	}
	if err := os.Chmod(filepath.Join(dir, "conf/app.conf"), 0o755); err != nil {
		t.Fatal(err)
	}
	if d, _ := packDigest(t, dir); d == base {
		t.Fatal("an executable bit is not part of the package")
	}
	if err := os.WriteFile(filepath.Join(dir, "conf/app.conf"), []byte("a=2\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if d, _ := packDigest(t, dir); d == base {
		t.Fatal("changed content packs to the same digest")
	}
}

func TestPackRefusesSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, []string{"bin/start.sh*"}, treeFiles, time.Now(), 0o644)
	if err := os.Symlink("bin/start.sh", filepath.Join(dir, "start")); err != nil {
		t.Fatal(err)
	}
	if _, err := preparePackage(dir, "app", nil); err != nil {
		t.Fatalf("a symbolic link is packed as a link: %v", err)
	}
	sock := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(sock, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := preparePackage(dir, "app", nil); err == nil {
		t.Fatal("a FIFO was packed")
	}
}

// TestPublishRefusesAFileThatIsNotAPackage: `ejctl app publish FILE` checks
// the file as the scheduler will, before creating the app; a directory is
// packed (a tar.gz) and a script or an archive is taken as it is.
func TestPublishRefusesAFileThatIsNotAPackage(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, p := range []string{write("app.tgz", "`\x8f\x00random"), write("notes.txt", "not a script\n")} {
		if _, err := preparePackage(p, "app", nil); err == nil || !strings.Contains(err.Error(), "not a tar, tar.gz or zip archive") {
			t.Errorf("%s: %v", p, err)
		}
	}
	pf, err := preparePackage(write("run.sh", "#!/bin/sh\necho hi\n"), "app", nil)
	if err != nil || pf.name != "run.sh" {
		t.Errorf("a script: %+v %v", pf, err)
	}
}
