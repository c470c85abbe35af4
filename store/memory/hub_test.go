package memory

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/ejcloud/elasticjob/store"
)

func TestHubOverflowGivesOneResync(t *testing.T) {
	h := NewHub(4)
	defer h.Close()
	ch, err := h.Watch(t.Context(), "/w")
	if err != nil {
		t.Fatal(err)
	}
	var evs []store.Event
	for i := range 100 {
		evs = append(evs, store.Event{Type: store.EventPut, Path: fmt.Sprintf("/w/%03d", i)})
	}
	h.Publish(evs) // one push overflows the queue of 4 whatever the pump did
	h.Publish([]store.Event{{Type: store.EventPut, Path: "/w/end"}})
	resyncs, delivered := 0, 0
	for ev := range ch {
		switch {
		case ev.Type == store.EventResync:
			if ev.Path != "/w" {
				t.Fatalf("resync path %q", ev.Path)
			}
			resyncs++
		case ev.Path == "/w/end":
			if resyncs != 1 || delivered > 4+cap(ch) {
				t.Fatalf("resyncs=%d delivered=%d", resyncs, delivered)
			}
			return
		default:
			delivered++
		}
	}
	t.Fatal("channel closed before the end marker")
}

func TestHubFiltersAndCloses(t *testing.T) {
	h := NewHub(0)
	ctx, cancel := context.WithCancel(t.Context())
	ch, _ := h.Watch(ctx, "/a")
	h.Publish([]store.Event{{Type: store.EventPut, Path: "/ab"}, {Type: store.EventPut, Path: "/a/b"}})
	if ev := <-ch; ev.Path != "/a/b" {
		t.Fatalf("got %+v, want /a/b", ev)
	}
	cancel()
	for range ch { // closed after cancel
	}
	h.Close()
	if _, err := h.Watch(t.Context(), "/"); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("Watch after Close: %v", err)
	}
}

func TestPaths(t *testing.T) {
	for _, p := range []string{"/", "/a", "/a/b", "/a.b/..c", "/a b"} {
		if err := store.ValidatePath(p); err != nil {
			t.Errorf("store.ValidatePath(%q) = %v", p, err)
		}
	}
	for _, p := range []string{"", "a", "/a/", "//", "/a//b", "/./a", "/a/..", "/a\x00"} {
		if err := store.ValidatePath(p); !errors.Is(err, store.ErrBadPath) {
			t.Errorf("store.ValidatePath(%q) = %v, want ErrBadPath", p, err)
		}
	}
	parents := map[string]string{"/": "/", "/a": "/", "/a/b": "/a", "/a/b/c": "/a/b"}
	for p, want := range parents {
		if got := store.Parent(p); got != want {
			t.Errorf("store.Parent(%q) = %q, want %q", p, got, want)
		}
	}
	under := []struct {
		p, root string
		want    bool
	}{{"/a", "/", true}, {"/a", "/a", true}, {"/a/b", "/a", true}, {"/ab", "/a", false}, {"/", "/a", false}}
	for _, c := range under {
		if got := store.Under(c.p, c.root); got != c.want {
			t.Errorf("store.Under(%q, %q) = %v", c.p, c.root, got)
		}
	}
}
