package store

import (
	"errors"
	"testing"
)

func TestPaths(t *testing.T) {
	for _, ok := range []string{"/", "/a", "/a/b.c", "/a/..b"} {
		if err := ValidatePath(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "a", "/a/", "//", "/a//b", "/a/./b", "/a/..", "/a\x00"} {
		if err := ValidatePath(bad); !errors.Is(err, ErrBadPath) {
			t.Errorf("%q accepted", bad)
		}
	}
	if Parent("/a/b") != "/a" || Parent("/a") != "/" || Parent("/") != "/" || Base("/a/b") != "b" || Join("/", "a") != "/a" || Join("/a", "b") != "/a/b" {
		t.Error("Parent/Base/Join")
	}
	if !Under("/a/b", "/a") || Under("/ab", "/a") || !Under("/x", "/") || !Under("/a", "/a") {
		t.Error("Under")
	}
}
