package lockfile

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// Lock is a held lock; Unlock releases it.
type Lock struct{ f *os.File }

// Acquire creates path if needed and takes an exclusive lock on it, waiting
// until ctx ends. flock locks belong to the open file description, so two
// goroutines of one process exclude each other as well as two processes.
func Acquire(ctx context.Context, path string) (*Lock, error) {
	return acquire(ctx, path, syscall.LOCK_EX)
}

// AcquireShared takes a shared lock on path (created if needed): any
// number of shared holders, but no exclusive one, waiting until ctx ends.
func AcquireShared(ctx context.Context, path string) (*Lock, error) {
	return acquire(ctx, path, syscall.LOCK_SH)
}

// TryAcquire takes the exclusive lock on path if nobody holds a lock on
// it; ok is false when somebody does.
func TryAcquire(path string) (l *Lock, ok bool, err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, false, fmt.Errorf("lock %s: %w", path, err)
	}
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if err == nil {
		return &Lock{f: f}, true, nil
	}
	f.Close()
	if errors.Is(err, syscall.EWOULDBLOCK) || errors.Is(err, syscall.EINTR) {
		return nil, false, nil
	}
	return nil, false, fmt.Errorf("lock %s: %w", path, err)
}

func acquire(ctx context.Context, path string, how int) (*Lock, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	wait := time.Millisecond
	for {
		err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		if err == nil {
			return &Lock{f: f}, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, ctx.Err())
		case <-t.C:
		}
		wait = min(wait*2, 100*time.Millisecond)
	}
}

// Current reports whether the locked file is still the one at path (not
// removed or replaced since it was opened).
func (l *Lock) Current(path string) bool {
	a, err := l.f.Stat()
	if err != nil {
		return false
	}
	b, err := os.Stat(path)
	return err == nil && os.SameFile(a, b)
}

// Unlock releases the lock. Closing the descriptor drops the flock.
func (l *Lock) Unlock() error { return l.f.Close() }
