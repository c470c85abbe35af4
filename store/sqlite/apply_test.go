package sqlite

import (
	"testing"

	"github.com/ejcloud/elasticjob/store"
)

func TestIndependent(t *testing.T) {
	for _, c := range []struct {
		paths []string
		want  bool
	}{
		{[]string{"/a"}, true},
		{[]string{"/a", "/ab", "/a-b", "/b/c"}, true},
		{[]string{"/a/x", "/a/y"}, true}, // a shared ancestor no op names
		{[]string{"/a", "/a"}, false},
		{[]string{"/a/b/c", "/a"}, false},
		{[]string{"/a", "/a/b"}, false},
		{[]string{"/b", "/"}, false},
	} {
		ops := make([]store.Op, len(c.paths))
		for i, p := range c.paths {
			ops[i] = store.Put(p, nil)
		}
		if got := independent(ops); got != c.want {
			t.Errorf("independent(%v) = %v, want %v", c.paths, got, c.want)
		}
	}
}
