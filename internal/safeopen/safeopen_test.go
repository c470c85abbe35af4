package safeopen

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

const tenantUID = 1879048201 // the sandbox's owner when the test runs as root

// sandbox makes a directory laid out as a tenant could leave its sandbox,
// owned by tenantUID when the test runs as root (else by the test's user),
// with outside files beside it that no open beneath it may reach.
func sandbox(t *testing.T) (dir, outside string, uid int) {
	t.Helper()
	base := t.TempDir()
	dir, outside = filepath.Join(base, "sandbox"), filepath.Join(base, "meta")
	for _, d := range []string{dir, filepath.Join(dir, "tasks", "t1"), filepath.Join(dir, "sub"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p, s string) {
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(outside, "secret"), "pay's token")
	write(filepath.Join(dir, "tasks", "t1", "stdout"), "my own output")
	write(filepath.Join(dir, "big"), string(make([]byte, 4096)))
	link := func(old, new string) {
		if err := os.Symlink(old, new); err != nil {
			t.Fatal(err)
		}
	}
	link(filepath.Join(outside, "secret"), filepath.Join(dir, "abs"))
	link("../meta/secret", filepath.Join(dir, "rel"))
	link(outside, filepath.Join(dir, "middle"))
	link("t1/stdout", filepath.Join(dir, "tasks", "inside"))
	link("/dev/zero", filepath.Join(dir, "zero"))
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	uid = os.Getuid()
	if uid == 0 {
		uid = tenantUID
		if err := unix.Mknod(filepath.Join(dir, "dev"), unix.S_IFCHR|0o666, int(unix.Mkdev(1, 5))); err != nil {
			t.Fatal(err)
		}
		if err := os.Link(filepath.Join(outside, "secret"), filepath.Join(dir, "hard-root")); err != nil {
			t.Fatal(err)
		}
		other := filepath.Join(outside, "other")
		write(other, "search's file")
		if err := os.Chown(other, tenantUID+1, tenantUID+1); err != nil {
			t.Fatal(err)
		}
		if err := os.Link(other, filepath.Join(dir, "hard-other")); err != nil {
			t.Fatal(err)
		}
		if err := filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
			if err != nil || p == filepath.Join(dir, "hard-root") || p == filepath.Join(dir, "hard-other") {
				return err
			}
			return os.Lchown(p, tenantUID, tenantUID)
		}); err != nil {
			t.Fatal(err)
		}
	}
	return dir, outside, uid
}

func TestOpen(t *testing.T) {
	for _, walkOnly := range []bool{false, true} {
		name := "openat2"
		if walkOnly {
			name = "walk"
		}
		t.Run(name, func(t *testing.T) {
			if walkOnly {
				noOpenat2.Store(true)
				t.Cleanup(func() { noOpenat2.Store(false) })
			}
			testOpen(t)
		})
	}
}

