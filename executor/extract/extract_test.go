package extract

import (
	"archive/tar"
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ejcloud/elasticjob/app"
)

func TestFormats(t *testing.T) {
	ents := []ent{
		{name: "my-job/", typ: tar.TypeDir, mode: 0o755},
		script("my-job/bin/start.sh", "#!/bin/sh\necho hi\n"),
		file("./my-job/conf/app.conf", "k=v"),
		symlink("my-job/bin/run", "start.sh"),
		hardlink("my-job/conf/copy.conf", "my-job/conf/app.conf"),
	}
	plain := func(t *testing.T) []byte { return makeTar(t, ents...) }
	cases := map[string]func(t *testing.T) []byte{
		"tar":     plain,
		"tar.gz":  func(t *testing.T) []byte { return gz(t, plain(t)) },
		"tar.bz2": func(t *testing.T) []byte { return viaCommand(t, "bzip2", plain(t)) },
		"tar.xz":  func(t *testing.T) []byte { return viaCommand(t, "xz", plain(t)) },
		"zip":     func(t *testing.T) []byte { return makeZip(t, ents[:4]...) },
	}
	for name, build := range cases {
		t.Run(name, func(t *testing.T) {
			s := newSandbox(t)
			// A misleading file name: detection must use the magic bytes.
			res, err := Extract(t.Context(), pkg(t, "package.bin", build(t)), s.apps, Limits{})
			if err != nil {
				t.Fatal(err)
			}
			if res.Single != "" || res.Reused || filepath.Dir(res.Dir) != s.apps {
				t.Fatalf("result %+v", res)
			}
			st, err := os.Stat(filepath.Join(res.Dir, "my-job/bin/start.sh"))
			if err != nil || st.Mode().Perm()&0o100 == 0 {
				t.Fatalf("start.sh: %v %v", st, err)
			}
			if b, _ := os.ReadFile(filepath.Join(res.Dir, "my-job/bin/run")); string(b) != "#!/bin/sh\necho hi\n" {
				t.Fatalf("symlink content %q", b)
			}
		})
	}
}

func TestExtractOncePerChecksum(t *testing.T) {
	s := newSandbox(t)
	data := gz(t, makeTar(t, file("a.txt", "a")))
	r1, err := Extract(t.Context(), pkg(t, "x.tgz", data), s.apps, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(r1.Dir, "marker"), nil, 0o644)
	r2, err := Extract(t.Context(), pkg(t, "y.tgz", data), s.apps, Limits{})
	if err != nil || !r2.Reused || r2.Dir != r1.Dir {
		t.Fatalf("second: %+v %v", r2, err)
	}
	if _, err := os.Stat(filepath.Join(r2.Dir, "marker")); err != nil {
		t.Fatal("re-extracted")
	}
}

