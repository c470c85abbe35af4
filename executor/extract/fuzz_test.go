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
	"strings"
	"syscall"
	"testing"

	"github.com/ejcloud/elasticjob/internal/fuzzing"
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

// escapes resolves the symlink at rel (slash-separated, relative to root)
// as the kernel would, following every symlink on the way, and reports
// whether the walk leaves root. Missing components are taken lexically
// (they may be created later); a chain of more than 40 links is a loop,
// which the kernel refuses to follow, so it does not escape.
func escapes(t *testing.T, root, rel string) bool {
	target, err := os.Readlink(filepath.Join(root, filepath.FromSlash(rel)))
	if err != nil {
		t.Fatalf("readlink %s: %v", rel, err)
	}
	stack := strings.Split(path.Dir(rel), "/")
	if path.Dir(rel) == "." {
		stack = nil
	}
	hops := 0
	var walk func(target string) bool
	walk = func(target string) bool {
		if path.IsAbs(target) {
			return true
		}
		for _, c := range strings.Split(target, "/") {
			switch c {
			case "", ".":
				continue
			case "..":
				if len(stack) == 0 {
					return true
				}
				stack = stack[:len(stack)-1]
				continue
			}
			stack = append(stack, c)
			next, err := os.Readlink(filepath.Join(root, filepath.Join(stack...)))
			if err != nil {
				continue // not a symlink, or missing
			}
			if hops++; hops > 40 {
				return false
			}
			stack = stack[:len(stack)-1]
			if walk(next) {
				return true
			}
		}
		return false
	}
	return walk(target)
}
