// Package diskreserve keeps space on a file system for the scheduler's own
// writes: a file of preallocated blocks in the data directory that the
// scheduler gives back the moment the file system is full, so that the
// registry's next commit finds room even when a task has filled every
// block the sandboxes share with it, and makes again once space returns.
//
// Freed blocks go to whoever writes first. The registry's commit that hit
// the full disk retries at once (store/sqlite Options.OnFull), and the
// release asks for the disk watcher's pass, which stops the largest
// sandbox's executor; a filler that is faster than both can still take
// the freed space (docs/tenancy.md, "Not defended").
package diskreserve

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"syscall"
	"time"
)

// FileName is the reserve's name in the data directory.
const FileName = "disk-reserve"

// Reserve is one reserve file.
type Reserve struct {
	path string
	size int64
	log  *slog.Logger
	// Released, when set, is told each time the reserve gives its space
	// back (the embedded agent's disk watcher runs a pass at once).
	Released func()

	mu   sync.Mutex
	held bool
}

// Open makes (or takes back) the reserve file at path with size bytes of
// allocated blocks, mode 0600, never following a link. A file system that
// has not size bytes free now gets it later (Keep).
func Open(path string, size int64, log *slog.Logger) (*Reserve, error) {
	if size <= 0 {
		return nil, fmt.Errorf("disk reserve %s: size %d must be positive", path, size)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := &Reserve{path: path, size: size, log: log}
	if err := r.make(); err != nil {
		if !errors.Is(err, syscall.ENOSPC) {
			return nil, err
		}
		log.Error("DISK FULL: the disk reserve could not be made; it is made once space returns", "path", path, "size_mb", size>>20)
	}
	return r, nil
}

// Held reports whether the reserve holds its space now.
func (r *Reserve) Held() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.held
}

// make allocates the file's blocks (fallocate; written with zeros where
// the file system cannot) and syncs it.
func (r *Reserve) make() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.held {
		return nil
	}
	f, err := os.OpenFile(r.path, os.O_WRONLY|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return fmt.Errorf("disk reserve %s: %w", r.path, err)
	}
	defer f.Close()
	if err := f.Chmod(0o600); err != nil {
		return fmt.Errorf("disk reserve %s: %w", r.path, err)
	}
	err = allocate(f, r.size)
	if errors.Is(err, errors.ErrUnsupported) || errors.Is(err, syscall.EOPNOTSUPP) || errors.Is(err, syscall.ENOSYS) {
		err = writeZeros(f, r.size)
	}
	if err == nil {
		err = f.Sync()
	}
	if err != nil {
		_ = os.Remove(r.path) // a part-made reserve holds space it would never give back on time
		return fmt.Errorf("disk reserve %s: %w", r.path, err)
	}
	r.held = true
	return nil
}

func writeZeros(f *os.File, size int64) error {
	buf := make([]byte, 1<<20)
	for off := int64(0); off < size; off += int64(len(buf)) {
		n := min(int64(len(buf)), size-off)
		if _, err := f.WriteAt(buf[:n], off); err != nil {
			return err
		}
	}
	return nil
}

// Release gives the reserve's space back to the file system; true when it
// held any. A store whose commit found the disk full calls it and tries
// again (store/sqlite Options.OnFull).
func (r *Reserve) Release() bool {
	r.mu.Lock()
	was := r.held
	if was {
		if err := os.Remove(r.path); err != nil && !errors.Is(err, os.ErrNotExist) {
			r.log.Error("the disk reserve could not be released", "path", r.path, "err", err)
			r.mu.Unlock()
			return false
		}
		r.held = false
	}
	r.mu.Unlock()
	if was {
		r.log.Error("DISK FULL under the scheduler's data: released the disk reserve for the registry's commits",
			"path", r.path, "size_mb", r.size>>20)
		if r.Released != nil {
			r.Released()
		}
	}
	return was
}

// Check is one look at the file system (free is what unprivileged
// writers may still use): a reserve given back is made again once free
// space covers it and keep besides, so that making it never brings the
// disk under the headroom the disk watcher keeps; a file system with less
// than floor free makes the reserve give its space back without waiting
// for a commit to fail.
func (r *Reserve) Check(free, keep, floor int64) {
	switch held := r.Held(); {
	case held && free < floor:
		r.Release()
	case !held && free >= r.size+keep:
		if err := r.make(); err != nil {
			r.log.Warn("the disk reserve could not be made again", "path", r.path, "err", err)
			return
		}
		r.log.Info("the disk reserve is made again", "path", r.path, "size_mb", r.size>>20, "free_mb", free>>20)
	}
}

// Keep runs Check every interval until stop is closed, with the file
// system's free space from free.
func (r *Reserve) Keep(stop <-chan struct{}, interval time.Duration, keep, floor int64, free func() (int64, error)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		if f, err := free(); err == nil {
			r.Check(f, keep, floor)
		}
	}
}

// Free is the space unprivileged writers may still use on path's file
// system.
func Free(path string) (int64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return 0, fmt.Errorf("statfs %s: %w", path, err)
	}
	return int64(st.Bavail) * int64(st.Bsize), nil
}
