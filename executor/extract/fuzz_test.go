package extract

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/ejcloud/elasticjob/internal/fuzzing"
	"golang.org/x/sys/unix"
)

// fuzzLimits are small, so that the fuzzer can reach them.
var fuzzLimits = Limits{MaxBytes: 64 << 10, MaxEntries: 32}

func extractSeeds(f *testing.F) {
	good := []ent{
		{name: "my-job/", typ: tar.TypeDir, mode: 0o755}, script("my-job/bin/start.sh", "#!/bin/sh\necho hi\n"),
		file("./my-job/conf/app.conf", "k=v"), symlink("my-job/bin/run", "start.sh"), hardlink("my-job/conf/copy.conf", "my-job/conf/app.conf"),
	}
	hostile := [][]ent{
		{file("../evil", "x")}, {file("a/../../evil", "x")}, {file("/tmp/abs-evil", "x")}, {symlink("etc", "/etc"), file("etc/evil", "x")},
		{symlink("up", "../.."), file("up/evil", "x")}, {symlink("x", "."), symlink("y", "x/.."), file("y/evil", "x")},
		{symlink("x", "."), symlink("y", "x/..")}, {symlink("d/s", ".."), hardlink("h", "d/s")}, {hardlink("h", "../../../etc/passwd")},
		{{name: "dev/null", typ: tar.TypeChar}}, {{name: "p", typ: tar.TypeFifo}}, {file("a", strings.Repeat("0", 40<<10)), file("b", strings.Repeat("0", 40<<10))},
		{file("f", "1"), file("f", "2"), {name: "f", typ: tar.TypeDir}}, {symlink("l", "t"), file("l", "x")}, {hardlink("h", "h")},
	}
	for _, ents := range append(hostile, good) {
		f.Add(makeTar(f, ents...), "app.tar")
		f.Add(gz(f, makeTar(f, ents...)), "app.tar.gz")
		f.Add(makeZip(f, ents...), "app.zip")
	}
	f.Add(makeZip(f, file(`..\evil`, "x")), "evil.zip")
	f.Add(makeZip(f, file("zeros", strings.Repeat("\x00", 1<<20))), "bomb.zip")
	f.Add(gz(f, []byte("just text, not a tar")), "x.gz")
	f.Add([]byte("#!/bin/sh\necho single\n"), "run.sh")
	f.Add([]byte("BZh91AY&SY"), "truncated.bz2")
	f.Add(append([]byte{0xfd, '7', 'z', 'X', 'Z', 0x00}, "not xz"...), "bad.xz")
	f.Add([]byte("PK\x05\x06"), "..")
}

// FuzzExtract unpacks any bytes as a package into a sandbox that sits in
// an otherwise empty directory. Properties: no panic and bounded time;
// nothing appears outside the sandbox and the package file is untouched; a
// failure leaves only lock files behind; a success leaves directories,
// regular files and symlinks only, within the byte limit, every symlink
// resolving (through any chain of symlinks) inside the extraction
// directory, and a non-archive copied byte for byte.
func FuzzExtract(f *testing.F) {
	extractSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte, name string) {
		outer := t.TempDir()
		sandbox := filepath.Join(outer, "sandbox")
		apps := filepath.Join(sandbox, "apps")
		blob := filepath.Join(t.TempDir(), "blob")
		if err := os.WriteFile(blob, data, 0o644); err != nil {
			t.Fatal(err)
		}
		file, err := os.Open(blob)
		if err != nil {
			t.Fatal(err)
		}
		defer file.Close()
		sum := sha256.Sum256(data)
		pkg := Package{File: file, Size: int64(len(data)), SHA256: hex.EncodeToString(sum[:]), Name: name}
		var res Result
		fuzzing.Bounded(t, "Extract", func() { res, err = Extract(t.Context(), pkg, apps, fuzzLimits) })
		if entries, _ := os.ReadDir(outer); len(entries) != 1 || entries[0].Name() != "sandbox" {
			t.Fatalf("written outside the sandbox: %v", entries)
		}
		if b, _ := os.ReadFile(blob); !bytes.Equal(b, data) {
			t.Fatal("the package file changed")
		}
		if err != nil {
			checkLeftovers(t, apps, err)
			return
		}
		checkTree(t, res.Dir)
		if res.Single != "" {
			if b, rerr := os.ReadFile(filepath.Join(res.Dir, res.Single)); rerr != nil || !bytes.Equal(b, data) {
				t.Fatalf("single file %q: %v", res.Single, rerr)
			}
		}
	})
}

