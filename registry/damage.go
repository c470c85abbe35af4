package registry

import (
	"errors"
	"hash/maphash"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/ejcloud/elasticjob/namespace"
	"github.com/ejcloud/elasticjob/store"
)

// A stored value that does not decode (a node an older version wrote, a
// hand edit in zkCli, a half-written value) is set aside: a listing skips
// it and goes on, so no single value can stop the scheduler or the API.
// A read of that one entry still fails, with a *DecodeError. The Damage
// tracker remembers what was set aside, logs each entry once (again when
// its content changes), and is what the metric and the API's list of
// damaged entries read (see also Scan, which walks the whole tree).

// ErrDamaged is matched (errors.Is) by every error of a stored value that
// does not decode.
var ErrDamaged = errors.New("registry: damaged entry")

// DecodeError is a stored value that does not decode: its path and why.
type DecodeError struct {
	Path string
	Err  error
}

func (e *DecodeError) Error() string { return "registry: decode " + e.Path + ": " + e.Err.Error() }

// Unwrap makes the error match both ErrDamaged and the decoder's error.
func (e *DecodeError) Unwrap() []error { return []error{ErrDamaged, e.Err} }

// decodeErr is the error of the value at p that did not decode.
func decodeErr(p string, err error) error { return &DecodeError{Path: p, Err: err} }

// Damaged is one entry set aside.
type Damaged struct {
	// Path is the entry's path in the store (a namespace's entries lie
	// under /namespaces/{ns}), as ejctl registry rm and put take it.
	Path string `json:"path"`
	// Namespace is the namespace whose tree holds it ("" for the
	// scheduler's own entries: namespace records, tokens, owners).
	Namespace string `json:"namespace"`
	// Subtree is its kind of record: config/app, state/ready, secrets, ...
	Subtree string `json:"subtree"`
	Error   string `json:"error"`
	// Size is the stored value's length in bytes.
	Size int `json:"size"`
}

// Damage tracks the entries set aside. Its methods are safe for
// concurrent use; a nil *Damage tracks nothing.
type Damage struct {
	log  *slog.Logger
	seed maphash.Seed
	n    atomic.Int64
	mu   sync.Mutex
	m    map[string]damageEntry
}

type damageEntry struct {
	d   Damaged
	sum uint64
}

// NewDamage returns an empty tracker logging to log (nil: discard).
func NewDamage(log *slog.Logger) *Damage {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Damage{log: log, seed: maphash.MakeSeed(), m: map[string]damageEntry{}}
}

// Note records the value at path (a store path) that did not decode; the
// first time, and whenever its content changes, it is logged.
func (d *Damage) Note(path string, value []byte, err error) {
	if d == nil {
		return
	}
	sum := maphash.Bytes(d.seed, value)
	msg := decodeMessage(err)
	d.mu.Lock()
	old, seen := d.m[path]
	e := damageEntry{sum: sum, d: Damaged{Path: path, Namespace: NamespaceOfStorePath(path), Subtree: SubtreeOf(path), Error: msg, Size: len(value)}}
	d.m[path] = e
	d.n.Store(int64(len(d.m)))
	d.mu.Unlock()
	if !seen || old.sum != sum {
		d.log.Error("registry: a stored value does not decode; it is set aside (the rest keeps scheduling): repair it with ejctl registry put, or remove it with ejctl registry rm",
			"path", path, "subtree", e.d.Subtree, "namespace", e.d.Namespace, "size", len(value), "err", msg)
	}
}

// decodeMessage is why a value does not decode, without its path.
func decodeMessage(err error) string {
	var de *DecodeError
	if errors.As(err, &de) {
		return de.Err.Error()
	}
	return err.Error()
}

