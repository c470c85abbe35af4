// Package store defines the hierarchical, versioned key-value store that holds
// the registry (apps, jobs) and the scheduler state (ready, running, failover,
// disable flags). Paths look like ZooKeeper paths ("/config/job/my_job").
//
// Implementations: store/memory (tests), store/sqlite (the embedded
// durable default), store/etcd (replicated) and store/zk (ZooKeeper). All of them pass the one
// conformance suite in store/storetest.
package store

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Sentinel errors. Implementations wrap them with the operation and path
// ("store: set /state/ready/x: version conflict"), so use errors.Is.
var (
	ErrNotFound = errors.New("store: not found")
	ErrExists   = errors.New("store: already exists")
	ErrConflict = errors.New("store: version conflict")
	ErrClosed   = errors.New("store: closed")
	ErrBadPath  = errors.New("store: bad path")
	// ErrUnavailable: the backend could not be reached (its connection or
	// session was lost). A write that fails with it may or may not have
	// been applied; a caller retries it as it would a timeout.
	ErrUnavailable = errors.New("store: unavailable")
)

// AnyVersion matches any version of an existing node.
const AnyVersion int64 = -1

// Node is one stored value. Version is 0 when the node is created and grows
// by one on every write of it (like a ZooKeeper znode's data version).
type Node struct {
	Path    string
	Value   []byte
	Version int64
}

// OpKind says what an Op does.
type OpKind int

const (
	OpCreate OpKind = iota + 1 // create; ErrExists if present
	OpPut                      // create or overwrite, any version
	OpSet                      // overwrite; ErrNotFound if missing, ErrConflict on version mismatch
	OpDelete                   // delete node and all descendants
	OpCheck                    // assert existence (and version); writes nothing
)

// String names an op kind for messages ("create", "set", ...).
func (k OpKind) String() string {
	switch k {
	case OpCreate:
		return "create"
	case OpPut:
		return "put"
	case OpSet:
		return "set"
	case OpDelete:
		return "delete"
	case OpCheck:
		return "check"
	}
	return fmt.Sprintf("op(%d)", int(k))
}

// Op is one step of an atomic Commit.
type Op struct {
	Kind    OpKind
	Path    string
	Value   []byte
	Version int64
}

// Create makes a new node; the commit fails with ErrExists if it is present.
func Create(path string, value []byte) Op { return Op{Kind: OpCreate, Path: path, Value: value} }

// Put creates or overwrites a node regardless of its version.
func Put(path string, value []byte) Op {
	return Op{Kind: OpPut, Path: path, Value: value, Version: AnyVersion}
}

// Set overwrites an existing node whose version equals version (or any
// version with AnyVersion).
func Set(path string, value []byte, version int64) Op {
	return Op{Kind: OpSet, Path: path, Value: value, Version: version}
}

// Delete removes a node and all its descendants. With AnyVersion a missing
// node is not an error; with a version >= 0 the node must exist with that
// version (ErrNotFound / ErrConflict otherwise).
func Delete(path string, version int64) Op { return Op{Kind: OpDelete, Path: path, Version: version} }

// Check asserts that a node exists with the given version (or exists at all
// with AnyVersion). It is how a leader fences its writes: every state write
// of a leader carries a Check of its leadership node.
func Check(path string, version int64) Op { return Op{Kind: OpCheck, Path: path, Version: version} }

// EventType says what changed.
type EventType int

const (
	EventPut    EventType = iota + 1 // node created or written
	EventDelete                      // node deleted
	EventResync                      // events may have been missed: re-read the watched subtree
)

// Event is a change notification. For EventResync, Path is the watched root.
type Event struct {
	Type    EventType
	Path    string
	Version int64
	// At is when this process learned of the change from the backend (the
	// notification's arrival), where the backend says; zero otherwise. It
	// is not compared by anything: a cache in front of the store reports
	// how long after it its copy reflected the change.
	At time.Time
	// HasValue: the event says the node's whole state after the change
	// (for EventPut, Value at Version), and Revision orders it among every
	// change of the store, so a consumer may apply it without reading the
	// node back (store.Revisioned backends: etcd, memory). ZooKeeper's
	// notifications carry no data: HasValue is false and Value nil there.
	HasValue bool
	Value    []byte
	// Revision is the store-wide revision of the commit that made the
	// change (etcd's mod_revision), 0 where the backend has none. The
	// changes of one commit share it; a later commit's are higher.
	Revision int64
}