// checkLeftovers: a failed extraction leaves lock files only.
func checkLeftovers(t *testing.T, apps string, err error) {
	t.Helper()
	entries, _ := os.ReadDir(apps)
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".lock") {
			t.Fatalf("failed extraction (%v) left %s behind", err, e.Name())
		}
	}
}

// checkTree walks an extraction: only directories, regular files and
// symlinks that stay inside, within the byte limit (hard links counted
// once).
func checkTree(t *testing.T, dir string) {
	t.Helper()
	var total int64
	seen := map[uint64]bool{}
	root, err := os.OpenRoot(dir) // the kernel's (or Go's) own resolution, a second opinion
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		switch mode := info.Mode(); {
		case mode.IsDir():
		case mode.IsRegular():
			if st, ok := info.Sys().(*syscall.Stat_t); ok && !seen[st.Ino] {
				seen[st.Ino] = true
				total += info.Size()
			}
		case mode&fs.ModeSymlink != 0:
			if _, err := root.Stat(rel); err != nil && strings.Contains(err.Error(), "escapes") {
				t.Fatalf("symlink %s leads outside the extraction directory: %v", rel, err)
			}
			if escapes(t, dir, filepath.ToSlash(rel)) {
				target, _ := os.Readlink(p)
				t.Fatalf("symlink %s -> %s resolves outside the extraction directory", rel, target)
			}
		default:
			t.Fatalf("%s is a special file (%v)", rel, mode)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("walk %s: %v", dir, err)
	}
	if total > fuzzLimits.MaxBytes {
		t.Fatalf("extracted %d bytes, limit %d", total, fuzzLimits.MaxBytes)
	}
}

// escapes reports whether the symlink at rel (slash-separated, relative to
// root) leads outside root, asking the kernel rather than re-walking the
// components as checkLinks does: the link is opened with O_PATH (the kernel
// follows every symlink on the way, refusing loops with ELOOP) and
// /proc/self/fd names the directory entry it landed on. Where a component
// does not exist yet, its parent is resolved so and the rest is taken
// lexically, as checkLinks does, since a missing directory may be created
// later; a loop leads nowhere.
func escapes(t *testing.T, root, rel string) bool {
	t.Helper()
	top, ok := landing(t, root, 0)
	if !ok {
		t.Fatalf("resolve the extraction directory %s", root)
	}
	at, ok := landing(t, root+"/"+rel, 0)
	return ok && at != top && !strings.HasPrefix(at, top+"/")
}

// landing is where the kernel takes the absolute path p, with missing
// components taken lexically; false for a loop.
func landing(t *testing.T, p string, hops int) (string, bool) {
	fd, err := unix.Open(p, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err == nil {
		defer unix.Close(fd)
		at, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
		if err != nil {
			t.Fatalf("where did %s land: %v", p, err)
		}
		return at, true
	}
	if err == unix.ELOOP || hops > 40 {
		return "", false
	}
	i := strings.LastIndexByte(p, '/') // p is absolute and not "/", which opens
	parent, base := p[:i], p[i+1:]
	if parent == "" {
		parent = "/"
	}
	dir, ok := landing(t, parent, hops)
	if !ok {
		return "", false
	}
	switch base {
	case "", ".":
		return dir, true
	case "..":
		return filepath.Dir(dir), true
	}
	next := filepath.Join(dir, base)
	target, err := os.Readlink(next)
	if err != nil {
		return next, true // missing (or under a file): lexically
	}
	if !path.IsAbs(target) {
		target = dir + "/" + target
	}
	return landing(t, target, hops+1)
}