// Forget drops path (and anything tracked below it): it was repaired or
// removed.
func (d *Damage) Forget(path string) {
	if d == nil || d.n.Load() == 0 {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for p := range d.m {
		if p == path || strings.HasPrefix(p, path+"/") {
			delete(d.m, p)
		}
	}
	d.n.Store(int64(len(d.m)))
}

// Len is how many entries are set aside.
func (d *Damage) Len() int {
	if d == nil {
		return 0
	}
	return int(d.n.Load())
}

// List returns the entries set aside, by path.
func (d *Damage) List() []Damaged {
	if d == nil {
		return nil
	}
	d.mu.Lock()
	out := make([]Damaged, 0, len(d.m))
	for _, e := range d.m {
		out = append(out, e.d)
	}
	d.mu.Unlock()
	slices.SortFunc(out, func(a, b Damaged) int { return strings.Compare(a.Path, b.Path) })
	return out
}

// Counts is how many entries are set aside by subtree.
func (d *Damage) Counts() map[string]int {
	out := map[string]int{}
	for _, e := range d.List() {
		out[e.Subtree]++
	}
	return out
}

// paths are the tracked store paths.
func (d *Damage) paths() []string {
	var out []string
	for _, e := range d.List() {
		out = append(out, e.Path)
	}
	return out
}

// setAside records the node a listing skips when err says its value does
// not decode, and reports whether it does (any other error is the
// caller's). n's path is as this view lists it.
func (r *Registry) setAside(n store.Node, err error) bool {
	if err == nil || !errors.Is(err, ErrDamaged) {
		return false
	}
	r.damage.Note(r.storePath(n.Path), n.Value, err)
	return true
}

// setAsideAt is setAside for a node read from the store itself.
func (r *Registry) setAsideAt(n store.Node, err error) bool {
	if err == nil || !errors.Is(err, ErrDamaged) {
		return false
	}
	r.damage.Note(n.Path, n.Value, err)
	return true
}

// storePath maps a path of this view to the store's.
func (r *Registry) storePath(p string) string {
	switch r.ns {
	case "":
		if sp, err := physical(p); err == nil {
			return sp
		}
		return p
	case namespace.Default:
		return p
	}
	return scoped(r.ns, p)
}

// NamespaceOfStorePath is the namespace whose tree holds a store path:
// the default one for the namespaced roots at the top, "" for the
// scheduler's own entries.
func NamespaceOfStorePath(p string) string {
	if rest, ok := strings.CutPrefix(p, NamespacesPath+"/"); ok {
		ns, sub, found := strings.Cut(rest, "/")
		if !found {
			return "" // the namespace's record: the scheduler's
		}
		if _, ok := rootUnder("/" + sub); ok {
			return ns
		}
		return ""
	}
	if rest, ok := strings.CutPrefix(p, secretsPath+"/"); ok {
		ns, _, _ := strings.Cut(rest, "/")
		return ns
	}
	if rest, ok := strings.CutPrefix(p, calendarsPath+"/"); ok {
		ns, _, _ := strings.Cut(rest, "/")
		return ns
	}
	if _, ok := rootUnder(p); ok {
		return namespace.Default
	}
	return ""
}

// SubtreeOf names the kind of record a store path holds (the metric's
// label): the namespaced root it lies under ("config/app",
// "state/running"), or else its first segments ("namespaces", "secrets",
// "auth/tokens", "kube/owners").
func SubtreeOf(p string) string {
	if rest, ok := strings.CutPrefix(p, NamespacesPath+"/"); ok {
		_, sub, found := strings.Cut(rest, "/")
		if !found {
			return "namespaces"
		}
		p = "/" + sub
	}
	best := ""
	for _, k := range scanKinds {
		if (strings.HasPrefix(p, k.root+"/")) && len(k.root) > len(best) {
			best = k.root
		}
	}
	if best != "" {
		return strings.TrimPrefix(best, "/")
	}
	segs := strings.SplitN(strings.TrimPrefix(p, "/"), "/", 3)
	if len(segs) > 2 {
		segs = segs[:2]
	}
	return strings.Join(segs, "/")
}
