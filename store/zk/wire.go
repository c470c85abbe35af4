package zk

import (
	"context"
	"errors"
	"fmt"
	"unsafe"

	"github.com/go-zookeeper/zk"
)

// Requests go-zookeeper v1.0.4 has no method for, and reads whose answer
// must be placed exactly among the notifications, go through the
// client's own request path: its unexported (*Conn).request, which
// encodes any struct of jute fields (int32, int64, string, []byte, bool)
// by reflection, queues it on the connection in order and decodes the
// reply. recv, when not nil, runs on the client's receive loop when the
// reply arrives, before the loop reads anything after it: every
// notification the server sent before the reply has been handed to the
// event callback by then, and none sent after it. Its two pointer
// arguments are the client's request and reply header (not used here).
//
// The pinned module version (go.mod) is the one this is written for;
// TestPersistentWatch* and the conformance suite exercise every request
// here against a real server.
//
//go:linkname connRequest github.com/go-zookeeper/zk.(*Conn).request
func connRequest(c *zk.Conn, opcode int32, req, res any, recv func(unsafe.Pointer, unsafe.Pointer, error)) (int64, error)

// ZooKeeper opcodes and modes used here beyond the client's own.
const (
	opExists       = 3
	opGetChildren2 = 12
	opAddWatch     = 106 // ZooKeeper 3.6+
	// addWatchModePersistentRecursive: one watch on a node and every
	// descendant, present or future, that stays set after it fires.
	addWatchModePersistentRecursive = 1
)

type addWatchRequest struct {
	Path string
	Mode int32
}

type pathRequest struct {
	Path  string
	Watch bool
}

type statResponse struct{ Stat zk.Stat }

type childrenResponse struct {
	Children []string
	Stat     zk.Stat
}

type emptyResponse struct{}

// ErrNoPersistentWatches: the server does not know AddWatch (before 3.6).
var ErrNoPersistentWatches = errors.New("zk store: the server has no persistent recursive watches (ZooKeeper 3.6+)")

// request sends one request and waits for its reply (or ctx); at, when
// not nil, runs on the receive loop at the reply (see connRequest).
func (s *Store) request(ctx context.Context, opcode int32, req, res any, at func()) error {
	var recv func(unsafe.Pointer, unsafe.Pointer, error)
	if at != nil {
		recv = func(unsafe.Pointer, unsafe.Pointer, error) { at() }
	}
	_, err := call(ctx, func() (struct{}, error) {
		_, err := connRequest(s.conn, opcode, req, res, recv)
		return struct{}{}, err
	})
	return err
}

// addWatch sets a persistent recursive watch on the znode z (present or
// not); at runs at its reply.
func (s *Store) addWatch(ctx context.Context, z string, at func()) error {
	err := s.request(ctx, opAddWatch, &addWatchRequest{Path: z, Mode: addWatchModePersistentRecursive}, &emptyResponse{}, at)
	if err != nil && ctx.Err() == nil && sentinelOf(err) == nil && !errors.Is(err, zk.ErrNoAuth) {
		return fmt.Errorf("%w: %w", ErrNoPersistentWatches, err) // "unknown error: -6" (unimplemented) from 3.5
	}
	return err
}

// exists reads the stat of znode z without a watch; at runs at its reply.
func (s *Store) exists(ctx context.Context, z string, at func()) (*zk.Stat, error) {
	res := &statResponse{}
	if err := s.request(ctx, opExists, &pathRequest{Path: z}, res, at); err != nil {
		return nil, err
	}
	return &res.Stat, nil
}

// children lists znode z's children without a watch; at runs at its reply.
func (s *Store) children(ctx context.Context, z string, at func()) ([]string, error) {
	res := &childrenResponse{}
	if err := s.request(ctx, opGetChildren2, &pathRequest{Path: z}, res, at); err != nil {
		return nil, err
	}
	return res.Children, nil
}
