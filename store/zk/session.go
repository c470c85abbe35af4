package zk

import (
	"github.com/go-zookeeper/zk"
)

// Session gives what leader election needs from the store's ZooKeeper
// session: the connection itself (election nodes are ephemeral nodes of
// this same session, so a write fenced on them fails the moment the
// session that holds them is gone), where the store's tree lives, the ACL
// it creates nodes with, and the session's state changes.
type Session struct{ s *Store }

// Session returns the store's session handle.
func (s *Store) Session() Session { return Session{s} }

// Conn is the store's ZooKeeper connection.
func (h Session) Conn() *zk.Conn { return h.s.conn }

// ZPath maps a store path to its znode ("/ha" → "/elasticjob-cloud/ha").
func (h Session) ZPath(p string) string { return h.s.zpath(p) }

// ACL is the ACL the store creates nodes with.
func (h Session) ACL() []zk.ACL { return h.s.acl }

// OnState registers f for the connection's session events (connecting,
// connected, has-session, disconnected, expired). f runs on the client's
// receive loop, in order, and must not block. The returned func removes it.
func (h Session) OnState(f func(zk.Event)) (remove func()) {
	s := h.s
	s.mu.Lock()
	s.nextListener++
	id := s.nextListener
	if s.listeners == nil {
		s.listeners = map[int]func(zk.Event){}
	}
	s.listeners[id] = f
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		delete(s.listeners, id)
		s.mu.Unlock()
	}
}
