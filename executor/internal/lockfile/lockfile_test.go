package lockfile

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestExclusive(t *testing.T) {
	p := filepath.Join(t.TempDir(), "lock")
	l, err := Acquire(t.Context(), p)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel() // a second holder must wait, so with a dead context it fails
	if _, err := Acquire(ctx, p); !errors.Is(err, context.Canceled) {
		t.Fatalf("second lock: %v", err)
	}
	l.Unlock()
	l2, err := Acquire(ctx, p)
	if err != nil {
		t.Fatalf("after unlock: %v", err)
	}
	l2.Unlock()
}

func TestSharedAndTry(t *testing.T) {
	p := filepath.Join(t.TempDir(), "use")
	a, err := AcquireShared(t.Context(), p)
	if err != nil {
		t.Fatal(err)
	}
	b, err := AcquireShared(t.Context(), p)
	if err != nil {
		t.Fatalf("two shared holders: %v", err)
	}
	if _, ok, err := TryAcquire(p); ok || err != nil {
		t.Fatalf("exclusive beside shared holders: ok=%v err=%v", ok, err)
	}
	a.Unlock()
	b.Unlock()
	l, ok, err := TryAcquire(p)
	if !ok || err != nil {
		t.Fatalf("exclusive once free: ok=%v err=%v", ok, err)
	}
	if !l.Current(p) {
		t.Fatal("lock not current")
	}
	if err := os.Rename(p, p+".old"); err != nil {
		t.Fatal(err)
	}
	if l.Current(p) {
		t.Fatal("lock still current after its file was moved away")
	}
	l.Unlock()
}
