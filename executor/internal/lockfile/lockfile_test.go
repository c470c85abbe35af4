package lockfile

import (
	"context"
	"errors"
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