func TestSingleFile(t *testing.T) {
	s := newSandbox(t)
	res, err := Extract(t.Context(), pkg(t, "run.sh", []byte("#!/bin/sh\nexit 0\n")), s.apps, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(filepath.Join(res.Dir, "run.sh"))
	if res.Single != "run.sh" || err != nil || st.Mode().Perm()&0o111 == 0 {
		t.Fatalf("%+v %v %v", res, st, err)
	}
}

// TestNotAPackageIsRefused: what is neither an archive nor a single program
// (2 KB of random bytes named .tgz, a text file without a #! line, an empty
// file) fails extraction with a cause naming the problem, leaving nothing
// behind; it used to be copied as a "single file" and run by /bin/sh.
func TestNotAPackageIsRefused(t *testing.T) {
	random := make([]byte, 2048)
	rand.NewChaCha8([32]byte{3}).Read(random) // 2 KB of (fixed) random bytes
	random[0] = '`'
	for name, data := range map[string][]byte{
		"app.tgz":    random,
		"README.txt": []byte("echo this has no interpreter line\n"),
		"empty.sh":   nil,
	} {
		s := newSandbox(t)
		res, err := Extract(t.Context(), pkg(t, name, data), s.apps, Limits{})
		if !errors.Is(err, app.ErrNotPackage) || !strings.Contains(err.Error(), "extract "+name+": the package is") ||
			!strings.Contains(err.Error(), "not a tar, tar.gz or zip archive") {
			t.Errorf("%s: %+v, %v", name, res, err)
		}
		if entries, _ := os.ReadDir(s.apps); len(entries) != 0 {
			t.Errorf("%s: left %v behind", name, entries)
		}
	}
	res, err := Extract(t.Context(), pkg(t, "tool", []byte("\x7fELF\x02\x01\x01rest")), newSandbox(t).apps, Limits{})
	if err != nil || res.Single != "tool" {
		t.Errorf("an ELF executable is a single-file app: %+v %v", res, err)
	}
	// A jar is kept whole (the executor runs it on a JVM), not extracted as a zip.
	jar := append([]byte("PK\x03\x04"), make([]byte, 26)...)
	jar[26] = byte(len("META-INF/"))
	jar = append(jar, "META-INF/ and the rest"...)
	res, err = Extract(t.Context(), pkg(t, "data-sync-job-1.0.jar", jar), newSandbox(t).apps, Limits{})
	if err != nil || res.Single != "data-sync-job-1.0.jar" {
		t.Errorf("a jar is a single-file app: %+v %v", res, err)
	} else if b, _ := os.ReadFile(filepath.Join(res.Dir, res.Single)); !bytes.Equal(b, jar) {
		t.Errorf("the jar was changed: %q", b)
	}
}

func TestHostileArchives(t *testing.T) {
	big := strings.Repeat("0", 4096)
	var many []ent
	for i := range 11 {
		many = append(many, file(strings.Repeat("f", i+1), "x"))
	}
	tars := map[string]struct {
		ents []ent
		want string
	}{
		"dotdot":           {[]ent{file("../evil", "x")}, `entry "../evil" escapes the extraction directory`},
		"inner dotdot":     {[]ent{file("a/../../evil", "x")}, `entry "a/../../evil" escapes`},
		"absolute":         {[]ent{file("/tmp/abs-evil", "x")}, `entry "/tmp/abs-evil" has an absolute path`},
		"symlink /etc":     {[]ent{symlink("etc", "/etc"), file("etc/evil", "x")}, `symlink "etc" -> "/etc" points outside`},
		"symlink up":       {[]ent{symlink("up", "../.."), file("up/evil", "x")}, `symlink "up" -> "../.." points outside`},
		"symlink chain":    {[]ent{symlink("x", "."), symlink("y", "x/.."), file("y/evil", "x")}, "path escapes from parent"},
		"symlink via link": {[]ent{symlink("x", "."), symlink("y", "x/..")}, `symlink "y" -> "x/.." points outside`},
		"hardlink moves":   {[]ent{symlink("d/s", ".."), hardlink("h", "d/s")}, `symlink "h" -> ".." points outside`},
		"hardlink out":     {[]ent{hardlink("h", "../../../etc/passwd")}, `hard link "h" -> "../../../etc/passwd" points outside`},
		"hardlink abs":     {[]ent{hardlink("h", "/etc/passwd")}, `hard link "h" -> "/etc/passwd" points outside`},
		"char device":      {[]ent{{name: "dev/null", typ: tar.TypeChar}}, `entry "dev/null" is a character device`},
		"fifo":             {[]ent{{name: "p", typ: tar.TypeFifo}}, `entry "p" is a FIFO`},
		"too big":          {[]ent{file("a", big), file("b", big)}, "archive expands to more than 6000 bytes"},
		"too many":         {many, "archive has more than 10 entries"},
		"good then other":  {[]ent{file("ok", "fine"), file("../evil", "x")}, "escapes"},
	}
	for name, tc := range tars {
		t.Run("tar/"+name, func(t *testing.T) {
			s := newSandbox(t)
			_, err := Extract(t.Context(), pkg(t, "evil.tgz", gz(t, makeTar(t, tc.ents...))), s.apps, Limits{MaxBytes: 6000, MaxEntries: 10})
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "extract evil.tgz: ") {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			s.assertContained(t)
		})
	}
}

func TestHostileZips(t *testing.T) {
	zips := map[string]struct {
		ents []ent
		want string
	}{
		"dotdot":    {[]ent{file("../evil", "x")}, "escapes"},
		"backslash": {[]ent{file(`..\evil`, "x")}, "escapes"},
		"symlink":   {[]ent{symlink("etc", "/etc")}, "points outside"},
		"device":    {[]ent{{name: "dev", typ: tar.TypeChar}}, "special file"},
		// 2 MiB of zeros compresses to a few KiB: the bytes written count.
		"bomb": {[]ent{file("zeros", strings.Repeat("\x00", 2<<20))}, "archive expands to more than 1 MiB"},
	}
	for name, tc := range zips {
		t.Run(name, func(t *testing.T) {
			s := newSandbox(t)
			_, err := Extract(t.Context(), pkg(t, "evil.zip", makeZip(t, tc.ents...)), s.apps, Limits{MaxBytes: 1 << 20})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			s.assertContained(t)
		})
	}
}

func TestCompressedNonTar(t *testing.T) {
	s := newSandbox(t)
	_, err := Extract(t.Context(), pkg(t, "x.gz", gz(t, []byte("just text, not a tar"))), s.apps, Limits{})
	if err == nil || !strings.Contains(err.Error(), "not a tar archive") {
		t.Fatalf("err = %v", err)
	}
	s.assertContained(t)
}

// CheckEntries (the scheduler's check on upload) refuses the entries
// Extract refuses one by one, without writing anything, and passes good
// archives and non-archives.
func TestCheckEntries(t *testing.T) {
	bad := map[string][]byte{
		`entry "../evil" escapes`:                       gz(t, makeTar(t, file("ok", "fine"), file("../evil", "x"))),
		`entry "/tmp/abs-evil" has an absolute path`:    makeTar(t, file("/tmp/abs-evil", "x")),
		`symlink "up" -> "../.." points outside`:        gz(t, makeTar(t, symlink("up", "../.."))),
		`hard link "h" -> "/etc/passwd" points outside`: gz(t, makeTar(t, hardlink("h", "/etc/passwd"))),
		`entry "p" is a FIFO`:                           gz(t, makeTar(t, ent{name: "p", typ: tar.TypeFifo})),
		`entry "../evil" escapes the extraction`:        makeZip(t, file("../evil", "x")),
		`symlink "etc" -> "/etc" points outside`:        makeZip(t, symlink("etc", "/etc")),
		`special file`:                                  makeZip(t, ent{name: "dev", typ: tar.TypeChar}),
	}
	for want, data := range bad {
		err := CheckEntries(t.Context(), bytes.NewReader(data), int64(len(data)))
		if !errors.Is(err, ErrUnsafe) || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want ErrUnsafe and %q", err, want)
		}
	}
	for name, data := range map[string][]byte{
		"tar.gz": gz(t, makeTar(t, script("bin/start.sh", "#!/bin/sh\n"), symlink("cur", "bin"))),
		"zip":    makeZip(t, file("a/b", "x")),
		"script": []byte("#!/bin/sh\necho hi\n"),
	} {
		if err := CheckEntries(t.Context(), bytes.NewReader(data), int64(len(data))); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}
