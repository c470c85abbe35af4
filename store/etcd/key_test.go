package etcd

import (
	"slices"
	"testing"
)

func TestKeys(t *testing.T) {
	k := newKeys("/ej/")
	for _, c := range []struct{ path, key, children string }{
		{"/", "/ej/n/0/", "/ej/n/1/"},
		{"/a", "/ej/n/1/a", "/ej/n/2/a/"},
		{"/a/b.c/d", "/ej/n/3/a/b.c/d", "/ej/n/4/a/b.c/d/"},
	} {
		if c.path != "/" {
			if got := k.node(c.path); got != c.key {
				t.Errorf("node(%s) = %s, want %s", c.path, got, c.key)
			}
			if got := k.path(c.key); got != c.path {
				t.Errorf("path(%s) = %s, want %s", c.key, got, c.path)
			}
		}
		if got := k.children(c.path); got != c.children {
			t.Errorf("children(%s) = %s, want %s", c.path, got, c.children)
		}
	}
	if got := k.level("/a", 12); got != "/ej/n/12/a/" {
		t.Errorf("level(/a, 12) = %s", got)
	}
	for _, bad := range []string{"/ej/g", "/ej/n/", "/ej/n/3", "/other/n/1/a"} {
		if p := k.path(bad); p != "" {
			t.Errorf("path(%s) = %q, want none", bad, p)
		}
	}
}

func TestValues(t *testing.T) {
	for _, c := range []struct {
		v   int64
		val string
	}{{0, ""}, {1, "x"}, {1 << 40, "\x00\xff"}} {
		v, val, err := decode([]byte(encode(c.v, []byte(c.val))))
		if err != nil || v != c.v || string(val) != c.val {
			t.Errorf("round trip of %d %q = %d %q %v", c.v, c.val, v, val, err)
		}
	}
	if _, _, err := decode(nil); err == nil {
		t.Error("decode(nil) did not fail")
	}
}

func TestHoles(t *testing.T) {
	type r struct{ key, end string }
	got := func(ws []write) []r {
		var out []r
		for _, w := range ws {
			out = append(out, r{w.key, w.end})
		}
		return out
	}
	for _, c := range []struct {
		puts []string
		want []r
	}{
		{nil, []r{{"b", "f"}}},
		{[]string{"a", "g"}, []r{{"b", "f"}}},
		{[]string{"b"}, []r{{"b\x00", "f"}}},
		{[]string{"c", "d"}, []r{{"b", "c"}, {"c\x00", "d"}, {"d\x00", "f"}}},
		{[]string{"e\xff"}, []r{{"b", "e\xff"}, {"e\xff\x00", "f"}}},
	} {
		if g := got(holes("b", "f", c.puts)); !slices.Equal(g, c.want) {
			t.Errorf("holes(b, f, %q) = %q, want %q", c.puts, g, c.want)
		}
	}
	if end := prefixEnd("/ej/n/2/a/"); end != "/ej/n/2/a0" {
		t.Errorf("prefixEnd = %q", end)
	}
}