func testOpen(t *testing.T) {
	dir, _, uid := sandbox(t)
	r, err := OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.UID() != uid {
		t.Fatalf("root's owner %d, want %d", r.UID(), uid)
	}
	f, err := r.Open("tasks/t1/stdout", 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(f)
	f.Close()
	if string(b) != "my own output" {
		t.Fatalf("read %q", b)
	}
	refused := []struct {
		name string
		want error
	}{
		{"abs", syscall.ELOOP},             // a link, absolute, last component
		{"rel", syscall.ELOOP},             // a link climbing out
		{"middle/secret", syscall.ENOTDIR}, // a link in a middle component
		{"tasks/inside", syscall.ELOOP},    // even a link that stays inside
		{"zero", syscall.ELOOP},            // a link to a device
		{"../meta/secret", ErrPath},
		{"tasks/../../meta/secret", ErrPath},
		{"/etc/passwd", ErrPath},
		{"tasks//t1/stdout", ErrPath},
		{"tasks/t1/stdout\x00", ErrPath},
		{"fifo", ErrNotRegular}, // opened without blocking, then refused
		{"tasks", ErrNotRegular},
		{"missing", os.ErrNotExist},
	}
	if os.Getuid() == 0 {
		refused = append(refused, []struct {
			name string
			want error
		}{
			{"dev", ErrNotRegular},   // mknod'ed /dev/zero
			{"hard-root", ErrOwner},  // a hard link to root's file
			{"hard-other", ErrOwner}, // a hard link to another tenant's file
		}...)
	}
	for _, c := range refused {
		f, err := r.Open(c.name, 1<<20)
		if err == nil {
			b, _ := io.ReadAll(io.LimitReader(f, 100))
			f.Close()
			t.Errorf("Open(%q) read %q, want refused with %v", c.name, b, c.want)
			continue
		}
		if !errors.Is(err, c.want) {
			// A middle link is ELOOP to openat2 and ENOTDIR to the walk.
			if !(c.name == "middle/secret" && errors.Is(err, syscall.ELOOP)) {
				t.Errorf("Open(%q): %v, want %v", c.name, err, c.want)
			}
		}
	}
	if _, err := r.Open("big", 100); !errors.Is(err, ErrTooLarge) {
		t.Errorf("Open(big, 100): %v, want ErrTooLarge", err)
	}
}

func TestOpenDir(t *testing.T) {
	dir, _, _ := sandbox(t)
	r, err := OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, name := range []string{"", ".", "tasks/t1"} {
		d, err := r.OpenDir(name)
		if err != nil {
			t.Fatalf("OpenDir(%q): %v", name, err)
		}
		d.Close()
	}
	for _, name := range []string{"middle", "big", "fifo", "..", "tasks/t1/stdout"} {
		if d, err := r.OpenDir(name); err == nil {
			d.Close()
			t.Errorf("OpenDir(%q) opened, want refused", name)
		}
	}
}

func TestOpenRootBeneath(t *testing.T) {
	dir, _, uid := sandbox(t)
	base := filepath.Dir(dir)
	r, err := OpenRootBeneath(base, "sandbox/tasks/t1")
	if err != nil {
		t.Fatal(err)
	}
	if r.UID() != uid {
		t.Errorf("owner %d, want %d", r.UID(), uid)
	}
	r.Close()
	for _, rel := range []string{"sandbox/middle", "sandbox/../meta", "/tmp"} {
		if r, err := OpenRootBeneath(base, rel); err == nil {
			r.Close()
			t.Errorf("OpenRootBeneath(%q) opened, want refused", rel)
		}
	}
}

func TestValid(t *testing.T) {
	for _, ok := range []string{".", "a", "a/b", "a.b/..c"} {
		if err := Valid(ok); err != nil {
			t.Errorf("Valid(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"", "/a", "a/", "a//b", "./a", "a/./b", "..", "a/..", "a\x00b"} {
		if Valid(bad) == nil {
			t.Errorf("Valid(%q) accepted", bad)
		}
	}
}

// TestHostileLeaseDoesNotBlock: a task takes a write lease (fcntl
// F_SETLEASE) on a file of its sandbox, its own, and asks for it to be
// read. An open by another process then waits for the lease holder to
// give it up, up to /proc/sys/fs/lease-break-time (45 s by default), each
// time: the agent's reads of every team's logs would queue behind it.
// Opened non-blocking, the read is refused at once instead.
func TestHostileLeaseDoesNotBlock(t *testing.T) {
	dir, _, uid := sandbox(t)
	p := filepath.Join(dir, "leased")
	if err := os.WriteFile(p, []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(p, uid, uid); err != nil && uid != os.Getuid() {
		t.Fatal(err)
	}
	holder, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	if _, err := unix.FcntlInt(holder.Fd(), unix.F_SETLEASE, unix.F_WRLCK); err != nil {
		t.Skipf("no lease here: %v", err)
	}
	r, err := OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	done := make(chan error, 1)
	go func() {
		f, err := r.Open("leased", 0)
		if err == nil {
			f.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, unix.EWOULDBLOCK) {
			t.Fatalf("open of a leased file: %v, want EWOULDBLOCK", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the open of a file under the task's lease blocked")
	}
}