// Revisioned is a KV whose every event carries the change
// (Event.HasValue, Event.Revision), and whose reads and commits say at
// which revision of the store they were made, in the events' order. A
// cache in front of it applies the events it is told instead of
// re-reading each changed node, and orders its own reads and commits
// against them by revision.
type Revisioned interface {
	// GetAt is Get, with the revision the read was made at (also when
	// the error wraps ErrNotFound: the node was absent then).
	GetAt(ctx context.Context, path string) (Node, int64, error)
	// CommitAt is Commit, with the revision of the commit's last
	// transaction: the state it left is the one of that revision (a
	// commit that wrote nothing gives a revision it held at).
	CommitAt(ctx context.Context, ops ...Op) (int64, error)
	// Revision is the store's current revision (a linearizable read).
	Revision(ctx context.Context) (int64, error)
}

// Reporter is a KV whose Commit can also say what it wrote: the events the
// commit produced, in order (each node written, ancestors made for it, or
// deleted, with its new version), as its watchers get them. A cache in
// front of the store uses them instead of reading back what a blind Put
// wrote.
type Reporter interface {
	CommitReport(ctx context.Context, ops ...Op) ([]Event, error)
}

// SubtreeReader is a KV that reads a whole subtree faster than List by
// List (ZooKeeper: without a listing of every leaf). Subtree returns path
// and every node below it, in no particular order (nothing if path is
// missing; for "/" the root itself is left out).
type SubtreeReader interface {
	Subtree(ctx context.Context, path string) ([]Node, error)
}

// Hint is a belief about the tree: whether path exists and, when it
// does and withChildren asks for them, the names of its children (in any
// order); known is false where there is no belief.
type Hint func(path string, withChildren bool) (exists bool, children []string, known bool)

// HintedReporter is a Reporter whose commits can be planned from a Hint
// instead of reading the store first (ZooKeeper, where a commit's Puts and
// Deletes need a round trip each to become creates, sets and deletes of
// subtrees). The store still checks every planned step in the commit, so
// a wrong belief costs a re-plan from real reads, never a wrong write.
type HintedReporter interface {
	CommitReportHinted(ctx context.Context, hint Hint, ops ...Op) ([]Event, error)
}

// Chainer is a KV that commits a chain of batches: each batch atomically,
// in order, each only if every batch before it was applied, without
// waiting for one batch's reply before sending the next where the store
// can (ZooKeeper: multis pipelined on the session). It is one commit cut
// into parts that are applied as a prefix: a failed batch fails the rest.
// chain names a node the store may write (a version bump per batch) to
// link the batches; it is created if missing, and nothing else should be
// kept there. applied is how many batches were applied (all of them when
// err is nil); events are each applied batch's (see Reporter); hint as in
// HintedReporter (nil: none).
type Chainer interface {
	CommitChain(ctx context.Context, hint Hint, chain string, batches [][]Op) (applied int, events [][]Event, err error)
}

// KV is the store interface. Paths are absolute, slash-separated, with no
// trailing slash, no empty segments, no NUL bytes and no "." or ".."
// segments (ErrBadPath otherwise); "/" is the root, which always exists and
// cannot be written or deleted. nil and empty values are equal. Create/Put make missing ancestors as empty nodes (value nil, version
// 0), like `mkdir -p`.
//
// Every acknowledged Commit is durable for the implementation's durability
// model (the SQLite store survives kill -9 of the process).
type KV interface {
	// Get returns the node at path, or an error wrapping ErrNotFound.
	Get(ctx context.Context, path string) (Node, error)
	// Children returns the names (last segment) of path's direct children,
	// sorted ascending. A missing path has no children (nil, nil).
	Children(ctx context.Context, path string) ([]string, error)
	// List returns path's direct children with their values, sorted by path.
	// A missing path gives (nil, nil).
	List(ctx context.Context, path string) ([]Node, error)
	// Commit applies ops atomically, in order: all of them or none. The
	// error of the first failing op is returned, wrapping ErrNotFound,
	// ErrExists or ErrConflict.
	Commit(ctx context.Context, ops ...Op) error
	// Watch reports changes of path and all its descendants, made by this
	// process or by any other writer of the same store, until ctx is done
	// (then the channel is closed, as it is by Close). Each path's events
	// arrive in commit order; events of different paths may interleave
	// differently from commit order (ZooKeeper's per-node watches cannot
	// order the nodes of one multi), so consumers treat an event as "re-read
	// this path". Implicitly created ancestors are reported as EventPut; a
	// recursive delete reports each node after its descendants. A failed
	// Commit reports nothing. A consumer that falls behind, or a lost
	// connection, yields one EventResync instead of the missed events, and
	// events continue after it. Events made before Watch returns are not
	// reported.
	Watch(ctx context.Context, path string) (<-chan Event, error)
	// Close releases resources; later calls fail with ErrClosed.
	Close() error
}
