package diskreserve_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/ejcloud/elasticjob/internal/diskreserve"
	"github.com/ejcloud/elasticjob/store"
	"github.com/ejcloud/elasticjob/store/sqlite"
)

// smallFS mounts a tmpfs of size MiB for the test and unmounts it after
// (root only: the test skips otherwise).
func smallFS(t *testing.T, size int) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a small file system to fill needs root")
	}
	dir := filepath.Join(t.TempDir(), "fs")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%dm,mode=0700", size)); err != nil {
		t.Skipf("mount a tmpfs: %v", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// fill writes into a "sandbox" of dir until the file system is full, as a
// task filling its sandbox does.
func fill(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, "sandbox"), 0o700); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(dir, "sandbox", "fill"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			break
		}
	}
	// What is left is less than a block.
	if free, _ := diskreserve.Free(dir); free >= 64<<10 {
		t.Fatalf("%d bytes still free after the fill", free)
	}
}

// commits writes n entries of 4 KiB each: the first error.
func commits(kv store.KV, n int) error {
	for i := range n {
		if err := kv.Commit(context.Background(), store.Put(fmt.Sprintf("/state/e%d", i), []byte(strings.Repeat("x", 4096)))); err != nil {
			return err
		}
	}
	return nil
}

// TestRegistryCommitsWhenTheDiskIsFull: a task fills the file system the
// registry shares with the sandboxes; the registry's commits go on, on the
// space the reserve gives back, and the disk watcher is asked for a pass.
// Without the reserve the same commits fail.
func TestRegistryCommitsWhenTheDiskIsFull(t *testing.T) {
	for _, reserved := range []bool{true, false} {
		t.Run(fmt.Sprintf("reserve=%v", reserved), func(t *testing.T) {
			dir := smallFS(t, 16)
			var res *diskreserve.Reserve
			released := 0
			opts := sqlite.Options{Sync: sqlite.SyncFull}
			if reserved {
				var err error
				if res, err = diskreserve.Open(filepath.Join(dir, diskreserve.FileName), 4<<20, nil); err != nil {
					t.Fatal(err)
				}
				res.Released = func() { released++ }
				opts.OnFull = res.Release
				st, err := os.Lstat(filepath.Join(dir, diskreserve.FileName))
				if err != nil || st.Mode().Perm() != 0o600 || st.Sys().(*syscall.Stat_t).Blocks*512 < 4<<20 {
					t.Fatalf("the reserve: %v %v", st, err)
				}
			}
			kv, err := sqlite.Open(context.Background(), filepath.Join(dir, "registry.db"), opts)
			if err != nil {
				t.Fatal(err)
			}
			defer kv.Close()
			if err := commits(kv, 10); err != nil {
				t.Fatal(err)
			}
			fill(t, dir)
			err = commits(kv, 100)
			if !reserved {
				if err == nil {
					t.Fatal("commits went on on a full disk without a reserve: the test shows nothing")
				}
				return
			}
			if err != nil {
				t.Fatalf("a commit on the full disk, with the reserve: %v", err)
			}
			if res.Held() || released != 1 {
				t.Fatalf("the reserve: held %v, released %d times", res.Held(), released)
			}
			// Space returns (the watcher stopped the filler, the collector
			// took its sandbox): the reserve is made again, not before.
			res.Check(1<<20, 1<<20, 0)
			if res.Held() {
				t.Fatal("the reserve was made again on a disk that cannot hold it")
			}
			if err := os.Remove(filepath.Join(dir, "sandbox", "fill")); err != nil {
				t.Fatal(err)
			}
			free, _ := diskreserve.Free(dir)
			res.Check(free, 1<<20, 0)
			if !res.Held() {
				t.Fatalf("the reserve was not made again with %d MB free", free>>20)
			}
			// A file system under the floor gives it back without a failed commit.
			res.Check(0, 1<<20, 1<<20)
			if res.Held() || released != 2 {
				t.Fatalf("under the floor: held %v, released %d", res.Held(), released)
			}
		})
	}
}

// TestReserveFollowsNoLink: a link planted where the reserve goes is not
// followed (the data directory is root's; this keeps a mistake from
// truncating what it names).
func TestReserveFollowsNoLink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "precious")
	if err := os.WriteFile(target, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(dir, diskreserve.FileName)); err != nil {
		t.Fatal(err)
	}
	if _, err := diskreserve.Open(filepath.Join(dir, diskreserve.FileName), 1<<20, nil); err == nil {
		t.Fatal("the reserve followed a link")
	}
	if b, _ := os.ReadFile(target); string(b) != "keep" {
		t.Fatalf("the link's target is now %q", b)
	}
}
