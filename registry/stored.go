package registry

import (
	"hash/maphash"

	"github.com/ejcloud/elasticjob/store"
)

// Stored is one stored record as a listing or a read hands it out, not yet
// decoded: where it is, the store's version of it and a fingerprint of its
// bytes. A reader that keeps a decoded copy compares fingerprints to
// decode only what changed (scheduler.Catalog's Sync); Decode reads it the
// way the registry's own reads do (the original's formats, names within a
// namespace made global in the all-namespaces view).
type Stored struct {
	r *Registry
	n store.Node
}

// sumSeed keys the fingerprints: one per process, so two reads of the same
// bytes have the same Sum whichever registry or term read them.
var sumSeed = maphash.MakeSeed()

func stored(r *Registry, n store.Node) Stored { return Stored{r: r, n: n} }

func storedAll(r *Registry, nodes []store.Node) []Stored {
	out := make([]Stored, len(nodes))
	for i, n := range nodes {
		out[i] = Stored{r: r, n: n}
	}
	return out
}

// Path is where the record is stored, as this view lists it.
func (s Stored) Path() string { return s.n.Path }

// Key is the last element of its path: a job's, app's or workflow's key
// (namespace-qualified in the all-namespaces view), a backfill's id.
func (s Stored) Key() string {
	p := s.n.Path
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] == '/' {
			return p[i+1:]
		}
	}
	return p
}

// Version is the store's version of the record (a compare-and-set's).
func (s Stored) Version() int64 { return s.n.Version }

// Sum is a fingerprint of the stored bytes: equal bytes, equal sums (in
// this process).
func (s Stored) Sum() uint64 { return maphash.Bytes(sumSeed, s.n.Value) }

// Decode decodes the record into v (a pointer). A value that does not
// decode is an error matching ErrDamaged (*DecodeError).
func (s Stored) Decode(v any) error { return decodeAt(s.n.Path, s.n.Value, v) }

// SetAside records the record as damaged when err (Decode's) says it does
// not decode, so the listing that skips it is seen (damage.go), and
// reports whether it did; any other error is the caller's.
func (s Stored) SetAside(err error) bool { return s.r.setAside(s.n, err) }
